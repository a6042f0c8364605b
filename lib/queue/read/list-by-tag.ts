/**
 * Listing a type's jobs by tag: the entries of a (type, tag) are read newest first, merging shards, then their
 * jobs, shown as they are now; an entry whose job never got written is skipped.
 */
import { cursorFields, encodeCursor, invalidCursor } from '../../domain/cursor.js';
import { jobKey, padEpochMs, parseTagSortKey, tagPartition } from '../../store/keys.js';
import type { QueueContext } from '../context.js';
import { tagEntriesQuery } from '../../store/tags.js';
import { batchGetItems, queryPage } from '../../store/send.js';
import type { JobType } from '../../domain/job-type.js';
import type { JobStatus, Job } from '../../domain/job.js';
import { itemToJob } from '../../store/items.js';
import { type PageBytes, type JobPage, jobsWithinBytes } from './list-jobs.js';

/**
 * Entries one page reads at most, orphans and jobs in other statuses included, before it returns what it found
 * with a cursor to go on from: a page is bounded even where most entries are skipped.
 */
export const MAX_TAG_ENTRIES_PER_PAGE = 500;

/** Entries a round reads at most; each round's jobs are one batch get. */
export const MAX_TAG_ENTRIES_PER_ROUND = 100;

/** Where a tag listing goes on: before this sort key (a time alone, or an entry's `<time>#<id>`), in this tag's partitions. */
export interface TagPosition {
  tag: string;
  beforeSortKey: string;
}

export const encodeTagCursor = (position: TagPosition): string => encodeCursor(position);

export const TAG_SORT_KEY_PATTERN = /^\d{15}(?:#[A-Za-z0-9][A-Za-z0-9_.:@-]{0,127})?$/;

/** The position a cursor names, checked field by field: it comes back from the caller as any JSON at all. */
export function decodeTagCursor(cursor: string, tag: string): TagPosition {
  const { tag: cursorTag, beforeSortKey } = cursorFields(cursor);
  if (typeof beforeSortKey !== 'string' || !TAG_SORT_KEY_PATTERN.test(beforeSortKey)) throw invalidCursor();
  if (cursorTag !== tag) throw invalidCursor(`was not returned for tag ${tag}`);
  return { tag, beforeSortKey };
}

/** A cursor that starts a tag listing at the jobs enqueued at or before `atMs`. */
export function tagCursorAt(tag: string, atMs: number): string {
  return encodeTagCursor({ tag, beforeSortKey: padEpochMs(atMs + 1) });
}

/** One round: the next `wanted` entries before `beforeSortKey`, newest first over every shard, and whether none are left. */
export async function tagEntries(ctx: QueueContext, type: string, tag: string, wanted: number, beforeSortKey: string | undefined) {
  const shards = Array.from({ length: ctx.settings.shards }, (_, shard) => shard);
  const perShard = await Promise.all(shards.map((shard) => queryPage(ctx, tagEntriesQuery(tagPartition(type, tag, shard), wanted, beforeSortKey))));
  const merged = perShard.flatMap((page) => (page.Items ?? []).map((item) => String(item.sk))).sort((a, b) => (a < b ? 1 : a > b ? -1 : 0));
  const exhausted = merged.length <= wanted && perShard.every((page) => page.LastEvaluatedKey === undefined);
  return { sortKeys: merged.slice(0, wanted), exhausted };
}

/**
 * A page of the type's jobs with `tag`, newest enqueued first, in any status (only `status`, when given). An
 * entry is shown only while it names the job as enqueued (same id and enqueue time) and the job holds the tag:
 * orphans are skipped. With `bytes`, the page ends before the job that would take it past `maxBytes`.
 */
export async function listJobsByTag(
  ctx: QueueContext,
  jobType: JobType,
  options: { tag: string; status?: JobStatus | undefined; limit: number; cursor?: string | undefined; bytes?: PageBytes },
): Promise<JobPage> {
  const { tag, status, limit } = options;
  let beforeSortKey = options.cursor !== undefined ? decodeTagCursor(options.cursor, tag).beforeSortKey : undefined;
  const found: { job: Job; sortKey: string }[] = [];
  let entriesRead = 0;
  let exhausted = false;
  let wanted = limit + 1;
  // One entry past the page tells whether another page follows.
  while (found.length <= limit && !exhausted && entriesRead < MAX_TAG_ENTRIES_PER_PAGE) {
    const round = await tagEntries(ctx, jobType.name, tag, Math.min(wanted, MAX_TAG_ENTRIES_PER_PAGE - entriesRead), beforeSortKey);
    // An empty round is the partition's end: DynamoDB stops a query early only after returning entries.
    exhausted = round.exhausted || round.sortKeys.length === 0;
    entriesRead += round.sortKeys.length;
    const entries = round.sortKeys.map((sortKey) => ({ sortKey, ...parseTagSortKey(sortKey) }));
    // A repeated enqueue leaves a second entry of one job: a batch get takes each key once.
    const ids = [...new Set(entries.map((entry) => entry.id))];
    const jobs = new Map((await batchGetItems(ctx, ids.map((id) => jobKey(jobType.name, id)))).map((item) => [String(item.pk), itemToJob(item)]));
    for (const entry of entries) {
      const job = jobs.get(jobKey(jobType.name, entry.id).pk);
      const current = job !== undefined && Math.floor(job.createdAtMs) === entry.createdAtMs && job.tags?.includes(tag) === true;
      if (current && (status === undefined || job.status === status)) found.push({ job, sortKey: entry.sortKey });
    }
    beforeSortKey = round.sortKeys.at(-1) ?? beforeSortKey;
    // Rounds after a first that skipped entries read more at once, up to a batch get's worth.
    wanted = Math.min(MAX_TAG_ENTRIES_PER_ROUND, Math.max(limit + 1 - found.length, wanted * 2));
  }

  let page = found.slice(0, limit);
  let next: string | undefined = found.length > limit ? page.at(-1)?.sortKey : exhausted ? undefined : beforeSortKey;
  const fitting = options.bytes ? jobsWithinBytes(page.map((listed) => listed.job), options.bytes) : page.length;
  if (fitting < page.length) {
    page = page.slice(0, fitting);
    next = page.at(-1)!.sortKey;
  }
  return { jobs: page.map((listed) => listed.job), nextCursor: next === undefined ? undefined : encodeTagCursor({ tag, beforeSortKey: next }) };
}
