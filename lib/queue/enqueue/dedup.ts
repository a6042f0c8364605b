/**
 * Deduplication within a window: the first enqueue of a type with a dedup key writes its job and the key's
 * pointer item (`DEDUP#<type>#<key>`) in one transaction; every other enqueue with the key until the window
 * closes finds the pointer, creates nothing and answers that job, whatever its status. The pointer records when
 * its window closes; the first enqueue after that replaces it, and DynamoDB's TTL removes it some time later.
 */
import { randomUUID } from 'node:crypto';
import { ConflictError } from '../../domain/errors.js';
import { dedupWindowEndsAtMs } from '../../domain/dedup-debounce.js';
import type { Job, JobDedup } from '../../domain/job.js';
import { jobWithPointerItems, type PointerWrite } from '../../store/pointer-writes.js';
import { dedupItemKey } from '../../store/keys.js';
import { transactWrite, type Item } from '../../store/send.js';
import type { QueueContext } from '../context.js';
import { pointerOf } from './correlation-keys.js';
import { getJob } from '../read-job.js';
import { sameJobOrConflict } from './same-job.js';

/** Pointers that keep changing under an enqueue are read again this often; conflicts between transactions are retried inside transactWrite. */
const MAX_DEDUP_TRIES = 5;

const contendedError = (key: string) =>
  new ConflictError(`dedup key "${key}" is contended by other enqueues; try again`, [{ field: 'dedup.key', message: 'is contended by other enqueues' }]);

/**
 * Writes `job` (as `item`) with the pointer of its dedup key, or answers the job whose window for the key is
 * still open, unchanged, with `created: false`. Of enqueues racing for one key, exactly one transaction writes
 * the pointer; the others fail its condition and answer the job it names. The same (type, id) again is answered
 * as any repeat is, before the key is looked at: the same body is that job, another body a ConflictError.
 */
export async function enqueueDedupedJob(ctx: QueueContext, job: Job, item: Item, dedup: JobDedup): Promise<{ job: Job; created: boolean }> {
  const pointerKey = dedupItemKey(job.type, dedup.key);
  const windowEndsAtMs = dedupWindowEndsAtMs(dedup, job.createdAtMs);
  let write: PointerWrite = { windowEndedBy: job.createdAtMs };
  for (let tries = 1; ; tries++) {
    const pointerItem = {
      ...pointerKey,
      jobType: job.type,
      jobId: job.id,
      holdToken: randomUUID(),
      windowEndsAtMs,
      purgeAtS: Math.ceil(windowEndsAtMs / 1000),
    };
    const result = await transactWrite(ctx, jobWithPointerItems(ctx.settings.tableName, item, pointerItem, write));
    if (result.ok) return { job, created: true };
    if ('contended' in result) throw contendedError(dedup.key);
    const [jobReason, pointerReason] = result.reasons;
    if (jobReason?.code === 'ConditionalCheckFailed') return sameJobOrConflict(ctx, job, jobReason.item);
    // A failed condition returns the pointer that failed it; none comes back only when it was gone by then.
    const pointer = pointerOf(pointerReason?.item, pointerKey);
    if (pointer) {
      const first = await getJob(ctx, pointer.type, pointer.id);
      if (first) return { job: first, created: false };
    }
    if (tries >= MAX_DEDUP_TRIES) throw contendedError(dedup.key);
    // Gone, or naming a job no longer kept (RETENTION_DAYS lowered below a window since): nothing answers for the
    // key, so the next try writes the pointer where none is, or over exactly this one.
    write = pointer ? { replacing: pointer.holdToken } : { windowEndedBy: job.createdAtMs };
  }
}
