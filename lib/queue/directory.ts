/**
 * The bucket directory: which buckets of a lane lie ahead of now and hold
 * entries. Pollers and sweepers walk a lane from its cursor up to the current
 * bucket, so they never need it; listings and stats also look ahead (jobs
 * scheduled for later, claims that run for hours), where walking bucket by
 * bucket would cost a query per empty minute. So every write that puts an
 * entry into a bucket beyond the next one first records that bucket here, once
 * per process: an entry due now, or a claim of the usual visibility timeout,
 * costs nothing extra.
 */
import { bucketOf, laneBucketOf, type Lane } from '../store/keys.js';
import { putDirectoryEntry, recordedBuckets } from '../store/listing.js';
import type { QueueContext } from './context.js';

/** Buckets up to this many past the current one are walked, never looked up: writers skip recording them. */
export const WALKED_BUCKETS_AHEAD = 1;

/** Buckets this process recorded already, per table; bounded, since forgetting one only costs a repeated write. */
const recorded = new Set<string>();
const MAX_REMEMBERED = 10_000;

/** Records the bucket of `partition` when it lies beyond the walked ones; call before writing the entry. */
export async function recordLaneBucket(ctx: QueueContext, partition: unknown): Promise<void> {
  if (typeof partition !== 'string') return;
  const found = laneBucketOf(partition);
  if (!found || found.bucket <= bucketOf(ctx.nowMs(), ctx.settings.bucketMs) + WALKED_BUCKETS_AHEAD) return;
  const memo = `${ctx.settings.tableName}\u0000${JSON.stringify(found)}`;
  if (recorded.has(memo)) return;
  await putDirectoryEntry(ctx, found.lane, found.bucket);
  if (recorded.size >= MAX_REMEMBERED) recorded.clear();
  recorded.add(memo);
}

/**
 * Every bucket of a lane that may hold entries, from `fromBucket` on: the walked ones up to a little past the
 * current bucket (the margin covers writers whose clocks run ahead), then the recorded ones beyond.
 */
export async function laneBuckets(ctx: QueueContext, lane: Lane, fromBucket: number): Promise<number[]> {
  const walkedUpTo = bucketOf(ctx.nowMs(), ctx.settings.bucketMs) + WALKED_BUCKETS_AHEAD + 1;
  const walked = Array.from({ length: Math.max(0, walkedUpTo - fromBucket + 1) }, (_, i) => fromBucket + i);
  const ahead = (await recordedBuckets(ctx, lane, Math.max(fromBucket, walkedUpTo + 1))).filter((bucket) => bucket > walkedUpTo);
  return [...walked, ...ahead];
}
