/**
 * A type's `rate_limit_per_s`: one token bucket in the table that every poller
 * draws from, so N pollers together claim no faster than the rate. A poller
 * takes the tokens for a whole poll in one compare-and-set write, not one per
 * job, and puts back what it did not use.
 */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { QueueContext } from './context.js';
import { unmarshallItem } from '../store/items.js';
import { PARTITION_PREFIX, type ItemKey } from '../store/keys.js';
import type { JobType } from '../domain/model.js';

export function rateBucketKey(type: string): ItemKey {
  return { pk: `${PARTITION_PREFIX.jobType}${type}`, sk: 'RATE' };
}

export interface RateBucketState {
  tokens: number;
  refilledAtMs: number;
}

/** What a poller last saw of each bucket, so a steady loop writes without reading first. */
export type RateBucketCache = Map<string, RateBucketState | undefined>;

/** A compare-and-set that keeps losing to other pollers gives up for this poll; the next one tries again. */
const TAKE_TRIES = 5;

/** Token counts are kept to a millionth, so a value written compares equal when read back for the next compare-and-set. */
function roundedTokens(tokens: number): number {
  return Math.round(tokens * 1e6) / 1e6;
}

/** One second of the rate, so no burst passes what a second allows. */
export function bucketCapacity(ratePerS: number): number {
  return Math.max(1, ratePerS);
}

function stateOf(item: Record<string, unknown> | undefined): RateBucketState | undefined {
  return typeof item?.tokens === 'number' && typeof item.refilledAtMs === 'number'
    ? { tokens: item.tokens, refilledAtMs: item.refilledAtMs }
    : undefined;
}

/** Tokens in the bucket at `nowMs`; a bucket never written is full. */
export function availableTokens(state: RateBucketState | undefined, ratePerS: number, nowMs: number): number {
  const capacity = bucketCapacity(ratePerS);
  if (state === undefined) return capacity;
  // Another poller's clock may run ahead of this one: time never flows backwards into the bucket.
  const elapsedMs = Math.max(0, nowMs - state.refilledAtMs);
  return Math.min(capacity, state.tokens + (elapsedMs * ratePerS) / 1000);
}

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
    try {
      await ctx.db.send(
        new UpdateCommand({
          TableName: ctx.settings.tableName,
          Key: rateBucketKey(jobType.name),
          UpdateExpression: 'SET tokens = :left, refilledAtMs = :now',
          ConditionExpression: seen
            ? 'tokens = :seenTokens AND refilledAtMs = :seenAt'
            : 'attribute_not_exists(refilledAtMs)',
          ExpressionAttributeValues: {
            ':left': left,
            ':now': nowMs,
            ...(seen ? { ':seenTokens': seen.tokens, ':seenAt': seen.refilledAtMs } : {}),
          },
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      seen = { tokens: left, refilledAtMs: nowMs };
      cache.set(jobType.name, seen);
      return granted;
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) {
        cache.delete(jobType.name);
        throw error;
      }
      seen = stateOf(error.Item ? unmarshallItem(error.Item) : undefined);
      cache.set(jobType.name, seen);
    }
  }
  return 0;
}

/** Puts back tokens a poll took but did not use (lost races, expired jobs, full slots). */
export async function returnRateTokens(ctx: QueueContext, type: string, unused: number, cache: RateBucketCache): Promise<void> {
  if (unused <= 0) return;
  const seen = cache.get(type);
  // What the bucket holds after the addition, if no other poller wrote in between; if one did, the next take's
  // compare-and-set fails and reads the bucket back.
  if (seen) cache.set(type, { tokens: roundedTokens(seen.tokens + unused), refilledAtMs: seen.refilledAtMs });
  await ctx.db.send(
    new UpdateCommand({
      TableName: ctx.settings.tableName,
      Key: rateBucketKey(type),
      UpdateExpression: 'ADD tokens :unused',
      ConditionExpression: 'attribute_exists(refilledAtMs)',
      ExpressionAttributeValues: { ':unused': unused },
    }),
  ).catch((error: unknown) => {
    // Tokens not put back only slow the type down; they are never an excess.
    if (!(error instanceof ConditionalCheckFailedException)) throw error;
  });
}
