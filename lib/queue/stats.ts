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
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import pLimit, { type LimitFunction } from 'p-limit';
import type { QueueContext } from './context.js';
import { laneBuckets } from './directory.js';
import { bucketOf, DUE_INDEX, dueUpToSortKey, lanePartition, type Lane } from '../store/keys.js';
import { oldestCursorBucket, readCursor } from './lanes.js';
import type { JobType } from '../domain/model.js';
import { queryPages } from '../store/listing.js';
import { readInFlight } from './slots.js';

export interface TypeStats {
  /** Queued jobs whose ready time has passed. */
  due: number;
  /** How long the oldest of them has been due; 0 when none is. */
  oldestDueLagMs: number;
  /** Queued jobs whose ready time is still ahead. */
  scheduled: number;
  running: number;
  awaitingCallback: number;
  /** Summed weight of the claims holding the type's concurrency slots; null when the type has no limit. */
  inFlightWeight: number | null;
}

/** DynamoDB calls in flight at once for one stats request, so a request over many types cannot flood the table. */
const STATS_CALL_CONCURRENCY = 16;

interface PartitionCount {
  count: number;
  /** The ready time of its first due entry, when it has one. */
  firstReadyAtMs?: number;
}

const readyAtMsOf = (sortKey: string): number => Number(sortKey.slice(0, sortKey.indexOf('#')));

/**
 * The due entries of one partition: the first one read as an item (its sort key is the oldest ready time
 * there), the rest counted with Select COUNT, which reads every entry but returns none of them.
 */
async function countDue(ctx: QueueContext, partition: string, nowMs: number): Promise<PartitionCount> {
  const query = {
    TableName: ctx.settings.tableName,
    IndexName: DUE_INDEX,
    KeyConditionExpression: 'gsi1pk = :partition AND gsi1sk <= :upTo',
    ExpressionAttributeValues: { ':partition': partition, ':upTo': dueUpToSortKey(nowMs) },
  };
  const first = await ctx.db.send(new QueryCommand({ ...query, Limit: 1 }));
  const firstEntry = first.Items?.[0];
  if (!firstEntry) return { count: 0 };
  let count = 1;
  let startKey = first.LastEvaluatedKey;
  while (startKey) {
    const page = await ctx.db.send(new QueryCommand({ ...query, Select: 'COUNT', ExclusiveStartKey: startKey }));
    count += page.Count ?? 0;
    startKey = page.LastEvaluatedKey;
  }
  return { count, firstReadyAtMs: readyAtMsOf(String(firstEntry.gsi1sk)) };
}

/** Entries of a partition counted with Select COUNT, which reads each but returns none: all, or those after `afterSortKey`. */
async function countEntries(ctx: QueueContext, partition: string, afterSortKey?: string): Promise<number> {
  let count = 0;
  const pages = queryPages(ctx, {
    IndexName: DUE_INDEX,
    KeyConditionExpression: `gsi1pk = :partition${afterSortKey ? ' AND gsi1sk > :after' : ''}`,
    ExpressionAttributeValues: { ':partition': partition, ...(afterSortKey ? { ':after': afterSortKey } : {}) },
    Select: 'COUNT',
  });
  for await (const page of pages) count += page.Count ?? 0;
  return count;
}

/** The type's claims in one claim-lane partition, by status. */
async function countClaims(ctx: QueueContext, partition: string, type: string): Promise<{ running: number; awaitingCallback: number }> {
  const counted = { running: 0, awaitingCallback: 0 };
  const pages = queryPages(ctx, {
    IndexName: DUE_INDEX,
    KeyConditionExpression: 'gsi1pk = :partition',
    FilterExpression: '#type = :type',
    ProjectionExpression: '#status',
    ExpressionAttributeNames: { '#type': 'type', '#status': 'status' },
    ExpressionAttributeValues: { ':partition': partition, ':type': type },
  });
  for await (const page of pages) {
    for (const item of page.Items ?? []) {
      if (item.status === 'awaiting_callback') counted.awaitingCallback++;
      else counted.running++;
    }
  }
  return counted;
}

const sum = (values: number[]): number => values.reduce((total, value) => total + value, 0);

async function typeStats(ctx: QueueContext, jobType: JobType, nowMs: number, limit: LimitFunction): Promise<TypeStats> {
  const { bucketMs, shards } = ctx.settings;
  const shardList = Array.from({ length: shards }, (_, shard) => shard);
  const currentBucket = bucketOf(nowMs, bucketMs);
  const typeBucket = bucketOf(jobType.createdAtMs, bucketMs);
  const lane: Lane = { kind: 'queued', type: jobType.name };
  const claims: Lane = { kind: 'claims' };

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
    Promise.all(claimBuckets.flatMap((bucket) => shardList.map((shard) => limit(() => countClaims(ctx, lanePartition(claims, bucket, shard), jobType.name))))),
  ]);
  // The oldest entry of the oldest partition is not always the oldest of all: a job enqueued with a past
  // run_after sits in the bucket current at its enqueue. So the first entry of every partition counts.
  const oldestReadyAtMs = dueCounts.reduce((oldest, counted) => Math.min(oldest, counted.firstReadyAtMs ?? Infinity), Infinity);
  return {
    due: sum(dueCounts.map((counted) => counted.count)),
    oldestDueLagMs: oldestReadyAtMs === Infinity ? 0 : Math.max(0, nowMs - oldestReadyAtMs),
    scheduled: sum(scheduledNow) + sum(scheduledAhead),
    running: sum(claimCounts.map((counted) => counted.running)),
    awaitingCallback: sum(claimCounts.map((counted) => counted.awaitingCallback)),
    inFlightWeight: inFlight?.type ?? null,
  };
}

/** Stats of one type. Cost: see README, "Stats and the roster". */
export async function statsOfType(ctx: QueueContext, jobType: JobType): Promise<TypeStats> {
  return typeStats(ctx, jobType, ctx.nowMs(), pLimit(STATS_CALL_CONCURRENCY));
}

/** Stats of each type, in the order given, all at one instant and under one bound on calls in flight. */
export async function statsOfTypes(ctx: QueueContext, jobTypes: JobType[]): Promise<{ jobType: JobType; stats: TypeStats }[]> {
  const limit = pLimit(STATS_CALL_CONCURRENCY);
  const nowMs = ctx.nowMs();
  return Promise.all(jobTypes.map(async (jobType) => ({ jobType, stats: await typeStats(ctx, jobType, nowMs, limit) })));
}

export function typeStatsToApi(stats: TypeStats): Record<string, unknown> {
  return {
    due: stats.due,
    scheduled: stats.scheduled,
    running: stats.running,
    awaiting_callback: stats.awaitingCallback,
    oldest_due_lag_ms: stats.oldestDueLagMs,
    in_flight_weight: stats.inFlightWeight,
  };
}
