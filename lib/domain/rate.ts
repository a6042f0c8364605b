/**
 * A type's `rate_limit_per_s` is a token bucket: it refills at the rate, holds
 * one second of it, and a bucket never written is full.
 */

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
