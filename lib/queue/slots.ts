/**
 * Concurrency slots (DESIGN §4.6): a type's in-flight weight, and each throttle
 * key's, are counters in the table. A claim adds the job's weight in the same
 * transaction that claims it, conditioned on the counter staying within its
 * limit; the attempt's end takes exactly that weight back in the transaction
 * that ends it. However many pollers claim at once, and whichever way an attempt
 * ends (success, failure, retry, timeout, the sweeper's reclaim, a failed
 * dispatch), the counters stay exact, so a crashed worker never leaks capacity.
 */
import type { QueueContext } from './context.js';
import { PARTITION_PREFIX, type ItemKey } from '../store/keys.js';
import { batchGetItems } from '../store/listing.js';
import { OTHER_THROTTLE_KEYS, type HeldSlots } from '../domain/model.js';
import type { Job, JobType } from '../domain/model.js';
import type { TransactItem } from '../store/transactions.js';

/** Kept apart from the type's own item, which a PUT of the type replaces whole. */
export function typeCounterKey(type: string): ItemKey {
  return { pk: `${PARTITION_PREFIX.jobType}${type}`, sk: 'INFLIGHT' };
}

export function keyCounterKey(type: string, throttleKey: string): ItemKey {
  return { pk: `${PARTITION_PREFIX.jobType}${type}`, sk: `KEY#${throttleKey}` };
}

/** The in-flight weight limit of one throttle key, or undefined when the key is not limited. */
export function throttleKeyLimit(jobType: Pick<JobType, 'throttle' | 'concurrency'>, throttleKey: string): number | undefined {
  const limits = jobType.throttle?.limits;
  const entry = limits?.[throttleKey] ?? limits?.[OTHER_THROTTLE_KEYS];
  if (entry === undefined) return undefined;
  if ('limit' in entry) return entry.limit;
  // A share always gets at least one slot, so a small concurrency does not silently pause a key.
  return Math.max(1, Math.floor(entry.share * (jobType.concurrency ?? 0)));
}

/**
 * The counters a claim of this job must take, or undefined when none applies: a
 * job of weight 0 is critical and never waits for a slot.
 */
export function slotsFor(
  jobType: Pick<JobType, 'throttle' | 'concurrency'>,
  job: Pick<Job, 'weight' | 'throttleKey'>,
): HeldSlots | undefined {
  if (job.weight === 0) return undefined;
  const type = jobType.concurrency !== null;
  const key =
    job.throttleKey !== undefined && throttleKeyLimit(jobType, job.throttleKey) !== undefined ? job.throttleKey : undefined;
  if (!type && key === undefined) return undefined;
  return { weight: job.weight, type, ...(key !== undefined ? { key } : {}) };
}

/** Whether claims of this type go through the counters at all. */
export function hasSlotLimits(jobType: Pick<JobType, 'throttle' | 'concurrency'>): boolean {
  return jobType.concurrency !== null || jobType.throttle !== null;
}

function counterUpdate(ctx: QueueContext, key: ItemKey, weight: number, limit: number): TransactItem {
  return {
    Update: {
      TableName: ctx.settings.tableName,
      Key: key,
      UpdateExpression: 'ADD inFlight :weight',
      // Conditions cannot add, so the limit is checked against what the counter may hold before this claim.
      ConditionExpression: 'attribute_not_exists(inFlight) OR inFlight <= :most',
      ExpressionAttributeValues: { ':weight': weight, ':most': limit - weight },
    },
  };
}

/** The limit this job's weight exceeds on its own, so no claim of it can succeed until the type changes. */
export function limitTooSmall(jobType: JobType, slots: HeldSlots): 'type' | 'key' | undefined {
  if (slots.type && slots.weight > (jobType.concurrency ?? 0)) return 'type';
  if (slots.key !== undefined && slots.weight > (throttleKeyLimit(jobType, slots.key) ?? 0)) return 'key';
  return undefined;
}

/**
 * The counter updates that take the slots; each fails its condition when the limit would be passed.
 * A counter that does not exist yet passes, so the caller first checks `limitTooSmall`.
 */
export function takeSlotItems(ctx: QueueContext, jobType: JobType, slots: HeldSlots): TransactItem[] {
  const items: TransactItem[] = [];
  if (slots.type) items.push(counterUpdate(ctx, typeCounterKey(jobType.name), slots.weight, jobType.concurrency ?? 0));
  if (slots.key !== undefined) {
    items.push(counterUpdate(ctx, keyCounterKey(jobType.name, slots.key), slots.weight, throttleKeyLimit(jobType, slots.key) ?? 0));
  }
  return items;
}

/** The counter updates that give back what the job's claim took. */
export function returnSlotItems(ctx: QueueContext, job: Pick<Job, 'type' | 'heldSlots'>): TransactItem[] {
  const slots = job.heldSlots;
  if (slots === undefined) return [];
  const keys = [
    ...(slots.type ? [typeCounterKey(job.type)] : []),
    ...(slots.key !== undefined ? [keyCounterKey(job.type, slots.key)] : []),
  ];
  return keys.map((key) => ({
    Update: {
      TableName: ctx.settings.tableName,
      Key: key,
      UpdateExpression: 'ADD inFlight :weight',
      ExpressionAttributeValues: { ':weight': -slots.weight },
    },
  }));
}

export interface InFlight {
  type: number;
  keys: Map<string, number>;
}

/**
 * The counters as they are now, read once per poll so a full type costs a read
 * rather than a failed transaction; the claim's condition remains the guard.
 */
export async function readInFlight(ctx: QueueContext, type: string, throttleKeys: string[]): Promise<InFlight> {
  const wanted = [typeCounterKey(type), ...throttleKeys.map((key) => keyCounterKey(type, key))];
  const inFlight: InFlight = { type: 0, keys: new Map() };
  for (const item of await batchGetItems(ctx, wanted, { consistentRead: true })) {
    const value = typeof item.inFlight === 'number' ? item.inFlight : 0;
    const sk = String(item.sk);
    if (sk === 'INFLIGHT') inFlight.type = value;
    else inFlight.keys.set(sk.slice('KEY#'.length), value);
  }
  return inFlight;
}
