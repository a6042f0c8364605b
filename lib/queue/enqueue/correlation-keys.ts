/**
 * Correlation keys: unique among the jobs of one type that are not terminal. An item in the key's `CORR#<key>`
 * partition, one per type, points at the job of that type holding the key, with a token that changes with
 * every new holder, so a take-over replaces exactly the pointer it read. Pointers written when keys were
 * unique across types (sort key `CORR`) are still honoured.
 */
import { randomUUID } from 'node:crypto';
import { ConflictError } from '../../domain/errors.js';
import { isTerminal, type Job } from '../../domain/job.js';
import { correlatedJobItems, correlationPointersQuery, releaseCorrelationParams } from '../../store/pointer-writes.js';
import { correlationItemKey, untypedCorrelationItemKey, type ItemKey } from '../../store/keys.js';
import { deleteItem, getItem, queryPage, transactWrite, type Item } from '../../store/send.js';
import type { QueueContext } from '../context.js';
import { getJob } from '../read-job.js';
import { sameJobOrConflict } from './same-job.js';

/**
 * A pointer item: which job holds the key, where the pointer is kept, and a token that changes with every new holder.
 * Dedup and debounce keys point at their jobs with items of the same shape (queue/enqueue/dedup.ts, queue/enqueue/debounce.ts).
 */
export interface CorrelationPointer {
  type: string;
  id: string;
  holdToken: string;
  itemKey: ItemKey;
}

export function pointerOf(item: Item | undefined, itemKey: ItemKey): CorrelationPointer | undefined {
  if (typeof item?.jobType !== 'string' || typeof item.jobId !== 'string' || typeof item.holdToken !== 'string') return undefined;
  return { type: item.jobType, id: item.jobId, holdToken: item.holdToken, itemKey };
}

/** The pointer of `type`'s holder of the key. */
export async function getCorrelationPointer(ctx: QueueContext, type: string, correlationKey: string): Promise<CorrelationPointer | undefined> {
  const itemKey = correlationItemKey(type, correlationKey);
  return pointerOf(await getItem(ctx, itemKey, { consistentRead: true }), itemKey);
}

/** Every pointer of the key, of whatever type, untyped ones from before included: one query of its partition. */
export async function correlationPointers(ctx: QueueContext, correlationKey: string): Promise<CorrelationPointer[]> {
  const { Items } = await queryPage(ctx, correlationPointersQuery(correlationKey));
  return (Items ?? []).flatMap((item) => pointerOf(item, { pk: String(item.pk), sk: String(item.sk) }) ?? []);
}

/**
 * The pointer kept when keys were unique across types, whatever type it names. No write makes one any more,
 * and the only change to one is its delete, so an eventually consistent read can at worst show one just deleted.
 */
async function getUntypedCorrelationPointer(ctx: QueueContext, correlationKey: string): Promise<CorrelationPointer | undefined> {
  const itemKey = untypedCorrelationItemKey(correlationKey);
  return pointerOf(await getItem(ctx, itemKey), itemKey);
}

const heldError = (correlationKey: string) =>
  // The holder is not named, though it is of the caller's own type: the caller may enqueue jobs it may not read.
  new ConflictError(`correlation_key "${correlationKey}" is held by a job that has not finished`, [
    { field: 'correlation_key', message: 'is held by a job that has not finished' },
  ]);

/** The job `pointer` names, while it still holds the key and has not finished; undefined otherwise. */
export async function activeHolder(ctx: QueueContext, pointer: CorrelationPointer, correlationKey: string): Promise<Job | undefined> {
  const holder = await getJob(ctx, pointer.type, pointer.id);
  return holder !== undefined && !isTerminal(holder.status) && holder.correlationKey === correlationKey ? holder : undefined;
}

/** Whether `pointer` names a job of `type`, other than `exceptId`, that holds the key and has not finished. */
async function heldByAnother(ctx: QueueContext, pointer: CorrelationPointer, type: string, correlationKey: string, exceptId: string): Promise<boolean> {
  if (pointer.type !== type || pointer.id === exceptId) return false;
  return (await activeHolder(ctx, pointer, correlationKey)) !== undefined;
}

/** Take-overs of a pointer that keeps changing under them are tried this often; conflicts between transactions are retried inside transactWrite. */
const MAX_CORRELATION_TRIES = 5;

const contendedError = (correlationKey: string) =>
  new ConflictError(`correlation_key "${correlationKey}" is contended by other enqueues; try again`, [
    { field: 'correlation_key', message: 'is contended by other enqueues' },
  ]);

/**
 * Writes the job and the type's pointer item in the key's partition, naming it, in one transaction.
 * The pointer is written only where none exists, or, when the job it names is
 * terminal or gone, in place of exactly the pointer that was read (its
 * `holdToken`): of two enqueues racing for one key, one wins and the other
 * then finds an active holder, a ConflictError naming `correlation_key`.
 */
export async function enqueueCorrelatedJob(ctx: QueueContext, job: Job, item: Item, correlationKey: string): Promise<{ job: Job; created: boolean }> {
  // A holder of the type's key from before keys were per type still holds it (a retry of that very job's
  // enqueue is answered below, by the job's own condition). No new such pointer is ever made: reading it
  // first leaves no race.
  const untyped = await getUntypedCorrelationPointer(ctx, correlationKey);
  if (untyped && (await heldByAnother(ctx, untyped, job.type, correlationKey, job.id))) throw heldError(correlationKey);

  const pointerKey = correlationItemKey(job.type, correlationKey);
  /** The hold token of a stale pointer to replace; undefined: no pointer may exist. */
  let replacing: string | undefined;
  for (let tries = 1; ; tries++) {
    const pointerItem = { ...pointerKey, jobType: job.type, jobId: job.id, holdToken: randomUUID() };
    // The SDK gives the transaction a client request token and sends its retries with it: a first try that was
    // applied but whose answer was lost succeeds again rather than failing its conditions.
    const result = await transactWrite(ctx, correlatedJobItems(ctx.settings.tableName, item, pointerItem, replacing));
    if (result.ok) return { job, created: true };
    if ('contended' in result) throw contendedError(correlationKey);
    const [jobReason, pointerReason] = result.reasons;
    if (jobReason?.code === 'ConditionalCheckFailed') return sameJobOrConflict(ctx, job, jobReason.item);
    if (tries >= MAX_CORRELATION_TRIES) throw contendedError(correlationKey);
    const holder = pointerReason?.item ? pointerOf(pointerReason.item, pointerKey) : await getCorrelationPointer(ctx, job.type, correlationKey);
    if (holder === undefined) {
      replacing = undefined;
      continue;
    }
    const holderJob = await getJob(ctx, holder.type, holder.id);
    if (holderJob !== undefined && !isTerminal(holderJob.status)) throw heldError(correlationKey);
    replacing = holder.holdToken;
  }
}

/**
 * Deletes the key's pointer while it still names `pointer`'s holder. Best effort: a pointer left behind names a
 * terminal job, which the next enqueue with the key takes over, and a newer holder's pointer is kept.
 */
export async function releaseCorrelationKey(ctx: QueueContext, pointer: CorrelationPointer): Promise<void> {
  await deleteItem(ctx, releaseCorrelationParams(pointer.itemKey, pointer.holdToken)).catch(() => undefined);
}
