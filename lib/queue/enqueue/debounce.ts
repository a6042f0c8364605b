/**
 * Debounce: enqueues of a type with one debounce key, while the job they made waits unstarted, fold into that
 * job: its data replaced by theirs, its run_after moved to `delay_s` after the latest of them, never past
 * `max_wait_s` after its own enqueue. A pointer item (`DEBOUNCE#<type>#<key>`), written with the job in one
 * transaction, names the job; once that job has been claimed (or has ended), the next enqueue with the key makes
 * a new debounced job and points the key at it, in place of exactly the pointer it read. A fold keeps the job's
 * tags: the folding enqueue's tags get no entries.
 */
import { randomUUID } from 'node:crypto';
import { ConflictError } from '../../domain/errors.js';
import { collectsEnqueues, debounceDeadlineMs, debouncedRunAfterMs } from '../../domain/dedup-debounce.js';
import type { Job, JobDebounce } from '../../domain/job.js';
import type { JobType } from '../../domain/job-type.js';
import { dataToJson } from '../../store/items.js';
import { foldIntoDebouncedJobParams, updateJob } from '../../store/job-writes.js';
import { jobWithPointerItems } from '../../store/pointer-writes.js';
import { debounceItemKey, purgeAtS } from '../../store/keys.js';
import { getItem, transactWrite, type Item } from '../../store/send.js';
import { assertJobFitsTarget } from '../../targets/eventbridge.js';
import type { QueueContext } from '../context.js';
import { pointerOf } from './correlation-keys.js';
import { writeMovingQueuedJob } from './change-waiting-job.js';
import { getJob } from '../read-job.js';
import { sameJobOrConflict } from './same-job.js';
import { writeTagEntries } from './tag-entries.js';

/** Enqueues meeting a claim or a new job under the key between their read and their write read again this often. */
const MAX_DEBOUNCE_TRIES = 5;

const contendedError = (key: string) =>
  new ConflictError(`debounce key "${key}" is contended by other enqueues; try again`, [
    { field: 'debounce.key', message: 'is contended by other enqueues' },
  ]);

/**
 * Folds the enqueue of `job` into the waiting `debounced` job: due `delayS` after now (bounded as
 * debouncedRunAfterMs says), with `job`'s data. Undefined when a claim took the job first; a PayloadTooLargeError
 * naming `data`, changing nothing, when that data would take the job's event past its target's limit.
 */
async function foldInto(ctx: QueueContext, jobType: JobType, debounced: Job, job: Job, delayS: number): Promise<Job | undefined> {
  // The enqueue's data was checked in its own envelope; it runs in the waiting job's, whose id and trace may be longer.
  assertJobFitsTarget(jobType, { ...debounced, data: job.data });
  const nowMs = ctx.nowMs();
  const runAfterMs = debouncedRunAfterMs(debounced, jobType, delayS, nowMs);
  const result = await writeMovingQueuedJob(ctx, debounced, runAfterMs, nowMs, (index) =>
    updateJob(ctx, foldIntoDebouncedJobParams(debounced, { nowMs, dataJson: dataToJson(job.data), runAfterMs, index })),
  );
  return result.ok ? result.job : undefined;
}

/**
 * Folds the enqueue of `job` (as `item`) into the job waiting under its debounce key, answering that job with
 * `created: false`; or, when no job waits under the key, writes `job` with the key's pointer and answers it with
 * `created: true`. Of enqueues racing for one key, exactly one writes a new job: the others fail the pointer's
 * condition, read it again and fold into that job. A claim racing a fold wins or loses whole: when it wins, the
 * enqueue makes the next debounced job, and the claimed one runs with the data it had.
 */
export async function enqueueDebouncedJob(
  ctx: QueueContext,
  jobType: JobType,
  job: Job,
  item: Item,
  debounce: JobDebounce,
): Promise<{ job: Job; created: boolean }> {
  const pointerKey = debounceItemKey(job.type, debounce.key);
  let tagsWritten = false;
  for (let tries = 1; ; tries++) {
    const pointer = pointerOf(await getItem(ctx, pointerKey, { consistentRead: true }), pointerKey);
    if (pointer) {
      const held = await getJob(ctx, pointer.type, pointer.id);
      if (held && collectsEnqueues(held, debounce.key)) {
        const folded = await foldInto(ctx, jobType, held, job, debounce.delayS);
        if (folded) return { job: folded, created: false };
        if (tries >= MAX_DEBOUNCE_TRIES) throw contendedError(debounce.key);
        continue;
      }
    }
    const pointerItem = {
      ...pointerKey,
      jobType: job.type,
      jobId: job.id,
      holdToken: randomUUID(),
      // Kept as long as the job may wait for enqueues, then as long as a finished job is.
      purgeAtS: purgeAtS(debounceDeadlineMs(debounce, job.createdAtMs), ctx.settings.retentionDays),
    };
    // Before the job, as for any tagged job (queue/enqueue/tag-entries.ts); only here, where the enqueue makes a job.
    if (job.tags !== undefined && !tagsWritten) {
      await writeTagEntries(ctx, job);
      tagsWritten = true;
    }
    const result = await transactWrite(ctx, jobWithPointerItems(ctx.settings.tableName, item, pointerItem, { replacing: pointer?.holdToken }));
    if (result.ok) return { job, created: true };
    if ('contended' in result) throw contendedError(debounce.key);
    const [jobReason] = result.reasons;
    if (jobReason?.code === 'ConditionalCheckFailed') return sameJobOrConflict(ctx, job, jobReason.item);
    if (tries >= MAX_DEBOUNCE_TRIES) throw contendedError(debounce.key);
  }
}
