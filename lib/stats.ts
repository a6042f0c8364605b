/**
 * Live stats of job types, read from the due index without a scan. A type's
 * waiting jobs sit in `Q#<type>#<bucket>#<shard>` partitions sorted by ready
 * time; the poller's cursor marks the oldest bucket of each shard that may
 * still hold any, and nothing waiting sits beyond the current bucket with a
 * ready time that has passed. So the due jobs are exactly the entries with a
 * sort key up to now in the buckets from each cursor to the current one.
 * (A write that landed behind a cursor is missed until the sweeper's backstop
 * moves it into the current bucket, as the poller misses it until then.)
 */
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import pLimit, { type LimitFunction } from 'p-limit';
import type { QueueContext } from './config.js';
import { bucketOf, DUE_INDEX, dueUpToSortKey, lanePartition, type Lane } from './keys.js';
import { readCursor } from './lanes.js';
import type { JobType } from './model.js';

export interface DueStats {
  /** Queued jobs whose ready time has passed. */
  due: number;
  /** How long the oldest of them has been due; 0 when none is. */
  oldestDueLagMs: number;
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

async function typeDueStats(ctx: QueueContext, jobType: JobType, nowMs: number, limit: LimitFunction): Promise<DueStats> {
  const { bucketMs, shards } = ctx.settings;
  const currentBucket = bucketOf(nowMs, bucketMs);
  const lane: Lane = { kind: 'queued', type: jobType.name };
  const partitions = await Promise.all(
    Array.from({ length: shards }, async (_, shard) => {
      // Without a cursor the lane was never walked: it starts at the type's creation, as the poller's walk does.
      const firstBucket = (await limit(() => readCursor(ctx, lane, shard))) ?? bucketOf(jobType.createdAtMs, bucketMs);
      return Array.from({ length: Math.max(0, currentBucket - firstBucket + 1) }, (_, i) => lanePartition(lane, firstBucket + i, shard));
    }),
  );
  const counts = await Promise.all(partitions.flat().map((partition) => limit(() => countDue(ctx, partition, nowMs))));
  // The oldest entry of the oldest partition is not always the oldest of all: a job enqueued with a past
  // run_after sits in the bucket current at its enqueue. So the first entry of every partition counts.
  const oldestReadyAtMs = counts.reduce((oldest, counted) => Math.min(oldest, counted.firstReadyAtMs ?? Infinity), Infinity);
  return {
    due: counts.reduce((sum, counted) => sum + counted.count, 0),
    oldestDueLagMs: oldestReadyAtMs === Infinity ? 0 : Math.max(0, nowMs - oldestReadyAtMs),
  };
}

/** Due stats of one type. Cost: see README, "Stats and the roster". */
export async function dueStatsOfType(ctx: QueueContext, jobType: JobType): Promise<DueStats> {
  return typeDueStats(ctx, jobType, ctx.nowMs(), pLimit(STATS_CALL_CONCURRENCY));
}

/** Due stats of each type, in the order given, all at one instant and under one bound on calls in flight. */
export async function dueStatsOf(ctx: QueueContext, jobTypes: JobType[]): Promise<{ jobType: JobType; stats: DueStats }[]> {
  const limit = pLimit(STATS_CALL_CONCURRENCY);
  const nowMs = ctx.nowMs();
  return Promise.all(jobTypes.map(async (jobType) => ({ jobType, stats: await typeDueStats(ctx, jobType, nowMs, limit) })));
}

export function dueStatsToApi(stats: DueStats): Record<string, unknown> {
  return { due: stats.due, oldest_due_lag_ms: stats.oldestDueLagMs };
}
