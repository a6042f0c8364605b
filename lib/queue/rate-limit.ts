/**
 * A type's `rate_limit_per_s`: one token bucket in the table that every poller
 * draws from, so N pollers together claim no faster than the rate. A poller
 * takes the tokens for a whole poll in one compare-and-set write, not one per
 * job, and puts back what it did not use.
 */
import type { JobType } from '../domain/job-type.js';
import { availableTokens, roundedTokens, type RateBucketState } from '../domain/rate.js';
import { rateBucketStateOf, returnRateTokensParams, takeRateTokensParams } from '../store/counters.js';
import { updateItem } from '../store/send.js';
import type { QueueContext } from './context.js';

/** What a poller last saw of each bucket, so a steady loop writes without reading first. */
export type RateBucketCache = Map<string, RateBucketState | undefined>;

/** A compare-and-set that keeps losing to other pollers gives up for this poll; the next one tries again. */
const TAKE_TRIES = 5;

/** Takes up to `wanted` whole tokens from the type's bucket; returns how many it got. */
export async function takeRateTokens(
  ctx: QueueContext,
  jobType: Pick<JobType, 'name' | 'rateLimitPerS'>,
  wanted: number,
  cache: RateBucketCache,
): Promise<number> {
  const ratePerS = jobType.rateLimitPerS;
  if (ratePerS === null) return wanted;
  if (wanted <= 0) return 0;
  let seen = cache.get(jobType.name);
  for (let tryNumber = 0; tryNumber < TAKE_TRIES; tryNumber++) {
    const nowMs = ctx.nowMs();
    const available = availableTokens(seen, ratePerS, nowMs);
    const granted = Math.min(wanted, Math.floor(available));
    if (granted <= 0) return 0;
    const left = roundedTokens(available - granted);
    let taken;
    try {
      taken = await updateItem(ctx, takeRateTokensParams(jobType.name, seen, left, nowMs));
    } catch (error) {
      cache.delete(jobType.name);
      throw error;
    }
    if (taken.ok) {
      seen = { tokens: left, refilledAtMs: nowMs };
      cache.set(jobType.name, seen);
      return granted;
    }
    seen = rateBucketStateOf(taken.current);
    cache.set(jobType.name, seen);
  }
  return 0;
}

/** Puts back tokens a poll took but did not use (lost races, expired jobs, full slots). */
export async function returnRateTokens(ctx: QueueContext, type: string, unused: number, cache: RateBucketCache): Promise<void> {
  if (unused <= 0) return;
  const seen = cache.get(type);
  // What the bucket holds after the addition, if no other poller wrote in between; if one did, the next take's
  // compare-and-set fails and reads the bucket back. A bucket that is gone refuses the return: tokens not put
  // back only slow the type down; they are never an excess.
  if (seen) cache.set(type, { tokens: roundedTokens(seen.tokens + unused), refilledAtMs: seen.refilledAtMs });
  await updateItem(ctx, returnRateTokensParams(type, unused));
}
