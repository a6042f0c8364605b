/**
 * The poller's loop: polls again at once while a lane is saturated, otherwise
 * one poll interval after the last poll began, re-reading job types as it goes.
 * Each poll also claims, on time, what falls due before the next one begins.
 */
import type { JobType } from '../domain/job-type.js';
import { abortableSleep } from '../domain/sleep.js';
import type { WorkerInvoker } from './batcher.js';
import type { QueueContext } from './context.js';
import { JOB_TYPES_REFRESH_MS, listJobTypes } from './job-types.js';
import { emptyPollResult, pollOnce, type CursorCache, type PollResult, type RecentClaims } from './poll-once.js';
import type { RateBucketCache } from './rate-limit.js';

export interface PollerLoopOptions {
  invoker: WorkerInvoker;
  /** How long to keep polling. @default settings.pollerRunMs */
  runForMs?: number;
  /** Poll only these shards (pollers split shards so they never fight over them). */
  shards?: number[];
  /** Re-read job types this often, so a new type is served within it. @default JOB_TYPES_REFRESH_MS */
  jobTypesRefreshMs?: number;
  /** Stops the loop early, e.g. on shutdown. */
  signal?: AbortSignal;
  onPoll?: (result: PollResult) => void;
  onError?: (error: unknown) => void;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

/** Polls until the run time is over: at once again while a lane is saturated, otherwise one poll interval after the last poll began. */
export async function runPollerLoop(ctx: QueueContext, options: PollerLoopOptions): Promise<PollResult> {
  const sleep = options.sleep ?? abortableSleep;
  const refreshMs = options.jobTypesRefreshMs ?? JOB_TYPES_REFRESH_MS;
  const deadlineMs = ctx.nowMs() + (options.runForMs ?? ctx.settings.pollerRunMs);
  const cursors: CursorCache = new Map();
  const rateBuckets: RateBucketCache = new Map();
  const recentClaims: RecentClaims = new Map();
  const totals = emptyPollResult();
  let jobTypes: JobType[] = [];
  let jobTypesReadAtMs = -Infinity;
  do {
    const pollStartedAtMs = ctx.nowMs();
    try {
      if (ctx.nowMs() - jobTypesReadAtMs >= refreshMs) {
        jobTypes = await listJobTypes(ctx);
        jobTypesReadAtMs = ctx.nowMs();
      }
      const result = await pollOnce(ctx, {
        jobTypes,
        invoker: options.invoker,
        cursors,
        rateBuckets,
        recentClaims,
        // What falls due before the next poll is claimed on time from this one, never past the run's end.
        claimAheadMs: Math.min(ctx.settings.pollIntervalMs, Math.max(0, deadlineMs - ctx.nowMs())),
        sleep: (ms) => sleep(ms, options.signal),
        ...(options.signal ? { signal: options.signal } : {}),
        ...(options.shards ? { shards: options.shards } : {}),
      });
      totals.claimed += result.claimed;
      totals.lostRaces += result.lostRaces;
      totals.expired += result.expired;
      totals.dispatched += result.dispatched;
      totals.released += result.released;
      totals.oldestDueLagMs = Math.max(totals.oldestDueLagMs, result.oldestDueLagMs);
      options.onPoll?.(result);
      // Polls start every interval, not an interval after the last one ended: a slow poll does not stretch the lag.
      if (!result.saturated) await sleep(Math.max(0, ctx.settings.pollIntervalMs - (ctx.nowMs() - pollStartedAtMs)), options.signal);
    } catch (error) {
      options.onError?.(error);
      cursors.clear();
      await sleep(ctx.settings.pollIntervalMs, options.signal);
    }
  } while (ctx.nowMs() < deadlineMs && !options.signal?.aborted);
  return totals;
}
