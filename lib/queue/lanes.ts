/**
 * Walking a lane's buckets from its cursor up to now. The cursor only passes a
 * bucket that was found empty and ended longer ago than the safety margin, so
 * no write still in flight can land behind it (DESIGN §4.5).
 */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { GetCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { QueueContext } from './context.js';
import { bucketOf, bucketStartMs, cursorKey, dueUpToSortKey, DUE_INDEX, lanePartition, type Lane } from '../store/keys.js';

export interface DueEntry {
  /** The job's table key. */
  pk: string;
  sk: string;
  gsi1pk: string;
  gsi1sk: string;
  /** Projected into the index so the poller can order and throttle without reading jobs. */
  priority?: number;
  weight?: number;
  throttleKey?: string;
}

export async function readCursor(ctx: QueueContext, lane: Lane, shard: number): Promise<number | undefined> {
  const { Item } = await ctx.db.send(
    new GetCommand({ TableName: ctx.settings.tableName, Key: cursorKey(lane, shard), ConsistentRead: true }),
  );
  return typeof Item?.bucket === 'number' ? Item.bucket : undefined;
}

/**
 * The oldest bucket any shard's cursor of the lane still holds, never before `floorBucket`, which is also where a
 * shard without a cursor starts. `run` wraps each read, so a caller can bound the calls it has in flight.
 */
export async function oldestCursorBucket(
  ctx: QueueContext,
  lane: Lane,
  floorBucket: number,
  run: <T>(call: () => Promise<T>) => Promise<T> = (call) => call(),
): Promise<number> {
  const shards = Array.from({ length: ctx.settings.shards }, (_, shard) => shard);
  const cursors = await Promise.all(shards.map((shard) => run(() => readCursor(ctx, lane, shard))));
  return Math.max(floorBucket, Math.min(...cursors.map((cursor) => cursor ?? floorBucket)));
}

/** Compare-and-set, so two pollers advancing at once cannot move it past a bucket neither scanned. */
export async function advanceCursor(
  ctx: QueueContext,
  lane: Lane,
  shard: number,
  from: number | undefined,
  to: number,
): Promise<boolean> {
  try {
    await ctx.db.send(
      new UpdateCommand({
        TableName: ctx.settings.tableName,
        Key: cursorKey(lane, shard),
        UpdateExpression: 'SET #bucket = :to',
        ConditionExpression: from === undefined ? 'attribute_not_exists(#bucket)' : '#bucket = :from',
        ExpressionAttributeNames: { '#bucket': 'bucket' },
        ExpressionAttributeValues: from === undefined ? { ':to': to } : { ':to': to, ':from': from },
      }),
    );
    return true;
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException) return false;
    throw error;
  }
}

export async function queryDue(
  ctx: QueueContext,
  partition: string,
  nowMs: number,
  limit: number,
): Promise<DueEntry[]> {
  const { Items } = await ctx.db.send(
    new QueryCommand({
      TableName: ctx.settings.tableName,
      IndexName: DUE_INDEX,
      KeyConditionExpression: 'gsi1pk = :partition AND gsi1sk <= :upTo',
      ExpressionAttributeValues: { ':partition': partition, ':upTo': dueUpToSortKey(nowMs) },
      Limit: limit,
    }),
  );
  return (Items ?? []) as DueEntry[];
}

export interface LaneScan {
  entries: DueEntry[];
  /** The cursor as read, and where it may move now. */
  cursor: number | undefined;
  advanceTo: number | undefined;
}

/**
 * Due entries of one lane shard, oldest bucket first, at most `limit`.
 * `startBucket` is where to begin when the lane has no cursor yet.
 */
export async function scanLane(
  ctx: QueueContext,
  lane: Lane,
  shard: number,
  options: { startBucket: number; limit: number; cursor?: number | undefined },
): Promise<LaneScan> {
  const nowMs = ctx.nowMs();
  const { bucketMs, cursorSafetyMarginMs } = ctx.settings;
  const cursor = options.cursor;
  const first = cursor ?? options.startBucket;
  const current = bucketOf(nowMs, bucketMs);
  const entries: DueEntry[] = [];
  let advanceTo: number | undefined;
  let contiguousEmpty = true;
  for (let bucket = first; bucket <= current && entries.length < options.limit; bucket++) {
    const found = await queryDue(ctx, lanePartition(lane, bucket, shard), nowMs, options.limit - entries.length);
    entries.push(...found);
    const settled = bucketStartMs(bucket + 1, bucketMs) <= nowMs - cursorSafetyMarginMs;
    if (found.length === 0 && contiguousEmpty && settled) advanceTo = bucket + 1;
    else contiguousEmpty = false;
  }
  return { entries, cursor, advanceTo: advanceTo !== undefined && advanceTo !== cursor ? advanceTo : undefined };
}

/** Entries in the buckets just behind the cursor: the sweeper's backstop for a write that landed late. */
export async function scanBehindCursor(
  ctx: QueueContext,
  lane: Lane,
  shard: number,
  cursor: number,
  limit: number,
): Promise<DueEntry[]> {
  const nowMs = ctx.nowMs();
  const entries: DueEntry[] = [];
  for (let bucket = cursor - ctx.settings.backstopBuckets; bucket < cursor && entries.length < limit; bucket++) {
    entries.push(...(await queryDue(ctx, lanePartition(lane, bucket, shard), nowMs, limit - entries.length)));
  }
  return entries;
}
