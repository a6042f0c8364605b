/**
 * Paging through a type's jobs by status, without a scan. Each status lives in
 * a family of `due` index partitions already: queued jobs in the type's
 * waiting lane, running and awaiting ones in the claim lane, finished ones in
 * their status's listing partitions. A page reads index entries in order,
 * merging shards, then the jobs themselves with one batch get.
 */
import type { QueueContext } from '../context.js';
import { laneBuckets } from '../lanes/bucket-directory.js';
import { cursorFields, encodeCursor, invalidCursor } from '../../domain/cursor.js';
import { ValidationError } from '../../domain/errors.js';
import { itemToJob } from '../../store/items.js';
import { pageOfPartition, type IndexEntry } from '../../store/due-index.js';
import { bucketOf, finishedPartition, jobKey, lanePartition, laneShards, padEpochMs, parseJobPk, type Lane } from '../../store/keys.js';
import { oldestCursorBucket } from '../lanes/lane-walk.js';
import { batchGetItems } from '../../store/send.js';
import { isTerminal, type Job, type JobStatus } from '../../domain/job.js';
import type { JobType } from '../../domain/job-type.js';


/** Index partitions one page may query before it returns what it found, with a cursor to go on from. */
const MAX_QUERIES_PER_PAGE = 200;

export interface JobPage {
  jobs: Job[];
  /** Where the next page starts; undefined on the last page. */
  nextCursor: string | undefined;
}

/** Where a page ended: the status, the lane bucket (lanes only) and the last sort key read there. */
interface PagePosition {
  status: JobStatus;
  bucket?: number;
  sortKey: string;
}

/** The latest instant the API takes (an ISO time in year 9999): no job is due, and no lane bucket lies, beyond it. */
const LATEST_INSTANT_MS = Date.parse('9999-12-31T23:59:59.999Z');

/**
 * A sort key a page may end at: none yet, a time alone (finished jobs by `cursorFrom`), a time and `~`
 * (queued ones by `cursorFrom`), or an index entry's `<time>#<id>` (`<time>#<type>#<id>` in the claim lane).
 */
const CURSOR_SORT_KEY_PATTERN = /^(?:\d{15}(?:~|#[A-Za-z0-9_.:@#-]{1,200})?)?$/;

/**
 * The position a cursor names, every field checked against what this API writes there: a cursor is handed
 * to the caller, so it comes back as any JSON at all. A lane bucket is one the type's jobs can lie in (from
 * the type's creation, which bounds the buckets a page walks, to the latest instant the API takes).
 */
function decodeCursor(cursor: string, status: JobStatus, jobType: JobType, bucketMs: number): PagePosition {
  const { status: cursorStatus, bucket, sortKey } = cursorFields(cursor);
  if (typeof sortKey !== 'string' || !CURSOR_SORT_KEY_PATTERN.test(sortKey)) throw invalidCursor();
  if (cursorStatus !== status) throw invalidCursor(`was returned for status ${String(cursorStatus)}, not ${status}`);
  if (isTerminal(status)) {
    if (bucket !== undefined) throw invalidCursor();
    return { status, sortKey };
  }
  const oldest = bucketOf(jobType.createdAtMs, bucketMs);
  if (typeof bucket !== 'number' || !Number.isSafeInteger(bucket) || bucket < oldest || bucket > bucketOf(LATEST_INSTANT_MS, bucketMs)) {
    throw invalidCursor();
  }
  return { status, sortKey, bucket };
}

/**
 * A cursor that starts a listing at a time rather than where a page ended: finished jobs at those that finished
 * by `toMs` (they are listed newest first), queued ones at those due from `fromMs` (soonest first). Undefined
 * where the listing's own start is the same.
 */
export async function cursorFrom(
  ctx: QueueContext,
  jobType: JobType,
  status: JobStatus,
  range: { fromMs?: number; toMs?: number },
): Promise<string | undefined> {
  if (isTerminal(status)) return range.toMs === undefined ? undefined : encodeCursor({ status, sortKey: padEpochMs(range.toMs + 1) });
  if (status !== 'queued' || range.fromMs === undefined) return undefined;
  const lane: Lane = { kind: 'queued', type: jobType.name };
  const fromBucket = bucketOf(range.fromMs, ctx.settings.bucketMs);
  // A job due in the past sits in the bucket of its enqueue, never before that of its run_after.
  const bucket = await oldestCursorBucket(ctx, lane, Math.max(fromBucket, bucketOf(jobType.createdAtMs, ctx.settings.bucketMs)));
  // '~' sorts after every id character: the first entry after it is the first due at fromMs.
  return encodeCursor({ status, bucket, sortKey: bucket === fromBucket ? `${padEpochMs(range.fromMs - 1)}~` : '' });
}

/** An index entry read for a page, with the lane bucket it was read from (lanes only). */
type PageEntry = IndexEntry & { bucket?: number };

const shardsOf = (ctx: QueueContext): number[] => Array.from({ length: ctx.settings.shards }, (_, shard) => shard);

/** Finished jobs of one status, newest first, merged over the shards. */
async function finishedEntries(ctx: QueueContext, type: string, status: JobStatus, wanted: number, after?: PagePosition) {
  const perShard = await Promise.all(
    shardsOf(ctx).map((shard) =>
      pageOfPartition(ctx, finishedPartition(type, status, shard), {
        wanted,
        forward: false,
        ...(after ? { afterSortKey: after.sortKey } : {}),
      }),
    ),
  );
  return perShard.flat().sort((a, b) => (a.gsi1sk < b.gsi1sk ? 1 : a.gsi1sk > b.gsi1sk ? -1 : 0)).slice(0, wanted);
}

/**
 * Entries of a lane bucket by bucket from the oldest that may hold any, in sort-key order within a bucket.
 * Stops early, with the position to go on from, when the page has used its queries.
 */
async function laneEntries(
  ctx: QueueContext,
  jobType: JobType,
  status: JobStatus,
  wanted: number,
  after?: PagePosition,
): Promise<{ entries: PageEntry[]; resumeAt?: PagePosition }> {
  const lane: Lane = status === 'queued' ? { kind: 'queued', type: jobType.name } : { kind: 'claims' };
  // Claims of every type share a lane: these are this type's, in the asked status.
  const only = lane.kind === 'claims' ? { type: jobType.name, status } : undefined;
  // Neither the type's jobs nor its claims are older than the type.
  const fromBucket = after?.bucket ?? (await oldestCursorBucket(ctx, lane, bucketOf(jobType.createdAtMs, ctx.settings.bucketMs)));
  const entries: PageEntry[] = [];
  const shards = laneShards(ctx.settings, lane);
  let queries = 0;
  for (const bucket of await laneBuckets(ctx, lane, fromBucket)) {
    if (queries + shards.length > MAX_QUERIES_PER_PAGE) return { entries, resumeAt: { status, bucket, sortKey: '' } };
    const afterSortKey = after && after.bucket === bucket && after.sortKey !== '' ? after.sortKey : undefined;
    const perShard = await Promise.all(
      shards.map((shard) =>
        pageOfPartition(ctx, lanePartition(lane, bucket, shard), {
          wanted: wanted - entries.length,
          forward: true,
          ...(afterSortKey ? { afterSortKey } : {}),
          only,
        }),
      ),
    );
    queries += shards.length;
    const merged = perShard.flat().sort((a, b) => (a.gsi1sk < b.gsi1sk ? -1 : a.gsi1sk > b.gsi1sk ? 1 : 0));
    entries.push(...merged.slice(0, wanted - entries.length).map((entry) => ({ ...entry, bucket })));
    if (entries.length >= wanted) break;
  }
  return { entries };
}

/**
 * Lambda answers at most 6 MB; a page of whole jobs (each up to DynamoDB's 400 KB) stops before its jobs pass
 * this, leaving the rest of the 6 MB to the answer's envelope.
 */
export const MAX_PAGE_BYTES = 5 * 1024 * 1024;

/** How a page of jobs is bounded in bytes: each job's size as the caller answers it, and the most a page holds. */
export interface PageBytes {
  bytesOf: (job: Job) => number;
  maxBytes: number;
}

/** How many of `jobs`, from the first, a page holds within `bytes.maxBytes`: at least one, however large. */
export function jobsWithinBytes(jobs: readonly Job[], bytes: PageBytes): number {
  let pageBytes = 0;
  for (let index = 0; index < jobs.length; index++) {
    pageBytes += bytes.bytesOf(jobs[index]!);
    if (index > 0 && pageBytes > bytes.maxBytes) return index;
  }
  return jobs.length;
}

/** Where a page that ends at `entry` goes on from. */
function positionAfter(status: JobStatus, entry: PageEntry): PagePosition {
  return { status, sortKey: entry.gsi1sk, ...(entry.bucket !== undefined ? { bucket: entry.bucket } : {}) };
}

/**
 * A page of the type's jobs in `status`: queued ones by ready time, running and awaiting ones by claim
 * deadline, finished ones newest first. A job whose status changed between the index read and the job read
 * is left out of the page rather than shown under the wrong status. With `bytes`, the page ends before the job
 * that would take it past `maxBytes` (it always holds one), and its cursor goes on from that job.
 */
export async function listJobs(
  ctx: QueueContext,
  jobType: JobType,
  options: { status: JobStatus; limit: number; cursor?: string; bytes?: PageBytes },
): Promise<JobPage> {
  const { status, limit } = options;
  if (status === 'succeeded' && !jobType.listSucceeded) {
    throw new ValidationError([
      { field: 'status', message: `succeeded jobs of "${jobType.name}" are not listed: set list_succeeded on the type to list them` },
    ]);
  }
  const after = options.cursor !== undefined ? decodeCursor(options.cursor, status, jobType, ctx.settings.bucketMs) : undefined;
  // One entry past the page tells whether another page follows.
  const wanted = limit + 1;
  let entries: PageEntry[];
  let resumeAt: PagePosition | undefined;
  if (isTerminal(status)) entries = await finishedEntries(ctx, jobType.name, status, wanted, after);
  else ({ entries, resumeAt } = await laneEntries(ctx, jobType, status, wanted, after));

  const page = entries.slice(0, limit);
  const last = page.at(-1);
  let next: PagePosition | undefined = resumeAt;
  if (entries.length > limit && last) next = positionAfter(status, last);

  const items = await batchGetItems(
    ctx,
    page.map((entry) => {
      const { type, id } = parseJobPk(entry.pk);
      return jobKey(type, id);
    }),
  );
  const byPk = new Map(items.map((item) => [String(item.pk), itemToJob(item)]));
  const listed = page.flatMap((entry) => {
    const job = byPk.get(entry.pk);
    return job && job.status === status ? [{ job, entry }] : [];
  });
  const fitting = options.bytes ? jobsWithinBytes(listed.map(({ job }) => job), options.bytes) : listed.length;
  if (fitting < listed.length) {
    next = positionAfter(status, listed[fitting - 1]!.entry);
    listed.length = fitting;
  }
  return { jobs: listed.map(({ job }) => job), nextCursor: next ? encodeCursor(next) : undefined };
}
