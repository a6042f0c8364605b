/**
 * A job's tags: a few short labels given at enqueue and kept as given, by which its type's jobs are listed and
 * selected for bulk operations. Each tag costs one small index item (and its write unit) per job, so they are few.
 */

export const MAX_TAGS = 10;

/**
 * A tag travels as a query parameter and is part of a partition key, so it is ASCII that needs no URL encoding,
 * without `#` (the key's separator) and without `,` (repeated query parameters arrive joined by commas).
 */
export const TAG_PATTERN = /^[A-Za-z0-9_.:=@/-]{1,64}$/;

export const TAG_RULE = '1 to 64 characters of A-Z a-z 0-9 _ . : = @ / -';

/**
 * A tag's index entry is written at enqueue, before anyone knows when the job will finish, so it cannot take the
 * job's own purge time. It is kept until twice the retention after the job is due: as long as the job is for any
 * job that finishes within the retention of being due, which is every job but those of a type paused for longer.
 */
export function tagEntryPurgeAtS(dueAtMs: number, retentionDays: number): number {
  return Math.floor(dueAtMs / 1000) + 2 * retentionDays * 86_400;
}

/** Tags as a job may hold them: at most MAX_TAGS, each well formed, none twice; the first broken rule, or undefined. */
export function tagsProblem(tags: readonly string[]): { index?: number; message: string } | undefined {
  if (tags.length > MAX_TAGS) return { message: `must hold at most ${MAX_TAGS} tags` };
  const seen = new Set<string>();
  for (const [index, tag] of tags.entries()) {
    if (!TAG_PATTERN.test(tag)) return { index, message: `must be ${TAG_RULE}` };
    if (seen.has(tag)) return { index, message: 'must not repeat a tag' };
    seen.add(tag);
  }
  return undefined;
}
