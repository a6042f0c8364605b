/**
 * Rate limits are token buckets: a type's `rate_limit_per_s`, and each throttle
 * key's `rate_per_s` (a bucket of the key's own). A bucket refills at the rate,
 * holds one second of it, and a bucket never written is full.
 */
import type { JobType } from './job-type.js';
import { throttleEntry } from './slots.js';

export interface RateBucketState {
  tokens: number;
  refilledAtMs: number;
}

/** Token counts are kept to a millionth, so a value written compares equal when read back for the next compare-and-set. */
export function roundedTokens(tokens: number): number {
  return Math.round(tokens * 1e6) / 1e6;
}

/** One second of the rate, so no burst passes what a second allows. */
export function bucketCapacity(ratePerS: number): number {
  return Math.max(1, ratePerS);
}

/** Tokens in the bucket at `nowMs`; a bucket never written is full. */
export function availableTokens(state: RateBucketState | undefined, ratePerS: number, nowMs: number): number {
  const capacity = bucketCapacity(ratePerS);
  if (state === undefined) return capacity;
  // Another poller's clock may run ahead of this one: time never flows backwards into the bucket.
  const elapsedMs = Math.max(0, nowMs - state.refilledAtMs);
  return Math.min(capacity, state.tokens + (elapsedMs * ratePerS) / 1000);
}

/**
 * Past the time a bucket is full again, it is the same as no bucket, so it may be removed then. DynamoDB's TTL
 * runs on its own clock, hence the margin for pollers' clocks running behind it. A bucket slower to refill than
 * the cap (a rate below one claim in about a year) is removed at the cap, and reads as full a little early.
 */
const PURGE_MARGIN_MS = 3_600_000;
const MAX_REFILL_MS = 366 * 86_400_000;

/** When DynamoDB's TTL may remove a bucket holding `tokens` at `nowMs`, in epoch seconds. */
export function idleBucketPurgeAtS(tokens: number, ratePerS: number, nowMs: number): number {
  const refillMs = Math.min(MAX_REFILL_MS, (Math.max(0, bucketCapacity(ratePerS) - tokens) * 1000) / ratePerS);
  return Math.ceil((nowMs + refillMs + PURGE_MARGIN_MS) / 1000);
}

/** Claims a second a throttle key is held to (its own entry's `ratePerS`, else `*`'s), or undefined when none. */
export function throttleKeyRatePerS(jobType: Pick<JobType, 'throttle'>, throttleKey: string): number | undefined {
  return throttleEntry(jobType, throttleKey)?.ratePerS;
}

/** Whether some throttle key of the type (or `*`) has a rate. */
export function hasKeyRates(jobType: Pick<JobType, 'throttle'>): boolean {
  return Object.values(jobType.throttle?.limits ?? {}).some((entry) => entry.ratePerS !== undefined);
}
