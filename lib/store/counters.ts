/**
 * The counters in the table that limits are kept with: a type's and each
 * throttle key's in-flight weight (domain/slots.ts), and a type's token bucket
 * for `rate_limit_per_s` (domain/rate.ts). Pure builders of their writes, and
 * the reads of their current values.
 *
 * Every write of an in-flight counter is a transaction, even of one item: the
 * SDK sends a transaction again with its ClientRequestToken, so a write whose
 * answer was lost is applied once, where a plain `ADD` sent again would count
 * twice. Each write also moves `rev` (the version a reconcile is conditioned
 * on) and `changedAtMs` (how long the counter has been quiet).
 */
import type { HeldSlots, Job } from '../domain/job.js';
import type { JobType } from '../domain/job-type.js';
import type { RateBucketState } from '../domain/rate.js';
import { throttleKeyLimit, type CounterState, type InFlight } from '../domain/slots.js';
import { keyCounterKey, parseCounterSortKey, rateBucketKey, typeCounterKey, type ItemKey } from './keys.js';
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

function counterChange(tableName: string, key: ItemKey, delta: number, nowMs: number, condition?: { expression: string; values: Record<string, unknown> }): TransactItem {
  return {
    Update: {
      TableName: tableName,
      Key: key,
      UpdateExpression: 'ADD inFlight :delta, rev :one SET changedAtMs = :now',
      ...(condition ? { ConditionExpression: condition.expression } : {}),
      ExpressionAttributeValues: { ':delta': delta, ':one': 1, ':now': nowMs, ...condition?.values },
    },
  };
}

/** The condition that no reconcile rewrote the counter since it was read at `epoch` (0: never reconciled). */
function sameEpoch(epoch: number): { expression: string; values: Record<string, unknown> } {
  return epoch === 0 ? { expression: 'attribute_not_exists(epoch)', values: {} } : { expression: 'epoch = :epoch', values: { ':epoch': epoch } };
}

/** What a poll reserves on one counter: `weight` more in flight, as long as `limit` holds and no reconcile came between. */
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
export function reserveItems(tableName: string, type: string, reservations: Reservation[], nowMs: number): TransactItem[] {
  return reservations.map(({ counter, weight, limit, epoch }) => {
    const epochCheck = sameEpoch(epoch);
    return counterChange(tableName, counterKeyOf(type, counter), weight, nowMs, {
      expression: `(attribute_not_exists(inFlight) OR inFlight <= :most) AND ${epochCheck.expression}`,
      values: { ':most': limit - weight, ...epochCheck.values },
    });
  });
}

/**
 * The updates that give back what a poll reserved and did not claim. A reconcile since the reservation already
 * counted what the poll claimed and nothing more, so then the unused part is not given back again.
 */
export function releaseItems(tableName: string, type: string, unused: Reservation[], nowMs: number): TransactItem[] {
  return unused.map(({ counter, weight, epoch }) => counterChange(tableName, counterKeyOf(type, counter), -weight, nowMs, sameEpoch(epoch)));
}

/** The counter updates that give back what one or more jobs' claims took: weights summed per counter. */
export function returnSlotItems(tableName: string, jobs: Pick<Job, 'type' | 'heldSlots'>[], nowMs: number): TransactItem[] {
  const heldByType = new Map<string, (HeldSlots | undefined)[]>();
  for (const { type, heldSlots } of jobs) heldByType.set(type, [...(heldByType.get(type) ?? []), heldSlots]);
  return [...heldByType].flatMap(([type, held]) =>
    [...weightByCounter(held).values()]
      .filter(({ weight }) => weight > 0)
      .map(({ counter, weight }) => counterChange(tableName, counterKeyOf(type, counter), -weight, nowMs)),
  );
}

/** The counters slots are held on: the type's, the throttle key's, or both. */
export function countersHeld(slots: HeldSlots): CounterRef[] {
  return [...(slots.type ? [{}] : []), ...(slots.key !== undefined ? [{ key: slots.key }] : [])];
}

/** The weight held on each counter by these slots, summed, by counterId. */
export function weightByCounter(held: (HeldSlots | undefined)[]): Map<string, { counter: CounterRef; weight: number }> {
  const totals = new Map<string, { counter: CounterRef; weight: number }>();
  for (const slots of held) {
    if (!slots) continue;
    for (const counter of countersHeld(slots)) {
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
  const state: CounterState = { inFlight: number(item.inFlight), rev: number(item.rev), changedAtMs: number(item.changedAtMs), epoch: number(item.epoch) };
  if (typeof item.proposedInFlight === 'number') state.proposal = { inFlight: item.proposedInFlight, rev: number(item.proposedRev), atMs: number(item.proposedAtMs) };
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

/** The condition that nothing wrote the counter since it was `seen`: its version, or for a counter the old code wrote, its value. */
function unchangedSince(seen: CounterState): { expression: string; values: Record<string, unknown> } {
  return seen.rev === 0
    ? { expression: 'attribute_not_exists(rev) AND inFlight = :seen', values: { ':seen': seen.inFlight } }
    : { expression: 'rev = :rev', values: { ':rev': seen.rev } };
}

/**
 * Sets a counter to what its holders hold, as long as nothing wrote it since it was `seen`; the new epoch
 * refuses the release of any reservation made before.
 */
export function reconcileParams(type: string, counter: CounterRef, seen: CounterState, inFlight: number, nowMs: number): UpdateParams {
  const unchanged = unchangedSince(seen);
  return {
    Key: counterKeyOf(type, counter),
    UpdateExpression: 'SET inFlight = :inFlight, changedAtMs = :now, epoch = :epoch ADD rev :one REMOVE proposedInFlight, proposedRev, proposedAtMs',
    ConditionExpression: unchanged.expression,
    ExpressionAttributeValues: { ':inFlight': inFlight, ':now': nowMs, ':epoch': seen.epoch + 1, ':one': 1, ...unchanged.values },
  };
}

/** Records what a reconcile would set, without moving rev: applied a safety margin later only if rev has not moved. */
export function proposeParams(type: string, counter: CounterRef, seen: CounterState, inFlight: number, nowMs: number): UpdateParams {
  const unchanged = unchangedSince(seen);
  return {
    Key: counterKeyOf(type, counter),
    UpdateExpression: 'SET proposedInFlight = :inFlight, proposedRev = :seenRev, proposedAtMs = :now',
    ConditionExpression: unchanged.expression,
    ExpressionAttributeValues: { ':inFlight': inFlight, ':now': nowMs, ':seenRev': seen.rev, ...unchanged.values },
  };
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
