/** Enqueue and replay: writing new jobs, idempotent on (type, id). */
import type { Job, JobInput } from '../../domain/job.js';
import type { JobType } from '../../domain/job-type.js';
import { newJob, newJobId } from '../../domain/new-job.js';
import { jobToItem } from '../../store/items.js';
import { putNewJob } from '../../store/job-writes.js';
import { assertJobFitsTarget } from '../../targets/eventbridge.js';
import { jobKey, queuedIndexKeys } from '../../store/keys.js';
import type { QueueContext } from '../context.js';
import { enqueueCorrelatedJob } from './correlation-keys.js';
import { enqueueDebouncedJob } from './debounce.js';
import { enqueueDedupedJob } from './dedup.js';
import { assertDedupWindowFits } from '../../domain/dedup-debounce.js';
import { writeLaneEntry } from '../lanes/bucket-directory.js';
import { requireJob } from '../read-job.js';
import { sameJobOrConflict } from './same-job.js';
import { inSpan, SpanKind } from '../../domain/spans.js';
import { writeTagEntries } from './tag-entries.js';

/**
 * Enqueues a job, idempotent on (type, id): the same body again returns the
 * stored job with `created: false`; a different body is a ConflictError, and
 * so is a correlation key another unfinished job of its type holds. The job is due at the
 * first instant inside its time windows at or after the requested `run_after`
 * (or now). An enqueue with a dedup key whose window is open answers that window's job, and one with a debounce
 * key whose job waits folds into it, both with `created: false` (queue/enqueue/dedup.ts, queue/enqueue/debounce.ts).
 */
export function enqueueJob(ctx: QueueContext, jobType: JobType, id: string, input: JobInput): Promise<{ job: Job; created: boolean }> {
  const attributes = { 'djq.job.type': jobType.name, 'djq.job.id': id };
  // Where an SDK records the enqueue's span, the job's attempts are its children.
  return inSpan('djq enqueue', input.traceparent, { kind: SpanKind.PRODUCER, attributes }, (recorded) =>
    writeNewJob(ctx, jobType, id, recorded === undefined ? input : { ...input, traceparent: recorded }),
  );
}

async function writeNewJob(ctx: QueueContext, jobType: JobType, id: string, input: JobInput): Promise<{ job: Job; created: boolean }> {
  const nowMs = ctx.nowMs();
  const job = newJob(jobType, id, input, nowMs);
  assertJobFitsTarget(jobType, job);
  if (job.dedup) assertDedupWindowFits(job.dedup, ctx.settings.retentionDays);
  // Before the job: a job that exists is always listed by its tags. A debounced enqueue writes them only once it
  // knows it makes a job, since one that folds keeps none of its tags.
  if (job.tags !== undefined && !job.debounce) await writeTagEntries(ctx, job);
  const item = { ...jobKey(job.type, id), ...queuedIndexKeys(ctx.settings, job, job.runAfterMs, nowMs), ...jobToItem(job) };
  return writeLaneEntry(ctx, item.gsi1pk, async () => {
    if (job.correlationKey !== undefined) return enqueueCorrelatedJob(ctx, job, item, job.correlationKey);
    if (job.dedup) return enqueueDedupedJob(ctx, job, item, job.dedup);
    if (job.debounce) return enqueueDebouncedJob(ctx, jobType, job, item, job.debounce);
    const written = await putNewJob(ctx, item);
    return written.ok ? { job, created: true } : sameJobOrConflict(ctx, job, written.existing);
  });
}

/** What a replay of `original` is enqueued with: its data, priority, weight, throttle key, time windows and tags, due now. */
export function replayInputOf(original: Job): JobInput {
  return {
    data: original.data,
    priority: original.priority,
    weight: original.weight,
    ...(original.throttleKey !== undefined ? { throttleKey: original.throttleKey } : {}),
    ...(original.timeWindows ? { timeWindows: original.timeWindows } : {}),
    ...(original.tags !== undefined ? { tags: original.tags } : {}),
  };
}

/** A new job with the same data, priority, weight, time windows and tags, due now (or when its windows next open). */
export async function replayJob(ctx: QueueContext, jobType: JobType, id: string): Promise<Job> {
  const original = await requireJob(ctx, jobType.name, id);
  const { job } = await enqueueJob(ctx, jobType, newJobId(ctx.nowMs()), replayInputOf(original));
  return job;
}
