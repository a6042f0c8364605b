/**
 * The counters in the table that limits are kept with: a type's and each
 * throttle key's in-flight weight (domain/slots.ts), and the token buckets of a
 * type's `rate_limit_per_s` and of each throttle key's `rate_per_s`
 * (domain/rate.ts). Pure builders of their writes, and the reads of their
 * current values.
 *
 * An in-flight counter is split by epoch: `inFlight` is all it holds, and
 * `epochInFlight` the part reserved since it was last handed over, so the part
 * of earlier epochs can be settled to what its jobs hold while the current one
 * keeps moving (queue/limits/counter-reconcile.ts). A write that lowers a counter names the
 * epoch its weight was reserved in: it lowers that epoch's part.
 *
 * Every write of an in-flight counter is a transaction, even of one item: the
 * SDK sends a transaction again with its ClientRequestToken, so a write whose
 * answer was lost is applied once, where a plain `ADD` sent again would count
 * twice.
 */
import type { HeldSlots, Job } from '../domain/job.js';
import type { JobType } from '../domain/job-type.js';
import type { RateBucketState } from '../domain/rate.js';
import { throttleKeyLimit, type CounterState, type InFlight } from '../domain/slots.js';
import { keyCounterKey, keyRateBucketKey, parseCounterSortKey, rateBucketKey, TTL_ATTRIBUTE, typeCounterKey, type ItemKey } from './keys.js';
import { batchGetItems, queryPages, type Item, type StoreContext, type TransactItem, type UpdateParams } from './send.js';

/** A counter: the type's own (`key` absent) or one throttle key's. */
export interface CounterRef {
  key?: string;
}

/** A name for the counter within its type, for maps. */
export function counterId(counter: CounterRef): string {
  return counter.key === undefined ? 'type' : `key#${counter.key}`;
}

function counterKeyOf(type: string, counter: CounterRef): ItemKey {
  return counter.key === undefined ? typeCounterKey(type) : keyCounterKey(type, counter.key);
}

interface Condition {
  expression: string;
  values: Record<string, unknown>;
}

/** The counter still in `epoch` (0: never handed over). */
function inEpoch(epoch: number): Condition {
  return epoch === 0 ? { expression: 'attribute_not_exists(epoch)', values: {} } : { expression: 'epoch = :epoch', values: { ':epoch': epoch } };
}

/** The counter handed over since `epoch`. */
function pastEpoch(epoch: number): Condition {
  return epoch === 0 ? { expression: 'attribute_exists(epoch)', values: {} } : { expression: 'epoch > :epoch', values: { ':epoch': epoch } };
}

/** Moves `delta` of weight in the current epoch's part, when the counter is still in that epoch. */
function currentChange(tableName: string, key: ItemKey, delta: number, condition: Condition): TransactItem {
  return {
    Update: {
      TableName: tableName,
      Key: key,
      UpdateExpression: 'ADD inFlight :delta, epochInFlight :delta',
      ConditionExpression: condition.expression,
      ExpressionAttributeValues: { ':delta': delta, ...condition.values },
    },
  };
}

/** Lowers the earlier epochs' part by `weight`. */
function olderDecrease(tableName: string, key: ItemKey, weight: number, condition: Condition | undefined): TransactItem {
  return {
    Update: {
      TableName: tableName,
      Key: key,
      UpdateExpression: 'ADD inFlight :delta',
      ...(condition ? { ConditionExpression: condition.expression } : {}),
      ExpressionAttributeValues: { ':delta': -weight, ...condition?.values },
    },
  };
}

/**
 * A write that gives weight back to a counter: `inEpoch` lowers the current epoch's part and is refused once the
 * counter was handed over, when `older` lowers the earlier epochs' part instead. Without `inEpoch` (weight whose
 * epoch was not recorded) the weight is in the earlier part.
 */
export interface CounterDecrease {
  /** The counter item it writes: one transaction may write an item once. */
  itemId: string;
  inEpoch?: TransactItem;
  older: TransactItem;
}

/** `olderWhen` says when weight of `epoch` may lower the earlier part: for releases and returns it differs. */
function decrease(tableName: string, key: ItemKey, weight: number, epoch: number | undefined, olderWhen: (epoch: number) => Condition): CounterDecrease {
  const itemId = `${key.pk}\u0000${key.sk}`;
  if (epoch === undefined) return { itemId, older: olderDecrease(tableName, key, weight, undefined) };
  return { itemId, inEpoch: currentChange(tableName, key, -weight, inEpoch(epoch)), older: olderDecrease(tableName, key, weight, olderWhen(epoch)) };
}

/**
 * Unused weight of a reservation made in `epoch`, given back after a handover: only until that part is settled.
 * A settlement counts the claims a reservation made, not its unused part, so a release that lands after it
 * (its answer delayed past the margin) would be subtracted twice. A settlement comes before any later handover.
 */
function unsettledSince(epoch: number): Condition {
  return {
    expression: 'epoch = :next AND (attribute_not_exists(settledEpoch) OR settledEpoch <> :next)',
    values: { ':next': epoch + 1 },
  };
}

/** What a poll reserves on one counter: `weight` more in flight, as long as `limit` holds and the counter is still in `epoch`. */
export interface Reservation {
  counter: CounterRef;
  weight: number;
  limit: number;
  /** The counter's epoch when it was read. */
  epoch: number;
}

/**
 * The updates that reserve slots on each counter for the jobs a poll is about to claim; each fails its condition
 * when its limit would be passed. Conditions cannot add, so the limit is checked against what the counter may
 * hold before the reservation.
 */
export function reserveItems(tableName: string, type: string, reservations: Reservation[]): TransactItem[] {
  return reservations.map(({ counter, weight, limit, epoch }) => {
    const sameEpoch = inEpoch(epoch);
    return currentChange(tableName, counterKeyOf(type, counter), weight, {
      expression: `(attribute_not_exists(inFlight) OR inFlight <= :most) AND ${sameEpoch.expression}`,
      values: { ':most': limit - weight, ...sameEpoch.values },
    });
  });
}

/** The decreases that give back what a poll reserved and did not claim. */
export function releaseDecreases(tableName: string, type: string, unused: Reservation[]): CounterDecrease[] {
  return unused.map(({ counter, weight, epoch }) => decrease(tableName, counterKeyOf(type, counter), weight, epoch, unsettledSince));
}

/** The counters slots are held on: the type's, the throttle key's, or both; each with the epoch it was reserved in. */
export function countersHeld(slots: HeldSlots): { counter: CounterRef; epoch: number | undefined }[] {
  return [...(slots.type ? [{ counter: {}, epoch: slots.typeEpoch }] : []), ...(slots.key !== undefined ? [{ counter: { key: slots.key }, epoch: slots.keyEpoch }] : [])];
}

/** The decreases that give back what one or more jobs' claims took: weights summed per counter and epoch. */
export function returnDecreases(tableName: string, jobs: Pick<Job, 'type' | 'heldSlots'>[]): CounterDecrease[] {
  const totals = new Map<string, { key: ItemKey; epoch: number | undefined; weight: number }>();
  for (const { type, heldSlots } of jobs) {
    if (!heldSlots || heldSlots.weight <= 0) continue;
    for (const { counter, epoch } of countersHeld(heldSlots)) {
      const id = `${type}\u0000${counterId(counter)}\u0000${epoch ?? ''}`;
      const total = totals.get(id) ?? { key: counterKeyOf(type, counter), epoch, weight: 0 };
      totals.set(id, { ...total, weight: total.weight + heldSlots.weight });
    }
  }
  // A job lists as holding its weight until its end is written, so a settlement counts it until then: its return
  // lowers the earlier part whenever it lands, within the margin a settlement waits for what is in flight.
  return [...totals.values()].map(({ key, epoch, weight }) => decrease(tableName, key, weight, epoch, pastEpoch));
}

/** The weight held on each counter by these slots, summed, by counterId; with `beforeEpoch`, only weight reserved before it (or in no recorded epoch). */
export function weightByCounter(held: (HeldSlots | undefined)[], beforeEpoch?: number): Map<string, { counter: CounterRef; weight: number }> {
  const totals = new Map<string, { counter: CounterRef; weight: number }>();
  for (const slots of held) {
    if (!slots) continue;
    for (const { counter, epoch } of countersHeld(slots)) {
      if (beforeEpoch !== undefined && epoch !== undefined && epoch >= beforeEpoch) continue;
      const id = counterId(counter);
      totals.set(id, { counter, weight: (totals.get(id)?.weight ?? 0) + slots.weight });
    }
  }
  return totals;
}

/** The limit a counter of the type keeps within. */
export function counterLimit(jobType: JobType, counter: CounterRef): number {
  return (counter.key === undefined ? jobType.concurrency : throttleKeyLimit(jobType, counter.key)) ?? 0;
}

function counterStateOf(item: Item): CounterState {
  const number = (value: unknown): number => (typeof value === 'number' ? value : 0);
  const state: CounterState = {
    inFlight: number(item.inFlight),
    epoch: number(item.epoch),
    epochAtMs: number(item.epochAtMs),
    epochInFlight: number(item.epochInFlight),
    settledEpoch: number(item.settledEpoch),
  };
  if (typeof item.settleInFlight === 'number') state.proposal = { olderInFlight: item.settleInFlight, atMs: number(item.settleAtMs) };
  return state;
}

/**
 * The counters as they are now, read once per poll so a full type costs a read
 * rather than a failed write; the reservation's condition remains the guard.
 */
export async function readInFlight(ctx: StoreContext, type: string, throttleKeys: string[]): Promise<InFlight> {
  const wanted = [typeCounterKey(type), ...throttleKeys.map((key) => keyCounterKey(type, key))];
  const inFlight: InFlight = { type: 0, keys: new Map(), epochs: { type: 0, keys: new Map() } };
  for (const item of await batchGetItems(ctx, wanted, { consistentRead: true })) {
    const state = counterStateOf(item);
    const counter = parseCounterSortKey(String(item.sk));
    if (counter && 'type' in counter) {
      inFlight.type = state.inFlight;
      inFlight.epochs.type = state.epoch;
    } else if (counter) {
      inFlight.keys.set(counter.key, state.inFlight);
      inFlight.epochs.keys.set(counter.key, state.epoch);
    }
  }
  return inFlight;
}

/** Every in-flight counter of a type, the type's own and each throttle key's, as it is now. */
export async function readCounters(ctx: StoreContext, type: string): Promise<{ counter: CounterRef; state: CounterState }[]> {
  const counters: { counter: CounterRef; state: CounterState }[] = [];
  const pages = queryPages(ctx, {
    KeyConditionExpression: 'pk = :pk',
    ExpressionAttributeValues: { ':pk': typeCounterKey(type).pk },
    ConsistentRead: true,
  });
  for await (const page of pages) {
    for (const item of page.Items ?? []) {
      const counter = parseCounterSortKey(String(item.sk));
      if (counter) counters.push({ counter: 'type' in counter ? {} : { key: counter.key }, state: counterStateOf(item) });
    }
  }
  return counters;
}

/**
 * Starts a new epoch: what the counter holds now becomes the earlier epochs' part, to be settled once every
 * reservation of those epochs has been claimed or given back. Refused if another handover came first.
 *
 * It also moves `rev` and `changedAtMs` and drops `proposed*`: the previous release's sweeper, which may run on
 * for a minute during a deploy, sets a counter it finds quiet by `changedAtMs` to a proposal conditioned on `rev`,
 * which this release's reservations would not stop.
 */
export function handOverParams(type: string, counter: CounterRef, seen: CounterState, nowMs: number): UpdateParams {
  const sameEpoch = inEpoch(seen.epoch);
  return {
    Key: counterKeyOf(type, counter),
    UpdateExpression:
      'SET epoch = :next, epochAtMs = :now, epochInFlight = :zero, changedAtMs = :now ADD rev :one REMOVE settleInFlight, settleAtMs, proposedInFlight, proposedRev, proposedAtMs',
    ConditionExpression: sameEpoch.expression,
    ExpressionAttributeValues: { ':next': seen.epoch + 1, ':now': nowMs, ':zero': 0, ':one': 1, ...sameEpoch.values },
  };
}

/** Records what the earlier part's jobs hold, to be applied a safety margin later, in the same epoch. */
export function proposeSettleParams(type: string, counter: CounterRef, seen: CounterState, olderInFlight: number, nowMs: number): UpdateParams {
  const sameEpoch = inEpoch(seen.epoch);
  return {
    Key: counterKeyOf(type, counter),
    UpdateExpression: 'SET settleInFlight = :older, settleAtMs = :now',
    ConditionExpression: sameEpoch.expression,
    ExpressionAttributeValues: { ':older': olderInFlight, ':now': nowMs, ...sameEpoch.values },
  };
}

/**
 * Sets the earlier epochs' part to `olderInFlight`, leaving the current epoch's part as it is now, and marks it
 * settled: as long as the counter is in the epoch, with the proposal, it was seen with.
 */
export function settleParams(type: string, counter: CounterRef, seen: CounterState & { proposal: { atMs: number } }, olderInFlight: number): UpdateParams {
  const sameEpoch = inEpoch(seen.epoch);
  return {
    Key: counterKeyOf(type, counter),
    UpdateExpression: 'SET inFlight = if_not_exists(epochInFlight, :zero) + :older, settledEpoch = :epoch REMOVE settleInFlight, settleAtMs',
    ConditionExpression: `settleAtMs = :proposedAt AND ${sameEpoch.expression}`,
    ExpressionAttributeValues: { ':older': olderInFlight, ':zero': 0, ':epoch': seen.epoch, ':proposedAt': seen.proposal.atMs, ...sameEpoch.values },
  };
}

/** A token bucket: the type's own (`key` absent) or one throttle key's. */
export interface RateBucketRef {
  type: string;
  key?: string;
}

/** A name for the bucket, for maps: type names have no control characters. */
export function rateBucketId(bucket: RateBucketRef): string {
  return bucket.key === undefined ? bucket.type : `${bucket.type}\u0000${bucket.key}`;
}

function rateBucketKeyOf(bucket: RateBucketRef): ItemKey {
  return bucket.key === undefined ? rateBucketKey(bucket.type) : keyRateBucketKey(bucket.type, bucket.key);
}

/**
 * Takes tokens with a compare-and-set against the bucket as last `seen` (absent: never written), leaving `left`;
 * the bucket may be removed at `purgeAtS`, once it is full again.
 */
export function takeRateTokensParams(bucket: RateBucketRef, seen: RateBucketState | undefined, left: number, nowMs: number, purgeAtS: number): UpdateParams {
  return {
    Key: rateBucketKeyOf(bucket),
    UpdateExpression: `SET tokens = :left, refilledAtMs = :now, ${TTL_ATTRIBUTE} = :purgeAt`,
    ConditionExpression: seen ? 'tokens = :seenTokens AND refilledAtMs = :seenAt' : 'attribute_not_exists(refilledAtMs)',
    ExpressionAttributeValues: {
      ':left': left,
      ':now': nowMs,
      ':purgeAt': purgeAtS,
      ...(seen ? { ':seenTokens': seen.tokens, ':seenAt': seen.refilledAtMs } : {}),
    },
    ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
  };
}

/** Puts `unused` tokens back into a bucket that exists: its TTL stands, since a fuller bucket is full no later. */
export function returnRateTokensParams(bucket: RateBucketRef, unused: number): UpdateParams {
  return {
    Key: rateBucketKeyOf(bucket),
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
