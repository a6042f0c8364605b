/**
 * The counters in the table that limits are kept with: a type's and each
 * throttle key's in-flight weight (domain/slots.ts), and a type's token bucket
 * for `rate_limit_per_s` (domain/rate.ts). Pure builders of their writes, and
 * the reads of their current values.
 */
import type { HeldSlots, Job } from '../domain/job.js';
import type { JobType } from '../domain/job-type.js';
import type { RateBucketState } from '../domain/rate.js';
import { throttleKeyLimit, type InFlight } from '../domain/slots.js';
import { keyCounterKey, parseCounterSortKey, rateBucketKey, typeCounterKey, type ItemKey } from './keys.js';
import { batchGetItems, type Item, type StoreContext, type TransactItem, type UpdateParams } from './send.js';

function counterUpdate(tableName: string, key: ItemKey, weight: number, limit: number): TransactItem {
  return {
    Update: {
      TableName: tableName,
      Key: key,
      UpdateExpression: 'ADD inFlight :weight',
      // Conditions cannot add, so the limit is checked against what the counter may hold before this claim.
      ConditionExpression: 'attribute_not_exists(inFlight) OR inFlight <= :most',
      ExpressionAttributeValues: { ':weight': weight, ':most': limit - weight },
    },
  };
}

/**
 * The counter updates that take the slots; each fails its condition when the limit would be passed.
 * A counter that does not exist yet passes, so the caller first checks `limitTooSmall`.
 */
export function takeSlotItems(tableName: string, jobType: JobType, slots: HeldSlots): TransactItem[] {
  const items: TransactItem[] = [];
  if (slots.type) items.push(counterUpdate(tableName, typeCounterKey(jobType.name), slots.weight, jobType.concurrency ?? 0));
  if (slots.key !== undefined) {
    items.push(counterUpdate(tableName, keyCounterKey(jobType.name, slots.key), slots.weight, throttleKeyLimit(jobType, slots.key) ?? 0));
  }
  return items;
}

/** The counter updates that give back what the job's claim took. */
export function returnSlotItems(tableName: string, job: Pick<Job, 'type' | 'heldSlots'>): TransactItem[] {
  const slots = job.heldSlots;
  if (slots === undefined) return [];
  const keys = [
    ...(slots.type ? [typeCounterKey(job.type)] : []),
    ...(slots.key !== undefined ? [keyCounterKey(job.type, slots.key)] : []),
  ];
  return keys.map((key) => ({
    Update: { TableName: tableName, Key: key, UpdateExpression: 'ADD inFlight :weight', ExpressionAttributeValues: { ':weight': -slots.weight } },
  }));
}

/**
 * The counters as they are now, read once per poll so a full type costs a read
 * rather than a failed transaction; the claim's condition remains the guard.
 */
export async function readInFlight(ctx: StoreContext, type: string, throttleKeys: string[]): Promise<InFlight> {
  const wanted = [typeCounterKey(type), ...throttleKeys.map((key) => keyCounterKey(type, key))];
  const inFlight: InFlight = { type: 0, keys: new Map() };
  for (const item of await batchGetItems(ctx, wanted, { consistentRead: true })) {
    const value = typeof item.inFlight === 'number' ? item.inFlight : 0;
    const counter = parseCounterSortKey(String(item.sk));
    if (counter && 'type' in counter) inFlight.type = value;
    else if (counter) inFlight.keys.set(counter.key, value);
  }
  return inFlight;
}

/** Takes tokens with a compare-and-set against the bucket as last `seen` (absent: never written). */
export function takeRateTokensParams(type: string, seen: RateBucketState | undefined, left: number, nowMs: number): UpdateParams {
  return {
    Key: rateBucketKey(type),
    UpdateExpression: 'SET tokens = :left, refilledAtMs = :now',
    ConditionExpression: seen ? 'tokens = :seenTokens AND refilledAtMs = :seenAt' : 'attribute_not_exists(refilledAtMs)',
    ExpressionAttributeValues: {
      ':left': left,
      ':now': nowMs,
      ...(seen ? { ':seenTokens': seen.tokens, ':seenAt': seen.refilledAtMs } : {}),
    },
    ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
  };
}

/** Puts `unused` tokens back into a bucket that exists. */
export function returnRateTokensParams(type: string, unused: number): UpdateParams {
  return {
    Key: rateBucketKey(type),
    UpdateExpression: 'ADD tokens :unused',
    ConditionExpression: 'attribute_exists(refilledAtMs)',
    ExpressionAttributeValues: { ':unused': unused },
  };
}

export function rateBucketStateOf(item: Item | undefined): RateBucketState | undefined {
  return typeof item?.tokens === 'number' && typeof item.refilledAtMs === 'number'
    ? { tokens: item.tokens, refilledAtMs: item.refilledAtMs }
    : undefined;
}
