/** `PATCH /v1/jobs/{type}/{id}`: moving a waiting job, or changing its priority or expiry. */
import { ConflictError, NotFoundError } from '../../domain/errors.js';
import { appendChange, planJobChange, type JobChangeInput } from '../../domain/job-changes.js';
import type { Job } from '../../domain/job.js';
import type { JobType } from '../../domain/job-type.js';
import { changeQueuedJobParams } from '../../store/job-change-writes.js';
import { updateJob } from '../../store/job-writes.js';
import { itemToJob } from '../../store/items.js';
import { jobKey, queuedIndexKeys, type IndexKey } from '../../store/keys.js';
import { getItem } from '../../store/send.js';
import type { QueueContext } from '../context.js';
import { writeLaneEntry } from '../lanes/bucket-directory.js';

/** A change that keeps meeting other writes to the job while it stays queued is tried this often. */
const CHANGE_TRIES = 5;

/** The job when it exists and is queued; otherwise the error a change of it answers. */
function queuedJob(job: Job | undefined, type: string, id: string): Job {
  if (!job) throw new NotFoundError(`job "${id}" of type "${type}" does not exist`);
  if (job.status !== 'queued') throw new ConflictError(`job "${id}" is ${job.status}; only a queued job can be changed`);
  return job;
}

async function readQueuedJob(ctx: QueueContext, type: string, id: string) {
  const item = await getItem(ctx, jobKey(type, id), { consistentRead: true });
  const job = queuedJob(item && itemToJob(item), type, id);
  return { job, index: { gsi1pk: String(item?.gsi1pk), gsi1sk: String(item?.gsi1sk) } };
}

/**
 * Writes a queued job with `write`, given the due-index entry it takes when it moves to `runAfterMs` (undefined
 * when it stays where it is), that entry's lane bucket recorded first so a poller walks there (directory.ts). A
 * `PATCH` and a debounced enqueue move jobs so.
 */
export function writeMovingQueuedJob<T>(ctx: QueueContext, job: Job, runAfterMs: number, nowMs: number, write: (index: IndexKey | undefined) => Promise<T>): Promise<T> {
  if (runAfterMs === job.runAfterMs) return write(undefined);
  const index = queuedIndexKeys(ctx.settings, job, runAfterMs, nowMs);
  return writeLaneEntry(ctx, index.gsi1pk, () => write(index));
}

/**
 * Changes a queued job's run_after, priority or expires_at, recording who (`by`) changed what, and when. The
 * job moves in the due index in the same conditional write (see changeQueuedJobParams): a claim racing it
 * either wins, and the change is a ConflictError naming the job's status, or finds the job as changed. A job
 * that is not queued is a ConflictError, one that does not exist a NotFoundError; a change of nothing
 * answers the job as it is.
 */
export async function changeQueuedJob(ctx: QueueContext, jobType: JobType, id: string, input: JobChangeInput, by: string): Promise<Job> {
  for (let tries = 1; ; tries++) {
    const seen = await readQueuedJob(ctx, jobType.name, id);
    const nowMs = ctx.nowMs();
    const planned = planJobChange(seen.job, jobType, input, by, nowMs);
    if (!planned) return seen.job;
    const result = await writeMovingQueuedJob(ctx, seen.job, planned.runAfterMs, nowMs, (index) =>
      updateJob(ctx, changeQueuedJobParams(seen, { nowMs, ...planned, index, changes: appendChange(seen.job, planned.record) })),
    );
    if (result.ok) return result.job;
    queuedJob(result.current, jobType.name, id);
    if (tries >= CHANGE_TRIES) throw new ConflictError(`job "${id}" kept changing while this change was applied; try again`);
  }
}
