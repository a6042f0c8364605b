/**
 * Bulk operations: retry (replay) a type's failed or expired jobs, or cancel its queued ones (and, when asked,
 * its running ones and those awaiting their callback), selected by status, a time range, a throttle key and a
 * tag. A request only records the operation; sweepers run it, a page at a time at
 * BULK_JOBS_PER_S, each page's jobs recorded on the operation before any is acted on and counted once after, so
 * a runner that dies mid-page leaves the page to the next, which acts on its jobs again harmlessly: a replay's
 * id is fixed by the operation and the job, and a cancel carries the operation's id.
 */
import {
  BULK_PAGE_SIZE,
  MAX_PAGE_RUNS,
  passedRange,
  replayIdOf,
  selects,
  type BulkOperation,
  type PendingPage,
} from '../../domain/bulk.js';
import { isTerminal, type Job } from '../../domain/job.js';
import type { JobType } from '../../domain/job-type.js';
import { abortableSleep } from '../../domain/sleep.js';
import { itemToJob } from '../../store/items.js';
import { jobKey, purgeAtS } from '../../store/keys.js';
import { countPageParams, pageFailedParams, runningOperationIds, takePageParams, type PageCounts } from '../../store/operations.js';
import { batchGetItems, updateItem } from '../../store/send.js';
import type { QueueContext } from '../context.js';
import type { QueueSettings } from '../settings.js';
import { enqueueJob, replayInputOf } from '../enqueue/enqueue.js';
import { cursorFrom, listJobs, type JobPage } from '../read/list-jobs.js';
import { listJobsByTag, tagCursorAt } from '../read/list-by-tag.js';
import { requireJobType } from '../catalog/job-types.js';
import { cancelJob, cancelQueuedJob } from '../attempt/cancel.js';
import { ConflictError, NotFoundError } from '../../domain/errors.js';
import { getOperation } from './start-bulk-operation.js';

/** A retry's replays fall due this far apart, on whole milliseconds as every due time is. */
export function replaySpacingMs(settings: Pick<QueueSettings, 'bulkJobsPerS'>): number {
  return Math.floor(1000 / settings.bulkJobsPerS);
}

async function listByStatus(ctx: QueueContext, jobType: JobType, operation: BulkOperation): Promise<JobPage> {
  const cursor = operation.cursor ?? (await cursorFrom(ctx, jobType, operation.status, operation));
  return listJobs(ctx, jobType, { status: operation.status, limit: BULK_PAGE_SIZE, ...(cursor !== undefined ? { cursor } : {}) });
}

/** A tag's jobs from those enqueued when the operation started: the replays a retry makes come after, never in its way. */
function listByTag(ctx: QueueContext, jobType: JobType, operation: BulkOperation, tag: string): Promise<JobPage> {
  const cursor = operation.cursor ?? tagCursorAt(tag, operation.createdAtMs);
  return listJobsByTag(ctx, jobType, { tag, status: operation.status, limit: BULK_PAGE_SIZE, cursor });
}

/** The next page's matching jobs, and where the listing goes on (absent once it has passed the range or ended). */
async function choosePage(ctx: QueueContext, jobType: JobType, operation: BulkOperation): Promise<{ page: PendingPage; jobs: Job[] }> {
  const listed = operation.tag === undefined ? await listByStatus(ctx, jobType, operation) : await listByTag(ctx, jobType, operation, operation.tag);
  const jobs = listed.jobs.filter((job) => selects(operation, job));
  const ended = listed.nextCursor === undefined || listed.jobs.some((job) => passedRange(operation, job));
  const replays =
    operation.action === 'retry'
      ? { replaysFromMs: ctx.nowMs() + 2 * ctx.settings.pollIntervalMs, replaySpacingMs: replaySpacingMs(ctx.settings) }
      : {};
  return { page: { ids: jobs.map((job) => job.id), ...replays, ...(ended ? {} : { nextCursor: listed.nextCursor }) }, jobs };
}

type JobOutcome = 'done' | 'skipped' | 'failed';

/** Acts on one job of the page; a job the operation already acted on (a page run again) is done, not acted on twice. */
async function actOn(ctx: QueueContext, jobType: JobType, operation: BulkOperation, job: Job | undefined, runAfterMs?: number): Promise<JobOutcome> {
  if (operation.action === 'retry') {
    if (job?.status !== operation.status) return 'skipped';
    await enqueueJob(ctx, jobType, replayIdOf(operation.id, job.id), { ...replayInputOf(job), ...(runAfterMs !== undefined ? { runAfterMs } : {}) });
    return 'done';
  }
  const cancelledByUs = (current: Job | undefined) =>
    (current?.status === 'cancelled' || current?.cancelRequestedAtMs !== undefined) && current.cancelledBy === operation.id;
  if (cancelledByUs(job)) return 'done';
  if (operation.includeRunning && job !== undefined && !isTerminal(job.status)) {
    try {
      await cancelJob(ctx, job.type, job.id, operation.id);
      return 'done';
    } catch (error) {
      // It finished (or was cancelled by someone else) since it was listed.
      if (error instanceof ConflictError || error instanceof NotFoundError) return 'skipped';
      throw error;
    }
  }
  if (job?.status !== 'queued') return 'skipped';
  const result = await cancelQueuedJob(ctx, job, operation.id);
  return result.ok || cancelledByUs(result.current) ? 'done' : 'skipped';
}

export interface PageOptions {
  /**
   * Acts on the page's jobs this far apart rather than all at once: a page's writes arriving together queue
   * ahead of every other type's claims for as long as the table takes to serve them. @default 0
   */
  spacingMs?: number;
  /** Ends the spacing early: the rest of the page is acted on at once. */
  signal?: AbortSignal;
}

async function runPage(
  ctx: QueueContext,
  jobType: JobType,
  operation: BulkOperation,
  page: PendingPage,
  options: PageOptions,
  listed?: Job[],
): Promise<PageCounts> {
  // Jobs listed a moment ago are used as listed; a page taken over from another runner reads them again.
  const jobs = listed ?? (await batchGetItems(ctx, page.ids.map((id) => jobKey(jobType.name, id)), { consistentRead: true })).map(itemToJob);
  const byId = new Map(jobs.map((job) => [job.id, job]));
  // Replays due on arrival would make the pollers poll faster for them, and every other type with them; due a
  // little ahead and spread at the operation's pace, they are claimed ahead like any scheduled job.
  const replayDueMs = (index: number): number | undefined =>
    page.replaysFromMs === undefined ? undefined : page.replaysFromMs + index * (page.replaySpacingMs ?? 0);
  const startedAtMs = ctx.nowMs();
  const acts: Promise<JobOutcome>[] = [];
  for (const [index, id] of page.ids.entries()) {
    const waitMs = startedAtMs + index * (options.spacingMs ?? 0) - ctx.nowMs();
    if (waitMs > 0) await abortableSleep(waitMs, options.signal);
    acts.push(actOn(ctx, jobType, operation, byId.get(id), replayDueMs(index)).catch((): JobOutcome => 'failed'));
  }
  const outcomes = await Promise.all(acts);
  const count = (outcome: JobOutcome) => outcomes.filter((each) => each === outcome).length;
  return { matched: page.ids.length, done: count('done'), skipped: count('skipped'), failed: count('failed') };
}

/**
 * Runs the operation's next page, or finishes the page a runner left: returns how many jobs it acted on, 0 when
 * the operation is over or another runner holds the page.
 */
export async function runOperationPage(ctx: QueueContext, operationId: string, options: PageOptions = {}): Promise<number> {
  const operation = await getOperation(ctx, operationId);
  if (operation?.state !== 'running') return 0;
  const jobType = await requireJobType(ctx, operation.type);
  let page = operation.pending;
  let listed: Job[] | undefined;
  if (!page) {
    ({ page, jobs: listed } = await choosePage(ctx, jobType, operation));
    if (page.ids.length > 0 && !(await updateItem(ctx, takePageParams(operation, page, ctx.nowMs()))).ok) return 0;
  }
  const counts = await runPage(ctx, jobType, operation, page, options, listed);
  const nowMs = ctx.nowMs();
  const failedRuns = (page.failedRuns ?? 0) + 1;
  if (counts.failed > 0 && failedRuns < MAX_PAGE_RUNS) {
    await updateItem(ctx, pageFailedParams(operation, failedRuns, nowMs));
    return page.ids.length;
  }
  const last = page.nextCursor === undefined;
  const finished = last
    ? { state: operation.failed + counts.failed > 0 ? ('failed' as const) : ('succeeded' as const), purgeAtS: purgeAtS(nowMs, ctx.settings.retentionDays) }
    : undefined;
  const end = {
    counts,
    // A page with no jobs was never recorded as pending; one with jobs was, by this runner or the one before.
    pendingRecorded: page.ids.length > 0,
    ...(page.nextCursor !== undefined ? { nextCursor: page.nextCursor } : {}),
    ...(finished ? { finished } : {}),
  };
  await updateItem(ctx, countPageParams(operation, end, nowMs));
  return page.ids.length;
}

export interface BulkRunOptions {
  /** Pages go on until then, at least one of each running operation. */
  untilMs: number;
  signal?: AbortSignal;
  /** Told of an operation whose page failed; it is tried again in the next round. */
  onError?: (operationId: string, error: unknown) => void;
}

/**
 * Runs the running operations a page at a time, round after round, until `untilMs`. Every page is paced as a
 * full one, at ctx.settings.bulkJobsPerS for all operations together (a page of no jobs still lists), and its
 * jobs are acted on at that pace too. Returns the jobs acted on.
 */
export async function runBulkOperations(ctx: QueueContext, options: BulkRunOptions): Promise<number> {
  let total = 0;
  do {
    const ids = await runningOperationIds(ctx);
    if (ids.length === 0) break;
    for (const id of ids) {
      const pageStartedAtMs = ctx.nowMs();
      let jobs = 0;
      try {
        jobs = await runOperationPage(ctx, id, { spacingMs: 1000 / ctx.settings.bulkJobsPerS, ...(options.signal ? { signal: options.signal } : {}) });
      } catch (error) {
        options.onError?.(id, error);
      }
      total += jobs;
      const pauseMs = Math.min(pageStartedAtMs + (BULK_PAGE_SIZE * 1000) / ctx.settings.bulkJobsPerS, options.untilMs) - ctx.nowMs();
      if (pauseMs > 0) await abortableSleep(pauseMs, options.signal);
      if (options.signal?.aborted) break;
    }
  } while (ctx.nowMs() < options.untilMs && !options.signal?.aborted);
  return total;
}
