/**
 * Tags: each tag of a job has an entry in its type's (type, tag) partitions, written before the job, so no
 * transaction is needed: an entry whose job never got written (a failed or repeated enqueue) is an orphan, which
 * listing skips (read/list-by-tag.ts).
 */
import { debounceDeadlineMs } from '../../domain/dedup-debounce.js';
import type { Job } from '../../domain/job.js';
import { tagEntryPurgeAtS } from '../../domain/tags.js';
import { tagEntryKey } from '../../store/keys.js';
import { putItem } from '../../store/send.js';
import { tagEntryParams } from '../../store/tags.js';
import type { QueueContext } from '../context.js';

/**
 * Writes an entry for each of the job's tags: one write unit each, all at once. A debounced job is due, as
 * enqueued, as late as its max wait: enqueues folding into it move it there without writing its entries again.
 */
export async function writeTagEntries(ctx: QueueContext, job: Job): Promise<void> {
  const dueAtMs = Math.max(job.runAfterMs, job.createdAtMs, job.debounce ? debounceDeadlineMs(job.debounce, job.createdAtMs) : 0);
  const purgeAtS = tagEntryPurgeAtS(dueAtMs, ctx.settings.retentionDays);
  await Promise.all((job.tags ?? []).map((tag) => putItem(ctx, tagEntryParams(tagEntryKey(ctx.settings, job, tag), purgeAtS))));
}

