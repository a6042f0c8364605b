/**
 * Correlation keys: unique among jobs that are not terminal. A `CORR#<key>`
 * item points at the job holding the key, with a token that changes with every
 * new holder, so a take-over replaces exactly the pointer it read.
 */
import { randomUUID } from 'node:crypto';
import { ConflictError } from '../domain/errors.js';
import { isTerminal, type Job } from '../domain/job.js';
import { correlatedJobItems, releaseCorrelationParams } from '../store/job-writes.js';
import { correlationItemKey } from '../store/keys.js';
import { deleteItem, getItem, transactWrite, type Item } from '../store/send.js';
import type { QueueContext } from './context.js';
import { getJob, sameJobOrConflict } from './jobs.js';

/** The `CORR#<key>` item: which job holds the key, and a token that changes with every new holder. */
export interface CorrelationPointer {
  type: string;
  id: string;
  holdToken: string;
}

function pointerOf(item: Item | undefined): CorrelationPointer | undefined {
  if (typeof item?.jobType !== 'string' || typeof item.jobId !== 'string' || typeof item.holdToken !== 'string') return undefined;
  return { type: item.jobType, id: item.jobId, holdToken: item.holdToken };
}

export async function getCorrelationPointer(ctx: QueueContext, correlationKey: string): Promise<CorrelationPointer | undefined> {
  return pointerOf(await getItem(ctx, correlationItemKey(correlationKey), { consistentRead: true }));
}

/** Take-overs of a pointer that keeps changing under them are tried this often; conflicts between transactions are retried inside transactWrite. */
const MAX_CORRELATION_TRIES = 5;

const contendedError = (correlationKey: string) =>
  new ConflictError(`correlation_key "${correlationKey}" is contended by other enqueues; try again`, [
    { field: 'correlation_key', message: 'is contended by other enqueues' },
  ]);

/**
 * Writes the job and the `CORR#<key>` item pointing at it in one transaction.
 * The pointer is written only where none exists, or, when the job it names is
 * terminal or gone, in place of exactly the pointer that was read (its
 * `holdToken`): of two enqueues racing for one key, one wins and the other
 * then finds an active holder, a ConflictError naming `correlation_key`.
 */
export async function enqueueCorrelatedJob(ctx: QueueContext, job: Job, item: Item, correlationKey: string): Promise<{ job: Job; created: boolean }> {
  /** The hold token of a stale pointer to replace; undefined: no pointer may exist. */
  let replacing: string | undefined;
  for (let tries = 1; ; tries++) {
    const pointerItem = { ...correlationItemKey(correlationKey), jobType: job.type, jobId: job.id, holdToken: randomUUID() };
    // The SDK gives the transaction a client request token and sends its retries with it: a first try that was
    // applied but whose answer was lost succeeds again rather than failing its conditions.
    const result = await transactWrite(ctx, correlatedJobItems(ctx.settings.tableName, item, pointerItem, replacing));
    if (result.ok) return { job, created: true };
    if ('contended' in result) throw contendedError(correlationKey);
    const [jobReason, pointerReason] = result.reasons;
    if (jobReason?.code === 'ConditionalCheckFailed') return sameJobOrConflict(ctx, job, jobReason.item);
    if (tries >= MAX_CORRELATION_TRIES) throw contendedError(correlationKey);
    const holder = pointerReason?.item ? pointerOf(pointerReason.item) : await getCorrelationPointer(ctx, correlationKey);
    if (holder === undefined) {
      replacing = undefined;
      continue;
    }
    const holderJob = await getJob(ctx, holder.type, holder.id);
    if (holderJob !== undefined && !isTerminal(holderJob.status)) {
      // The holder is not named: the caller may have no right to see jobs of its type.
      throw new ConflictError(`correlation_key "${correlationKey}" is held by a job that has not finished`, [
        { field: 'correlation_key', message: 'is held by a job that has not finished' },
      ]);
    }
    replacing = holder.holdToken;
  }
}

/**
 * Deletes the key's pointer while it still names `pointer`'s holder. Best effort: a pointer left behind names a
 * terminal job, which the next enqueue with the key takes over, and a newer holder's pointer is kept.
 */
export async function releaseCorrelationKey(ctx: QueueContext, correlationKey: string, pointer: CorrelationPointer): Promise<void> {
  await deleteItem(ctx, releaseCorrelationParams(correlationKey, pointer.holdToken)).catch(() => undefined);
}
