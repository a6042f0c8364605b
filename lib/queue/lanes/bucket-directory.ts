/**
 * The bucket directory: which buckets of a lane hold entries, or did. Every
 * write that puts an entry into a lane bucket first records that bucket here,
 * once per process and bucket, so a record always lands before its entry.
 * Listings and stats look ahead through it (jobs scheduled for later, claims
 * that run for hours), where walking bucket by bucket would cost a query per
 * empty minute; pollers and sweepers walking a lane from a cursor far behind
 * (a poller outage, a type resumed after days) query only the recorded buckets
 * among those that settled, however many lie between (queue/lanes/lane-walk.ts). A
 * record expires a while after its bucket ends, and walks know from when.
 */
import { bucketOf, bucketStartMs, laneBucketOf, laneShards, type Lane } from '../../store/keys.js';
import { advanceCursor, readLaneCursor, type LaneCursor } from '../../store/due-index.js';
import { putDirectoryEntry, recordedBuckets } from '../../store/listing.js';
import type { QueueContext } from '../context.js';

/**
 * How long after a cursor first advances with this release the directory's records are trusted: writes begun by
 * code that did not record (a release before this one) land within it, as no Lambda invocation runs longer than
 * 15 minutes and a stack update replaces every function well within the hour.
 */
export const DIRECTORY_ADOPTION_MS = 3_600_000;

/**
 * Moves a lane shard's cursor from `from` to `to`, compare-and-set (store/due-index.ts). A cursor that has not
 * adopted the directory yet (`directoryFromBucket` undefined, as read with it) adopts it from
 * DIRECTORY_ADOPTION_MS after now on; one that has keeps where it adopted it.
 */
export function advanceLaneCursor(
  ctx: QueueContext,
  lane: Lane,
  shard: number,
  move: { from: number | undefined; to: number; directoryFromBucket: number | undefined },
): Promise<boolean> {
  const directoryFromBucket = move.directoryFromBucket ?? bucketOf(ctx.nowMs() + DIRECTORY_ADOPTION_MS, ctx.settings.bucketMs);
  return advanceCursor(ctx, lane, shard, { from: move.from, to: move.to, directoryFromBucket });
}

/**
 * From when the lanes of a job type made at `createdAtMs` may trust the bucket directory (JobType
 * directoryFromMs). Every write into them is made after the type exists, so from its creation, unless a release
 * that did not record the directory may still be writing: a cursor waits for that, from its first advance, as
 * long as DIRECTORY_ADOPTION_MS. Which releases run is about the deployment, not the lane, so the claim lane,
 * which every deployment's sweeper walks, tells it with one read: adopted already (the usual case, and every
 * deployment an hour into a recording release), the type trusts the directory from its creation, or from where
 * the claim lane will; moved only by a release that did not record (a deploy from one under way), from an hour
 * on, as a first advance now would; never moved, no sweeper has walked the table, so nothing older than this
 * release has written to it, and the type trusts the directory from its creation.
 */
export async function directoryFromMsOfNewType(ctx: QueueContext, createdAtMs: number): Promise<number> {
  const claims = await readLaneCursor(ctx, { kind: 'claims' }, 0);
  if (claims.directoryFromBucket !== undefined) return Math.max(createdAtMs, bucketStartMs(claims.directoryFromBucket, ctx.settings.bucketMs));
  return claims.bucket === undefined ? createdAtMs : createdAtMs + DIRECTORY_ADOPTION_MS;
}

/**
 * A lane shard's cursor, as a walk reads it. Where the lane's type says from when its directory is complete
 * (`typeDirectoryFromMs`, JobType directoryFromMs), the walk trusts it from there or from where the cursor
 * adopted it, whichever comes first: a type first polled a week after it was made walks one directory read and
 * the buckets it recorded, and its cursor's first advance keeps that start.
 *
 * Otherwise (the claim lane, a type made before types said), a shard no walk has moved yet (one added by raising
 * SHARDS) would adopt the directory only an hour after its first advance, and walk from its type's creation
 * bucket by bucket until then: a week of them for a shard added to a type a week old. Where another
 * shard of the lane has adopted the directory, the directory is complete from there for this shard too: the
 * reason a cursor waits before trusting it (writes begun by a release that did not record) is about the releases
 * running, not about the shard, and every write into the lane records its bucket whichever shard it goes to. So
 * such a shard takes the earliest start the others adopted, and walks the directory's buckets as they do.
 */
export async function readWalkCursor(ctx: QueueContext, lane: Lane, shard: number, typeDirectoryFromMs?: number): Promise<LaneCursor> {
  const read = await readLaneCursor(ctx, lane, shard);
  if (typeDirectoryFromMs !== undefined) {
    const typeFromBucket = bucketOf(typeDirectoryFromMs, ctx.settings.bucketMs);
    return { ...read, directoryFromBucket: Math.min(read.directoryFromBucket ?? typeFromBucket, typeFromBucket) };
  }
  if (read.bucket !== undefined || read.directoryFromBucket !== undefined) return read;
  const others = laneShards(ctx.settings, lane).filter((other) => other !== shard);
  const adopted = (await Promise.all(others.map((other) => readLaneCursor(ctx, lane, other)))).flatMap((cursor) => cursor.directoryFromBucket ?? []);
  return adopted.length > 0 ? { ...read, directoryFromBucket: Math.min(...adopted) } : read;
}

/**
 * How long a bucket's record is kept after the bucket ends, before DynamoDB TTL removes it. No bucket has a
 * time after which it is sure to be empty: a paused type keeps its jobs queued, a sweeper down leaves lapsed
 * claims where they are, for as long as that lasts. So a record's expiry is safe only because walks know it:
 * a walk goes past an unrecorded bucket unread only where the record, had there been one, could not have
 * expired yet (firstUnexpiredDirectoryBucket), and queries the older buckets one by one, as it did before
 * the directory. A cursor more than this far behind (a type paused for longer) pays that for the excess. Counted
 * from the bucket's end, not the write: a job enqueued a year ahead keeps its record until a lifetime after it falls due.
 */
export const DIRECTORY_RECORD_LIFETIME_MS = 30 * 86_400_000;

/**
 * DynamoDB removes an item at some time after its TTL has passed, never before
 * (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/TTL.html); this covers a walker's clock
 * running behind DynamoDB's.
 */
const DIRECTORY_EXPIRY_MARGIN_MS = 3_600_000;

/** When the record of `bucket` may go: DIRECTORY_RECORD_LIFETIME_MS after the bucket ends, in epoch seconds as TTL wants. */
export function directoryPurgeAtS(bucket: number, bucketMs: number): number {
  return Math.ceil((bucketStartMs(bucket + 1, bucketMs) + DIRECTORY_RECORD_LIFETIME_MS) / 1000);
}

/**
 * The first bucket whose record, had one been written, is still there at `nowMs`: from it on, a bucket without
 * a record held no entries. Its record's purge time, (bucket + 1) × bucketMs + lifetime, is past
 * nowMs + margin; that of the bucket before it is not.
 */
export function firstUnexpiredDirectoryBucket(nowMs: number, bucketMs: number): number {
  return Math.floor((nowMs + DIRECTORY_EXPIRY_MARGIN_MS - DIRECTORY_RECORD_LIFETIME_MS) / bucketMs);
}

/** Buckets up to this many past the current one are walked by listings and stats, never looked up. */
export const WALKED_BUCKETS_AHEAD = 1;

/** Buckets this process recorded already, per table; bounded, since forgetting one only costs a repeated write. */
const recorded = new Set<string>();
const MAX_REMEMBERED = 10_000;
/** Records being written, so the claims of one poll, made side by side, write their bucket's record once. */
const recording = new Map<string, Promise<void>>();

/**
 * Writes a lane entry with `write`: records the bucket of `partition`, a lane's, first (if that fails, nothing is
 * written). It asks no one to be awake: the waker reads the entry from the table's stream once written and makes
 * sure the poller of its shard, or the sweeper for a claim, finds it in time (queue/wake/wake-on-write.ts), so no
 * enqueue, claim, renewal or end waits on a wake item or a Lambda invoke. Writes that put no lane entry
 * (`partition` undefined) are just written.
 */
export async function writeLaneEntry<T>(ctx: QueueContext, partition: unknown, write: () => Promise<T>): Promise<T> {
  const found = typeof partition === 'string' ? laneBucketOf(partition) : undefined;
  if (found) await recordBucket(ctx, found);
  return write();
}

async function recordBucket(ctx: QueueContext, found: { lane: Lane; bucket: number }): Promise<void> {
  const memo = `${ctx.settings.tableName}\u0000${JSON.stringify({ lane: found.lane, bucket: found.bucket })}`;
  if (recorded.has(memo)) return;
  let written = recording.get(memo);
  if (!written) {
    written = putDirectoryEntry(ctx, found.lane, found.bucket, directoryPurgeAtS(found.bucket, ctx.settings.bucketMs))
      .then(() => {
        if (recorded.size >= MAX_REMEMBERED) recorded.clear();
        recorded.add(memo);
      })
      .finally(() => recording.delete(memo));
    recording.set(memo, written);
  }
  await written;
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
