/**
 * Live stats of job types, read from the due index without a scan.
 *
 * Due and scheduled jobs: a type's waiting jobs sit in `Q#<type>#<bucket>#<shard>` partitions sorted by
 * ready time; the poller's cursor marks the oldest bucket of each shard that may still hold any, and an entry
 * lands in the bucket of its ready time or, when that has passed, of its enqueue. So every entry of a bucket
 * before the current one is due, the current bucket holds both, and later buckets (walked a little way, then
 * found through the bucket directory) hold only scheduled jobs. (A write that landed behind a cursor is missed
 * until the sweeper's backstop moves it into the current bucket, as the poller misses it until then.)
 *
 * Running and awaiting jobs: the claim lane, shared by all types, from its oldest cursor on, filtered by type.
 */
import pLimit, { type LimitFunction } from 'p-limit';
import type { QueueContext } from '../context.js';
import { laneBuckets } from '../lanes/bucket-directory.js';
import { bucketOf, dueUpToSortKey, lanePartition, laneShards, sortKeyTimeMs, type Lane } from '../../store/keys.js';
import type { TypeStats } from '../../domain/stats.js';
import { oldestCursorBucket } from '../lanes/lane-walk.js';
import { claimStatuses, countDue, countEntries, readCursor } from '../../store/due-index.js';
import type { JobType } from '../../domain/job-type.js';
import { readInFlight } from '../../store/counters.js';


/** DynamoDB calls in flight at once for one stats request, so a request over many types cannot flood the table. */
const STATS_CALL_CONCURRENCY = 16;

/** The type's claims in one claim-lane partition, by status. */
async function countClaims(ctx: QueueContext, partition: string, type: string): Promise<{ running: number; awaitingCallback: number }> {
  const statuses = await claimStatuses(ctx, partition, type);
  const awaitingCallback = statuses.filter((status) => status === 'awaiting_callback').length;
  return { running: statuses.length - awaitingCallback, awaitingCallback };
}

const sum = (values: number[]): number => values.reduce((total, value) => total + value, 0);

async function typeStats(ctx: QueueContext, jobType: JobType, nowMs: number, limit: LimitFunction): Promise<TypeStats> {
  const { bucketMs, shards } = ctx.settings;
  const shardList = Array.from({ length: shards }, (_, shard) => shard);
  const currentBucket = bucketOf(nowMs, bucketMs);
  const typeBucket = bucketOf(jobType.createdAtMs, bucketMs);
  const lane: Lane = { kind: 'queued', type: jobType.name };
  const claims: Lane = { kind: 'claims' };
  const claimShardList = laneShards(ctx.settings, claims);

  const duePartitions = await Promise.all(
    shardList.map(async (shard) => {
      // Without a cursor the lane was never walked: it starts at the type's creation, as the poller's walk does.
      const firstBucket = (await limit(() => readCursor(ctx, lane, shard))) ?? typeBucket;
      return Array.from({ length: Math.max(0, currentBucket - firstBucket + 1) }, (_, i) => lanePartition(lane, firstBucket + i, shard));
    }),
  );
  // Claims of this type cannot be older than the type.
  const firstClaimBucket = await oldestCursorBucket(ctx, claims, typeBucket, limit);
  const [aheadBuckets, claimBuckets, inFlight] = await Promise.all([
    limit(() => laneBuckets(ctx, lane, currentBucket + 1)),
    limit(() => laneBuckets(ctx, claims, firstClaimBucket)),
    jobType.concurrency === null ? undefined : limit(() => readInFlight(ctx, jobType.name, [])),
  ]);

  const [dueCounts, scheduledNow, scheduledAhead, claimCounts] = await Promise.all([
    Promise.all(duePartitions.flat().map((partition) => limit(() => countDue(ctx, partition, nowMs)))),
    Promise.all(shardList.map((shard) => limit(() => countEntries(ctx, lanePartition(lane, currentBucket, shard), dueUpToSortKey(nowMs))))),
    Promise.all(aheadBuckets.flatMap((bucket) => shardList.map((shard) => limit(() => countEntries(ctx, lanePartition(lane, bucket, shard)))))),
    Promise.all(claimBuckets.flatMap((bucket) => claimShardList.map((shard) => limit(() => countClaims(ctx, lanePartition(claims, bucket, shard), jobType.name))))),
  ]);
  // The oldest entry of the oldest partition is not always the oldest of all: a job enqueued with a past
  // run_after sits in the bucket current at its enqueue. So the first entry of every partition counts.
  const oldestReadyAtMs = dueCounts.reduce((oldest, counted) => Math.min(oldest, counted.firstSortKey === undefined ? Infinity : sortKeyTimeMs(counted.firstSortKey)), Infinity);
  return {
    due: sum(dueCounts.map((counted) => counted.count)),
    oldestDueLagMs: oldestReadyAtMs === Infinity ? 0 : Math.max(0, nowMs - oldestReadyAtMs),
    scheduled: sum(scheduledNow) + sum(scheduledAhead),
    running: sum(claimCounts.map((counted) => counted.running)),
    awaitingCallback: sum(claimCounts.map((counted) => counted.awaitingCallback)),
    inFlightWeight: inFlight?.type ?? null,
  };
}

/** Stats of one type. Cost: see docs/operations/metrics.md#stats-and-the-roster. */
export async function statsOfType(ctx: QueueContext, jobType: JobType): Promise<TypeStats> {
  return typeStats(ctx, jobType, ctx.nowMs(), pLimit(STATS_CALL_CONCURRENCY));
}

/** Stats of each type, in the order given, all at one instant and under one bound on calls in flight. */
export async function statsOfTypes(ctx: QueueContext, jobTypes: JobType[]): Promise<{ jobType: JobType; stats: TypeStats }[]> {
  const limit = pLimit(STATS_CALL_CONCURRENCY);
  const nowMs = ctx.nowMs();
  return Promise.all(jobTypes.map(async (jobType) => ({ jobType, stats: await typeStats(ctx, jobType, nowMs, limit) })));
}
