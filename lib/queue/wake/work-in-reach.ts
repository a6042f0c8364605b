/**
 * The earliest work of a lane within reach: an entry due (or a claim lapsing) by a time, in each recorded bucket
 * of the bucket directory its shards' walks have not passed (a bucket unrecorded holds nothing; one recorded may
 * since have emptied). One directory read per lane, and one query of one entry per recorded bucket and shard.
 */
import { bucketOf, lanePartition, sortKeyTimeMs, type Lane } from '../../store/keys.js';
import { queryDue } from '../../store/due-index.js';
import { recordedBuckets } from '../../store/listing.js';
import type { QueueContext } from '../context.js';
import type { EarliestWork } from './lease-keeper.js';

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
 * The earliest entry due by `untilMs` in the lanes, with the lane partitions holding one due within a second of it
 * (a timer armed for it checks them). The index may lag behind a write; the hold the waker asks for an entry just
 * written covers that.
 */
export async function earliestEntryDue(ctx: QueueContext, lanes: readonly LaneInReach[], untilMs: number): Promise<EarliestWork | undefined> {
  const partitions = (
    await Promise.all(
      lanes.map(async (lane) => {
        const buckets = await bucketsInReach(ctx, lane, untilMs);
        return buckets.flatMap((bucket) => lane.shards.filter((shard) => bucket >= lane.fromBucketOf(shard)).map((shard) => lanePartition(lane.lane, bucket, shard)));
      }),
    )
  ).flat();
  const firsts = await Promise.all(
    partitions.map(async (partition) => {
      const [entry] = await queryDue(ctx, partition, untilMs, 1);
      return entry ? [{ partition, dueAtMs: sortKeyTimeMs(entry.gsi1sk) }] : [];
    }),
  );
  const found = firsts.flat();
  if (found.length === 0) return undefined;
  const dueAtMs = Math.min(...found.map((entry) => entry.dueAtMs));
  return { dueAtMs, lanePartitions: found.filter((entry) => entry.dueAtMs < dueAtMs + 1_000).map((entry) => entry.partition) };
}
