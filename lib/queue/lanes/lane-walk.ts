/**
 * Walking a lane's buckets from its cursor up to now. The cursor only passes a
 * bucket that was found empty and ended longer ago than the safety margin, so
 * no write still in flight can land behind it (invariant 5, docs/concepts/design.md#invariants). Among the settled
 * buckets, those the bucket directory has no record of (where a record could
 * not have expired yet) are known empty without a query (queue/lanes/bucket-directory.ts),
 * and a walk makes at most MAX_QUERIES_PER_SCAN queries, the cursor moving as
 * far as it got: a cursor days behind is caught up in a poll or two, and never
 * holds up a poll for long.
 */
import type { QueueContext } from '../context.js';
import { queryDue, readCursor, readLaneCursor, type DueEntry, type SettledGap } from '../../store/due-index.js';
import { recordedBuckets } from '../../store/listing.js';
import { firstUnexpiredDirectoryBucket } from './bucket-directory.js';
import { bucketOf, bucketStartMs, laneName, lanePartition, laneShards, type Lane } from '../../store/keys.js';

/**
 * The most due-index queries one scan of a lane shard makes (four hours of one-minute buckets the directory cannot
 * shorten, a few seconds at DynamoDB's latencies); a longer walk goes on from where it stopped.
 */
export const MAX_QUERIES_PER_SCAN = 240;

/**
 * A stretch of fewer settled buckets than this is queried rather than looked up in the directory first: so a
 * cursor kept up to date, or held by a short backlog, costs what it did.
 */
const DIRECTORY_WORTHWHILE_BUCKETS = 8;

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
  const shards = laneShards(ctx.settings, lane);
  const cursors = await Promise.all(shards.map((shard) => run(() => readCursor(ctx, lane, shard))));
  return Math.max(floorBucket, Math.min(...cursors.map((cursor) => cursor ?? floorBucket)));
}

/** Where a scan reads from just after an entry rather than from the cursor (a blocked run: blocked-runs.ts). */
export interface ScanAfter {
  bucket: number;
  entry: DueEntry;
  /** Set once the rest of the entry's bucket was found empty after it settled: reads begin at this bucket instead. */
  readFromBucket?: number;
}

function longer(a: SettledGap | undefined, b: SettledGap | undefined): SettledGap | undefined {
  if (!a || !b) return a ?? b;
  return b.untilBucket - b.fromBucket > a.untilBucket - a.fromBucket ? b : a;
}

export interface LaneScan {
  entries: DueEntry[];
  /** Whether the walk got to its last bucket, or to a whole page, before it ran out of queries. */
  caughtUp: boolean;
  /** The cursor as read, and where it may move now. */
  cursor: number | undefined;
  advanceTo: number | undefined;
  /** The settled empty buckets this scan found or went past that still lie ahead of the cursor, for the next scan. */
  gap: SettledGap | undefined;
  /** With `after`: where the next scan after the same entry may begin, when its bucket turned out settled and empty past it. */
  readAfterFromBucket: number | undefined;
  /**
   * The current bucket, when the scan read every bucket from where it began up to it and found them empty at least
   * LATE_WRITE_GRACE_MS after the current one began: a write in flight into them has landed by then, usually, and the
   * scans that follow may begin at it (ScanOptions's `readFromBucket`) until a scan from the cursor looks again.
   */
  quietBefore: number | undefined;
}

/**
 * How long after a bucket begins a write computed for the one before may still land there, usually (one write's
 * latency with the SDK's first retries). The cursor's safety margin covers the rest: a scan from the cursor finds it.
 */
export const LATE_WRITE_GRACE_MS = 5_000;

export interface ScanOptions {
  /** Where to begin when the lane has no cursor yet. */
  startBucket: number;
  limit: number;
  cursor?: number | undefined;
  upToMs?: number;
  /** The walk stops here too, as when it runs out of queries: the poller's invocation ends soon after. */
  stopAtMs?: number | undefined;
  after?: ScanAfter;
  gap?: SettledGap;
  /** Where the bucket directory is complete from, for this lane shard (LaneCursor). */
  directoryFromBucket?: number | undefined;
  /**
   * Begin here rather than at the cursor (never before it), the buckets between found empty lately (LaneScan's
   * `quietBefore`): the cursor does not move, since the scan does not look at them.
   */
  readFromBucket?: number | undefined;
}

/**
 * Whether a bucket may be gone past unread: it settled, lies where the directory is complete and its record
 * could not have expired, and has no record there. The directory is read a stretch at a time, from the first
 * bucket asked about up to the last settled one or to where `gap` begins (the walk goes past that unread
 * anyway), and only for a stretch worth a read.
 */
function directoryLookup(ctx: QueueContext, lane: Lane, nowMs: number, options: Pick<ScanOptions, 'directoryFromBucket' | 'gap'>) {
  const { gap } = options;
  // Older records may have expired (queue/lanes/bucket-directory.ts): a missing one says nothing there.
  const trustedFromBucket =
    options.directoryFromBucket === undefined ? undefined : Math.max(options.directoryFromBucket, firstUnexpiredDirectoryBucket(nowMs, ctx.settings.bucketMs));
  const lastSettled = bucketOf(nowMs - ctx.settings.cursorSafetyMarginMs, ctx.settings.bucketMs) - 1;
  let read: { untilBucket: number; recorded: Set<number> } | undefined;
  return async (bucket: number): Promise<boolean> => {
    if (trustedFromBucket === undefined || bucket < trustedFromBucket || bucket > lastSettled) return false;
    if (!read || bucket > read.untilBucket) {
      const untilBucket = gap && gap.fromBucket > bucket ? Math.min(lastSettled, gap.fromBucket - 1) : lastSettled;
      if (untilBucket - bucket + 1 < DIRECTORY_WORTHWHILE_BUCKETS) return false;
      read = { untilBucket, recorded: new Set(await recordedBuckets(ctx, lane, bucket, { untilBucket, consistentRead: true })) };
    }
    return !read.recorded.has(bucket);
  };
}

/**
 * Due entries of one lane shard, oldest bucket first, at most `limit`: those due by now, or by `upToMs` when
 * it is later (entries falling due soon; in the next bucket only when the lane has entries already, so an idle
 * lane costs what it did). The cursor's advance depends on now only. With `after` (an entry of the lane), the
 * scan begins just after it and never moves the cursor, having not looked at what lies before. A `gap` is gone
 * past unread while the cursor is held behind it, so a backlog that holds the cursor for hours is not followed
 * by a query per bucket since. Settled buckets the directory has no record of are gone past the same way, and
 * a walk that runs out of queries ends early (`caughtUp` false), having moved the cursor as far as it got.
 */
export async function scanLane(ctx: QueueContext, lane: Lane, shard: number, options: ScanOptions): Promise<LaneScan> {
  const nowMs = ctx.nowMs();
  const upToMs = Math.max(nowMs, options.upToMs ?? nowMs);
  const { bucketMs, cursorSafetyMarginMs } = ctx.settings;
  const { cursor, after, gap } = options;
  const fromCursor = cursor ?? options.startBucket;
  const first = after ? (after.readFromBucket ?? after.bucket) : Math.max(fromCursor, options.readFromBucket ?? fromCursor);
  const last = bucketOf(upToMs, bucketMs);
  const current = bucketOf(nowMs, bucketMs);
  const settled = (bucket: number): boolean => bucketStartMs(bucket + 1, bucketMs) <= nowMs - cursorSafetyMarginMs;
  const entries: DueEntry[] = [];
  let advanceTo: number | undefined;
  let readAfterFromBucket: number | undefined;
  // Whether everything from the cursor up to here was found empty and settled: only then may the cursor move on.
  let contiguousEmpty = !after && first === fromCursor;
  let foundBeforeCurrent = false;
  // The settled empty buckets met since the last bucket that was not, and the longest such stretch closed so far.
  let open: SettledGap | undefined;
  let longest: SettledGap | undefined;
  const close = (): void => {
    longest = longer(longest, open);
    open = undefined;
  };
  const unrecorded = directoryLookup(ctx, lane, nowMs, options);
  let queries = 0;
  let caughtUp = true;
  for (let bucket = first; bucket <= last && entries.length < options.limit; bucket++) {
    // A lane that holds nothing due is not read into the next bucket: that would cost an idle lane a query.
    if (bucket > current && entries.length === 0) break;
    if (gap && bucket >= gap.fromBucket && bucket < gap.untilBucket && !contiguousEmpty) {
      open = { fromBucket: open?.fromBucket ?? gap.fromBucket, untilBucket: gap.untilBucket };
      bucket = gap.untilBucket - 1;
      continue;
    }
    const startAfter = after?.bucket === bucket && after.readFromBucket === undefined ? after.entry : undefined;
    let found: DueEntry[] = [];
    if (startAfter || !(await unrecorded(bucket))) {
      if (queries === MAX_QUERIES_PER_SCAN || ctx.nowMs() >= (options.stopAtMs ?? Infinity)) {
        caughtUp = false;
        break;
      }
      queries++;
      found = await queryDue(ctx, lanePartition(lane, bucket, shard), upToMs, options.limit - entries.length, startAfter);
    }
    entries.push(...found);
    if (bucket < current && found.length > 0) foundBeforeCurrent = true;
    const emptyAndSettled = found.length === 0 && settled(bucket);
    if (emptyAndSettled && startAfter) readAfterFromBucket = bucket + 1;
    else if (emptyAndSettled && contiguousEmpty) advanceTo = bucket + 1;
    else if (emptyAndSettled) open = { fromBucket: open?.fromBucket ?? bucket, untilBucket: bucket + 1 };
    else {
      contiguousEmpty = false;
      close();
    }
  }
  close();
  const ahead = (candidate: SettledGap | undefined): SettledGap | undefined =>
    candidate && (cursor === undefined || candidate.fromBucket > cursor) ? candidate : undefined;
  return {
    entries,
    caughtUp,
    cursor,
    advanceTo: advanceTo !== undefined && advanceTo !== cursor ? advanceTo : undefined,
    gap: longer(ahead(longest), ahead(gap)),
    readAfterFromBucket,
    quietBefore: caughtUp && !after && !foundBeforeCurrent && nowMs >= bucketStartMs(current, bucketMs) + LATE_WRITE_GRACE_MS ? current : undefined,
  };
}

/** Where each lane shard's cursor adopted the directory, per table; bounded, since forgetting one costs a read. */
const adoptions = new Map<string, number>();
const MAX_REMEMBERED_ADOPTIONS = 10_000;

/** Where a lane shard's cursor adopted the directory: set by its first advance and never moved, so read once a process. */
async function directoryAdoptedFrom(ctx: QueueContext, lane: Lane, shard: number): Promise<number | undefined> {
  const memo = `${ctx.settings.tableName}\u0000${laneName(lane)}\u0000${shard}`;
  const remembered = adoptions.get(memo);
  if (remembered !== undefined) return remembered;
  const { directoryFromBucket } = await readLaneCursor(ctx, lane, shard);
  if (directoryFromBucket !== undefined) {
    if (adoptions.size >= MAX_REMEMBERED_ADOPTIONS) adoptions.clear();
    adoptions.set(memo, directoryFromBucket);
  }
  return directoryFromBucket;
}

/**
 * Entries in the buckets just behind the cursor: the sweeper's backstop for a write that landed late. A late
 * write records its bucket in the directory before its entry as any other does (queue/lanes/bucket-directory.ts), so where
 * the directory is complete a bucket it has no record of is gone past unread: an idle lane shard costs a
 * directory read a sweep rather than a query per backstop bucket, which is what lets the claim lane have more
 * shards (CLAIM_SHARDS) without costing an idle sweep more.
 */
export async function scanBehindCursor(
  ctx: QueueContext,
  lane: Lane,
  shard: number,
  cursor: number,
  limit: number,
): Promise<DueEntry[]> {
  const nowMs = ctx.nowMs();
  const unrecorded = directoryLookup(ctx, lane, nowMs, { directoryFromBucket: await directoryAdoptedFrom(ctx, lane, shard) });
  const entries: DueEntry[] = [];
  for (let bucket = cursor - ctx.settings.backstopBuckets; bucket < cursor && entries.length < limit; bucket++) {
    if (await unrecorded(bucket)) continue;
    entries.push(...(await queryDue(ctx, lanePartition(lane, bucket, shard), nowMs, limit - entries.length)));
  }
  return entries;
}
