/**
 * Whether a lane holds work within reach: an entry due (or a claim lapsing) by a time. A minute tick asks the
 * bucket directory only (a record of a bucket in reach may hold work); an awake poller or sweeper about to sleep
 * asks the index too, in each recorded bucket it has not walked past (a bucket recorded may since have emptied).
 */
import { bucketOf, lanePartition, type Lane } from '../../store/keys.js';
import { queryDue } from '../../store/due-index.js';
import { recordedBuckets } from '../../store/listing.js';
import type { QueueContext } from '../context.js';

export interface LaneInReach {
  lane: Lane;
  /** The shards of the lane to look at: the partition's, for a poller. */
  shards: number[];
  /** Where each shard's walk stands: nothing before it is in reach. */
  fromBucketOf: (shard: number) => number;
}

/** The buckets of `lane` recorded from its earliest walk on, up to the bucket of `untilMs`; the first `limit` only, when given. */
async function bucketsInReach(ctx: QueueContext, lane: LaneInReach, untilMs: number, limit?: number): Promise<number[]> {
  const fromBucket = Math.min(...lane.shards.map(lane.fromBucketOf));
  const untilBucket = bucketOf(untilMs, ctx.settings.bucketMs);
  if (fromBucket > untilBucket) return [];
  return recordedBuckets(ctx, lane.lane, fromBucket, { untilBucket, consistentRead: true, ...(limit !== undefined ? { limit } : {}) });
}

/** Some lane has a bucket recorded within reach of `untilMs`, at or past where its walk stands: one record answers. */
export async function anyLaneRecordedBy(ctx: QueueContext, lanes: readonly LaneInReach[], untilMs: number): Promise<boolean> {
  const found = await Promise.all(lanes.map((lane) => bucketsInReach(ctx, lane, untilMs, 1)));
  return found.some((buckets) => buckets.length > 0);
}

/**
 * Some lane has an entry due by `untilMs` in a recorded bucket its shard's walk has not passed: one query of one
 * entry per such bucket and shard. The index may lag behind a write; queue/wake/ensure-awake.ts's hold covers that.
 */
export async function anyEntryDueBy(ctx: QueueContext, lanes: readonly LaneInReach[], untilMs: number): Promise<boolean> {
  const looks = await Promise.all(
    lanes.map(async (lane) => {
      const buckets = await bucketsInReach(ctx, lane, untilMs);
      const partitions = buckets.flatMap((bucket) => lane.shards.filter((shard) => bucket >= lane.fromBucketOf(shard)).map((shard) => lanePartition(lane.lane, bucket, shard)));
      const entries = await Promise.all(partitions.map((partition) => queryDue(ctx, partition, untilMs, 1)));
      return entries.some((found) => found.length > 0);
    }),
  );
  return looks.some(Boolean);
}
