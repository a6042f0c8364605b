/**
 * Rate limits: a type's `rate_limit_per_s`, and each throttle key's `rate_per_s`.
 * Each is a token bucket in the table that every poller draws from, so N
 * pollers together claim no faster than the rate. A poller takes the tokens for
 * a whole poll in one compare-and-set write per bucket, not one per job, and
 * puts back what it did not use.
 */
import pLimit from 'p-limit';
import type { JobType } from '../../domain/job-type.js';
import { availableTokens, idleBucketPurgeAtS, roundedTokens, throttleKeyRatePerS, type RateBucketState } from '../../domain/rate.js';
import { rateBucketId, rateBucketStateOf, returnRateTokensParams, takeRateTokensParams, type RateBucketRef } from '../../store/counters.js';
import type { DueEntry } from '../../store/due-index.js';
import { updateItem } from '../../store/send.js';
import { throwFirstRejection } from '../poll/claim-due-entries.js';
import type { QueueContext } from '../context.js';

/** What a poller last saw of each bucket (by rateBucketId), so a steady loop writes without reading first. */
export type RateBucketCache = Map<string, RateBucketState | undefined>;

/** A compare-and-set that keeps losing to other pollers gives up for this poll; the next one tries again. */
const TAKE_TRIES = 5;

/** Takes up to `wanted` whole tokens from a bucket of `ratePerS`; returns how many it got. */
export async function takeRateTokens(ctx: QueueContext, bucket: RateBucketRef, ratePerS: number, wanted: number, cache: RateBucketCache): Promise<number> {
  if (wanted <= 0) return 0;
  const id = rateBucketId(bucket);
  let seen = cache.get(id);
  for (let tryNumber = 0; tryNumber < TAKE_TRIES; tryNumber++) {
    const nowMs = ctx.nowMs();
    const available = availableTokens(seen, ratePerS, nowMs);
    const granted = Math.min(wanted, Math.floor(available));
    if (granted <= 0) return 0;
    const left = roundedTokens(available - granted);
    let taken;
    try {
      taken = await updateItem(ctx, takeRateTokensParams(bucket, seen, left, nowMs, idleBucketPurgeAtS(left, ratePerS, nowMs)));
    } catch (error) {
      cache.delete(id);
      throw error;
    }
    if (taken.ok) {
      seen = { tokens: left, refilledAtMs: nowMs };
      cache.set(id, seen);
      return granted;
    }
    seen = rateBucketStateOf(taken.current);
    cache.set(id, seen);
  }
  return 0;
}

/** Puts back tokens a poll took but did not use (lost races, expired jobs, full slots). */
export async function returnRateTokens(ctx: QueueContext, bucket: RateBucketRef, unused: number, cache: RateBucketCache): Promise<void> {
  if (unused <= 0) return;
  const id = rateBucketId(bucket);
  const seen = cache.get(id);
  // What the bucket holds after the addition, if no other poller wrote in between; if one did, the next take's
  // compare-and-set fails and reads the bucket back. A bucket that is gone refuses the return: tokens not put
  // back only slow the type down; they are never an excess.
  if (seen) cache.set(id, { tokens: roundedTokens(seen.tokens + unused), refilledAtMs: seen.refilledAtMs });
  await updateItem(ctx, returnRateTokensParams(bucket, unused));
}

/** Whether a bucket may hold a whole token, as far as this poller last saw it: no write is spent on one it saw empty. */
export function mayHoldToken(ctx: QueueContext, bucket: RateBucketRef, ratePerS: number, cache: RateBucketCache): boolean {
  return availableTokens(cache.get(rateBucketId(bucket)), ratePerS, ctx.nowMs()) >= 1;
}

/** The tokens one poll of a type holds: the type's, and each rate-limited throttle key's. */
export interface PollTokens {
  /** The entries the key tokens cover, in order: of a key short of tokens, its first entries only. */
  entries: DueEntry[];
  /** Tokens of the type's own bucket; as many as `entries` when the type has no rate. */
  typeTokens: number;
  /** Tokens taken from each key's bucket, by key. */
  keyTokens: Map<string, number>;
  /** Keys that got fewer tokens than they had entries due: they have no room for their next job in this poll. */
  shortKeys: Set<string>;
}

/** The rate a due entry's throttle key is held to, with the key. */
function keyRateOf(jobType: JobType, entry: DueEntry): { key: string; ratePerS: number } | undefined {
  if (entry.throttleKey === undefined) return undefined;
  const ratePerS = throttleKeyRatePerS(jobType, entry.throttleKey);
  return ratePerS === undefined ? undefined : { key: entry.throttleKey, ratePerS };
}

/**
 * Takes the tokens for a poll of `entries` (due now, in claim order): first from the bucket of each key with a
 * rate, one compare-and-set per key, then from the type's for the entries those cover, so a key out of tokens
 * spends none of the type's. A type out of tokens, as last seen, takes none at all.
 */
export async function takePollTokens(ctx: QueueContext, jobType: JobType, entries: DueEntry[], cache: RateBucketCache): Promise<PollTokens> {
  const typeBucket: RateBucketRef = { type: jobType.name };
  const typeRatePerS = jobType.rateLimitPerS;
  const none: PollTokens = { entries: [], typeTokens: 0, keyTokens: new Map(), shortKeys: new Set() };
  if (typeRatePerS !== null && !mayHoldToken(ctx, typeBucket, typeRatePerS, cache)) return none;
  const wanted = new Map<string, { ratePerS: number; count: number }>();
  for (const entry of entries) {
    const rate = keyRateOf(jobType, entry);
    if (rate) wanted.set(rate.key, { ratePerS: rate.ratePerS, count: (wanted.get(rate.key)?.count ?? 0) + 1 });
  }
  const keyTokens = new Map<string, number>();
  const limit = pLimit(ctx.settings.claimConcurrency);
  try {
    const takes = await Promise.allSettled(
      [...wanted].map(([key, { ratePerS, count }]) =>
        limit(async () => {
          const granted = await takeRateTokens(ctx, { type: jobType.name, key }, ratePerS, count, cache);
          keyTokens.set(key, granted);
        }),
      ),
    );
    throwFirstRejection(takes);
    const covered = new Map<string, number>();
    const within = entries.filter((entry) => {
      const rate = keyRateOf(jobType, entry);
      if (!rate) return true;
      const count = covered.get(rate.key) ?? 0;
      covered.set(rate.key, count + 1);
      return count < (keyTokens.get(rate.key) ?? 0);
    });
    const shortKeys = new Set([...wanted].filter(([key, { count }]) => (keyTokens.get(key) ?? 0) < count).map(([key]) => key));
    const typeTokens = typeRatePerS === null ? within.length : await takeRateTokens(ctx, typeBucket, typeRatePerS, within.length, cache);
    return { entries: within, typeTokens, keyTokens, shortKeys };
  } catch (error) {
    // The key tokens taken before a take failed go back: no claim will use them.
    await returnPollTokens(ctx, jobType, { ...none, keyTokens }, NO_TOKENS_USED, cache);
    throw error;
  }
}

/** How many of a poll's tokens its claims used: in all, and of each rate-limited key. */
export interface TokensUsed {
  total: number;
  byKey: ReadonlyMap<string, number>;
}

export const NO_TOKENS_USED: TokensUsed = { total: 0, byKey: new Map() };

/** Puts back what a poll's claims did not use, in one write per bucket with tokens left over. */
export async function returnPollTokens(
  ctx: QueueContext,
  jobType: JobType,
  tokens: Pick<PollTokens, 'typeTokens' | 'keyTokens'>,
  used: TokensUsed,
  cache: RateBucketCache,
): Promise<void> {
  const limit = pLimit(ctx.settings.claimConcurrency);
  const returns = [...tokens.keyTokens].map(([key, granted]) =>
    limit(() => returnRateTokens(ctx, { type: jobType.name, key }, granted - (used.byKey.get(key) ?? 0), cache)),
  );
  if (jobType.rateLimitPerS !== null) returns.push(returnRateTokens(ctx, { type: jobType.name }, tokens.typeTokens - used.total, cache));
  throwFirstRejection(await Promise.allSettled(returns));
}
