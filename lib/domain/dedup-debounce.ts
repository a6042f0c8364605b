/**
 * Deduplication within a window and debounce, free of storage: what a job keeps of each, the bounds a producer
 * may ask for, and when a debounced job is due.
 */
import { ValidationError } from './errors.js';
import type { Job, JobDebounce, JobDedup, JobInput } from './job.js';
import type { JobType } from './job-type.js';
import { earliestStartMs, effectiveWindows } from './windows.js';

/** Dedup and debounce keys name an item of the table: bounded, as throttle keys are, and free of control characters. */
export const MAX_DEDUP_KEY_CHARS = 256;
/** The longest window: a year. A window also never outlasts how long finished jobs are kept (maxDedupWindowS). */
export const MAX_DEDUP_WINDOW_S = 365 * 86_400;
/** The longest delay and the longest wait of a debounced job: 30 days. */
export const MAX_DEBOUNCE_S = 30 * 86_400;

/**
 * The combinations an enqueue may not ask for, each a ValidationError naming the field to leave out: a job is
 * deduplicated or debounced, not both; neither goes with a correlation key, which already keeps one unfinished job
 * per key; a debounced job's time is its delay's, and its latest start its max wait's.
 */
export function assertDedupDebounceFits(input: Pick<JobInput, 'dedup' | 'debounce' | 'correlationKey' | 'runAfterMs' | 'expiresAtMs'>): void {
  const { dedup, debounce } = input;
  if (dedup && debounce) throw new ValidationError([{ field: 'debounce', message: 'must be left out with dedup: a job is deduplicated or debounced, not both' }]);
  if (input.correlationKey !== undefined && (dedup || debounce)) {
    const field = dedup ? 'dedup' : 'debounce';
    throw new ValidationError([{ field, message: 'must be left out with correlation_key, which already keeps one unfinished job per key' }]);
  }
  if (!debounce) return;
  if (input.runAfterMs !== undefined) {
    throw new ValidationError([{ field: 'run_after', message: 'must be left out with debounce: the job is due delay_s after the latest enqueue' }]);
  }
  if (input.expiresAtMs !== undefined) {
    throw new ValidationError([{ field: 'expires_at', message: 'must be left out with debounce: max_wait_s bounds when the job runs' }]);
  }
  if (debounce.maxWaitS !== undefined && debounce.maxWaitS < debounce.delayS) {
    throw new ValidationError([{ field: 'debounce.max_wait_s', message: 'must be at least delay_s' }]);
  }
}

/**
 * A window may not outlast the job it answers with: a finished job is kept for `retentionDays` after it finished,
 * so for at least that long after its enqueue, and an enqueue within the window always finds it.
 */
export function assertDedupWindowFits(dedup: JobDedup, retentionDays: number): void {
  const maxWindowS = retentionDays * 86_400;
  if (dedup.windowS > maxWindowS) {
    throw new ValidationError([
      { field: 'dedup.window_s', message: `must not exceed ${maxWindowS} (${retentionDays} days, how long finished jobs are kept)` },
    ]);
  }
}

/** When the window of `dedup`, opened by an enqueue at `enqueuedAtMs`, closes. */
export function dedupWindowEndsAtMs(dedup: JobDedup, enqueuedAtMs: number): number {
  return enqueuedAtMs + dedup.windowS * 1000;
}

/** The latest a debounced job made at `createdAtMs` may be due: `max_wait_s` after, or the longest wait when none was given. */
export function debounceDeadlineMs(debounce: JobDebounce, createdAtMs: number): number {
  return createdAtMs + (debounce.maxWaitS ?? MAX_DEBOUNCE_S) * 1000;
}

/**
 * When a waiting debounced `job` is due after another enqueue at `nowMs` whose delay is `delayS`: that long after
 * it, never past the job's deadline (nor its expiry, which a `PATCH` may have set), then at the first instant
 * inside its time windows, as at enqueue.
 */
export function debouncedRunAfterMs(job: Job, jobType: Pick<JobType, 'timeWindows'>, delayS: number, nowMs: number): number {
  const debounce = job.debounce;
  if (!debounce) throw new Error(`job ${job.type}/${job.id} is not debounced`);
  let requestedMs = Math.min(nowMs + delayS * 1000, debounceDeadlineMs(debounce, job.createdAtMs));
  if (job.expiresAtMs !== undefined) requestedMs = Math.min(requestedMs, job.expiresAtMs - 1);
  return earliestStartMs(effectiveWindows(job, jobType), requestedMs);
}

/** Whether a debounced job still collects enqueues: queued and never claimed to run (a claim handed back unstarted counts as never). */
export function collectsEnqueues(job: Job, debounceKey: string): boolean {
  return job.status === 'queued' && job.attempt === 0 && job.debounce?.key === debounceKey;
}
