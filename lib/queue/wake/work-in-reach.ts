/**
 * The earliest work of a lane within reach: an entry due (or a claim lapsing) by a time, in each recorded bucket
 * of the bucket directory its shards' walks have not passed (a bucket unrecorded holds nothing; one recorded may
 * since have emptied). One directory read per lane, and one query of one entry per recorded bucket and shard.
 */
import { bucketOf, lanePartition, sortKeyTimeMs, type Lane } from '../../store/keys.js';
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

/** The buckets of `lane` recorded from its earliest walk on, up to the bucket of `untilMs`. */
async function bucketsInReach(ctx: QueueContext, lane: LaneInReach, untilMs: number): Promise<number[]> {
  const fromBucket = Math.min(...lane.shards.map(lane.fromBucketOf));
  const untilBucket = bucketOf(untilMs, ctx.settings.bucketMs);
  if (fromBucket > untilBucket) return [];
  return recordedBuckets(ctx, lane.lane, fromBucket, { untilBucket, consistentRead: true });
}

/**
 * When the earliest entry due by `untilMs` in the lanes falls due. The index may lag behind a write; the hold the
 * waker asks for an entry just written covers that.
 */
export async function earliestEntryDueAtMs(ctx: QueueContext, lanes: readonly LaneInReach[], untilMs: number): Promise<number | undefined> {
  const partitions = (
    await Promise.all(
      lanes.map(async (lane) => {
        const buckets = await bucketsInReach(ctx, lane, untilMs);
        return buckets.flatMap((bucket) => lane.shards.filter((shard) => bucket >= lane.fromBucketOf(shard)).map((shard) => lanePartition(lane.lane, bucket, shard)));
      }),
    )
  ).flat();
  const firsts = await Promise.all(partitions.map(async (partition) => (await queryDue(ctx, partition, untilMs, 1)).map((entry) => sortKeyTimeMs(entry.gsi1sk))));
  const found = firsts.flat();
  return found.length > 0 ? Math.min(...found) : undefined;
}
