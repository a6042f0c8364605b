/**
 * Walking a lane's buckets from its cursor up to now. The cursor only passes a
 * bucket that was found empty and ended longer ago than the safety margin, so
 * no write still in flight can land behind it (DESIGN §4.5).
 */
import type { QueueContext } from './context.js';
import { queryDue, readCursor, type DueEntry } from '../store/due-index.js';
import { bucketOf, bucketStartMs, lanePartition, type Lane } from '../store/keys.js';

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

export interface LaneScan {
  entries: DueEntry[];
  /** The cursor as read, and where it may move now. */
  cursor: number | undefined;
  advanceTo: number | undefined;
}

/**
 * Due entries of one lane shard, oldest bucket first, at most `limit`: those due by now, or by `upToMs` when
 * it is later (entries falling due soon; in the next bucket only when the lane has entries already, so an idle
 * lane costs what it did). `startBucket` is where to begin when the lane has no cursor yet. The cursor's
 * advance depends on now only. With `after` (an entry of the lane), the scan begins just after it and never
 * moves the cursor, having not looked at what lies before.
 */
export async function scanLane(
  ctx: QueueContext,
  lane: Lane,
  shard: number,
  options: { startBucket: number; limit: number; cursor?: number | undefined; upToMs?: number; after?: { bucket: number; entry: DueEntry } },
): Promise<LaneScan> {
  const nowMs = ctx.nowMs();
  const upToMs = Math.max(nowMs, options.upToMs ?? nowMs);
  const { bucketMs, cursorSafetyMarginMs } = ctx.settings;
  const cursor = options.cursor;
  const { after } = options;
  const first = after?.bucket ?? cursor ?? options.startBucket;
  const last = bucketOf(upToMs, bucketMs);
  const entries: DueEntry[] = [];
  let advanceTo: number | undefined;
  let contiguousEmpty = true;
  const current = bucketOf(nowMs, bucketMs);
  for (let bucket = first; bucket <= last && entries.length < options.limit; bucket++) {
    // A lane that holds nothing due is not read into the next bucket: that would cost an idle lane a query.
    if (bucket > current && entries.length === 0) break;
    const startAfter = after?.bucket === bucket ? after.entry : undefined;
    const found = await queryDue(ctx, lanePartition(lane, bucket, shard), upToMs, options.limit - entries.length, startAfter);
    entries.push(...found);
    const settled = bucketStartMs(bucket + 1, bucketMs) <= nowMs - cursorSafetyMarginMs;
    if (found.length === 0 && contiguousEmpty && settled && !after) advanceTo = bucket + 1;
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
