/**
 * The poller's loop: polls again at once while a lane is saturated or far behind, otherwise
 * one poll interval after the last poll began, re-reading job types as it goes.
 * Each poll also claims, on time, what falls due before the next one begins.
 * The interval shortens while jobs arrive due, so they do not wait a whole one.
 */
import type { JobType } from '../../domain/job-type.js';
import type { QueueSettings } from '../settings.js';
import { abortableSleep } from '../../domain/sleep.js';
import { TYPES_CHECK_MS } from '../wake/lease-keeper.js';
import type { WorkerInvoker } from '../../domain/invocations.js';
import type { QueueContext } from '../context.js';
import { fireDueSchedules, type FireResult } from '../schedules/fire-schedules.js';
import { JOB_TYPES_REFRESH_MS, listJobTypes } from '../catalog/job-types.js';
import type { BlockedRuns } from './blocked-runs.js';
import { pollOnce } from './poll.js';
import { emptyPollResult, type RecentClaims, type SettledGaps, type DirectoryFromBuckets, type CursorCache, type PollResult } from './poll-state.js';
import type { RateBucketCache } from '../limits/rate-tokens.js';

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
  /**
   * Fire due schedules (every SCHEDULE_CHECK_MS) as well. @default true for a poller of shard 0 (or of every
   * shard): one partition of pollers is enough, and the others pay nothing for schedules.
   */
  fireSchedules?: boolean;
  onSchedulesFired?: (result: FireResult) => void;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /**
   * After each poll, with what the loop knows: answers until when to go on (never past the run's end) and when
   * job types last changed, so the loop lists them again at once (queue/wake/lease-keeper.ts keeps a lease so).
   */
  afterRound?: (round: PollRound) => Promise<{ untilMs: number; typesChangedAtMs: number }>;
  /** When job types last changed as `afterRound`'s keeper knew it before the loop first listed them. */
  typesChangedAtMs?: number;
  /**
   * Read every TYPES_CHECK_MS while the loop waits between polls: when job types last changed. A change ends the
   * wait, as a type made a moment ago may have a job due now, which the holder's lanes do not include yet.
   */
  typesChangedAtMsNow?: () => Promise<number>;
}

export interface PollRound {
  /** The poll claimed, expired or lost a job, or fired a schedule, or will poll again at once. */
  busy: boolean;
  jobTypes: readonly JobType[];
  cursors: CursorCache;
}

/**
 * The time from one poll's start to the next's: POLL_INTERVAL_MS while no job arrives due; while they do,
 * about the time between arrivals, so a job due on arrival waits about that long and each extra poll finds
 * one job on average: an idle queue, or one whose jobs are enqueued ahead, polls no more often than before.
 */
export function nextPollIntervalMs(settings: Pick<QueueSettings, 'pollIntervalMs' | 'minPollIntervalMs'>, sinceLastRoundMs: number, arrivals: number): number {
  const { pollIntervalMs } = settings;
  if (arrivals === 0) return pollIntervalMs;
  return Math.min(pollIntervalMs, Math.max(Math.min(settings.minPollIntervalMs, pollIntervalMs), Math.floor(sinceLastRoundMs / arrivals)));
}

/** How often a poller that fires schedules looks for due ones: a schedule fires at most this late (plus a poll). */
export const SCHEDULE_CHECK_MS = 1_000;

/**
 * Paces the loop by rounds: the polls that follow one another at once while lanes are saturated, then a wait.
 * A round's arrivals came in since the previous round read, which sets the interval before the next round.
 */
function createPacer(settings: QueueSettings) {
  let intervalMs = settings.pollIntervalMs;
  let readUpToBefore = new Map<string, number>();
  let readUpTo = new Map<string, number>();
  let roundStartedAtMs: number | undefined;
  let previousRoundStartedAtMs: number | undefined;
  let roundArrivals = 0;
  return {
    get intervalMs() {
      return intervalMs;
    },
    /** What polls of the current round pass to pollOnce. */
    get horizons() {
      return { readUpToBefore, readUpTo };
    },
    /**
     * How long to wait after a poll that began at `pollStartedAtMs` and read `readAheadMs` ahead: none while
     * saturated, and never past what it read, though the interval just lengthened (arrivals stopped): a job
     * enqueued ahead and due in between would wait for the next poll.
     */
    waitAfter(result: PollResult, pollStartedAtMs: number, nowMs: number, readAheadMs: number): number {
      roundStartedAtMs ??= pollStartedAtMs;
      roundArrivals += result.arrivals;
      if (pollsAgainAtOnce(result)) return 0;
      const sinceLastRoundMs = roundStartedAtMs - (previousRoundStartedAtMs ?? roundStartedAtMs - intervalMs);
      intervalMs = nextPollIntervalMs(settings, sinceLastRoundMs, roundArrivals);
      previousRoundStartedAtMs = roundStartedAtMs;
      roundStartedAtMs = undefined;
      roundArrivals = 0;
      readUpToBefore = readUpTo;
      readUpTo = new Map(readUpToBefore);
      // Polls start every interval, not an interval after the last one ended: a slow poll does not stretch the lag.
      return Math.max(0, Math.min(intervalMs, readAheadMs) - (nowMs - pollStartedAtMs));
    },
    afterError(): number {
      intervalMs = settings.pollIntervalMs;
      roundStartedAtMs = previousRoundStartedAtMs = undefined;
      roundArrivals = 0;
      readUpToBefore = new Map();
      readUpTo = new Map();
      return intervalMs;
    },
  };
}

/**
 * How long past the run's end a poll may still walk its lanes before it stops and hands over what it claimed: the
 * poller function ends its runs 5 s before its timeout.
 */
export const WALK_OVERRUN_MS = 2_000;

/** A saturated lane, or one whose walk is still far behind, is polled again without a wait. */
function pollsAgainAtOnce(result: PollResult): boolean {
  return result.saturated || result.behind;
}

/** Adds a poll's counts to a run's totals; saturation is each poll's own. */
function addPollResult(totals: PollResult, result: PollResult): void {
  totals.claimed += result.claimed;
  totals.lostRaces += result.lostRaces;
  totals.expired += result.expired;
  totals.dispatched += result.dispatched;
  totals.released += result.released;
  totals.arrivals += result.arrivals;
  totals.oldestDueLagMs = Math.max(totals.oldestDueLagMs, result.oldestDueLagMs);
  totals.behind ||= result.behind;
}

/**
 * Waits `ms`, in slices of TYPES_CHECK_MS when the loop can read when job types last changed: answers that time
 * once it differs from `knownAtMs`, ending the wait, and undefined when the wait ran out first.
 */
async function sleepUnlessTypesChange(
  ctx: QueueContext,
  ms: number,
  sleep: NonNullable<PollerLoopOptions['sleep']>,
  options: Pick<PollerLoopOptions, 'signal' | 'typesChangedAtMsNow'>,
  knownAtMs: number | undefined,
): Promise<number | undefined> {
  const readTypesChangedAtMs = options.typesChangedAtMsNow;
  if (!readTypesChangedAtMs || knownAtMs === undefined) {
    await sleep(ms, options.signal);
    return undefined;
  }
  // The wait ends when it would have without the reads, which take time of their own: the poll it leads to claims
  // what falls due before the next one, and must not start late.
  const endsAtMs = ctx.nowMs() + ms;
  for (let slices = Math.ceil(ms / TYPES_CHECK_MS); slices > 0 && !options.signal?.aborted; slices--) {
    const sliceMs = Math.min(TYPES_CHECK_MS, endsAtMs - ctx.nowMs());
    if (sliceMs <= 0) break;
    await sleep(sliceMs, options.signal);
    // The poll comes next, and the round after it reads the change.
    if (ctx.nowMs() >= endsAtMs) break;
    // A read that fails waits for the next slice, or for the next round's.
    const latestAtMs: number = await readTypesChangedAtMs().catch((): number => knownAtMs);
    if (latestAtMs !== knownAtMs) return latestAtMs;
  }
  return undefined;
}

/** Polls until the run time is over: at once again while a lane is saturated, otherwise one poll interval after the last poll began. */
export async function runPollerLoop(ctx: QueueContext, options: PollerLoopOptions): Promise<PollResult> {
  const sleep = options.sleep ?? abortableSleep;
  const refreshMs = options.jobTypesRefreshMs ?? JOB_TYPES_REFRESH_MS;
  const deadlineMs = ctx.nowMs() + (options.runForMs ?? ctx.settings.pollerRunMs);
  let untilMs = deadlineMs;
  let typesChangedAtMs = options.typesChangedAtMs;
  let typesChanged = false;
  const cursors: CursorCache = new Map();
  const rateBuckets: RateBucketCache = new Map();
  const recentClaims: RecentClaims = new Map();
  const blockedRuns: BlockedRuns = new Map();
  const settledGaps: SettledGaps = new Map();
  const directoryFromBuckets: DirectoryFromBuckets = new Map();
  const pacer = createPacer(ctx.settings);
  const totals = emptyPollResult();
  let jobTypes: JobType[] = [];
  let jobTypesReadAtMs = -Infinity;
  const firesSchedules = options.fireSchedules ?? (!options.shards || options.shards.includes(0));
  let schedulesCheckedAtMs = -Infinity;
  do {
    const pollStartedAtMs = ctx.nowMs();
    try {
      if (ctx.nowMs() - jobTypesReadAtMs >= refreshMs) {
        jobTypes = await listJobTypes(ctx);
        jobTypesReadAtMs = ctx.nowMs();
      }
      let fired = 0;
      if (firesSchedules && ctx.nowMs() - schedulesCheckedAtMs >= SCHEDULE_CHECK_MS) {
        schedulesCheckedAtMs = ctx.nowMs();
        // Apart from the poll: a schedule that fails to fire is reported and tried again, and jobs are still claimed.
        await fireDueSchedules(ctx, jobTypes).then((result) => {
          fired = result.made + result.skipped;
          options.onSchedulesFired?.(result);
        }, options.onError);
      }
      // What falls due before the next poll is claimed on time from this one, never past the run's end.
      const claimAheadMs = Math.min(pacer.intervalMs, Math.max(0, untilMs - ctx.nowMs()));
      const result = await pollOnce(ctx, {
        jobTypes,
        invoker: options.invoker,
        cursors,
        rateBuckets,
        recentClaims,
        blockedRuns,
        settledGaps,
        directoryFromBuckets,
        ...pacer.horizons,
        claimAheadMs,
        stopWalksAtMs: deadlineMs + WALK_OVERRUN_MS,
        sleep: (ms) => sleep(ms, options.signal),
        ...(options.signal ? { signal: options.signal } : {}),
        ...(options.shards ? { shards: options.shards } : {}),
      });
      addPollResult(totals, result);
      options.onPoll?.(result);
      if (options.afterRound) {
        const busy = fired > 0 || result.claimed + result.expired + result.lostRaces > 0 || pollsAgainAtOnce(result);
        const next = await options.afterRound({ busy, jobTypes, cursors });
        untilMs = Math.min(deadlineMs, next.untilMs);
        typesChanged = typesChangedAtMs !== undefined && next.typesChangedAtMs !== typesChangedAtMs;
        if (typesChanged) jobTypesReadAtMs = -Infinity;
        typesChangedAtMs = next.typesChangedAtMs;
      }
      const waitMs = pacer.waitAfter(result, pollStartedAtMs, ctx.nowMs(), claimAheadMs);
      // A type made a moment ago, or while waiting, is polled at once: its first job may be due now.
      const changedAtMs = pollsAgainAtOnce(result) || typesChanged ? undefined : await sleepUnlessTypesChange(ctx, waitMs, sleep, options, typesChangedAtMs);
      if (changedAtMs !== undefined) [typesChangedAtMs, jobTypesReadAtMs] = [changedAtMs, -Infinity];
    } catch (error) {
      options.onError?.(error);
      cursors.clear();
      blockedRuns.clear();
      settledGaps.clear();
      await sleep(pacer.afterError(), options.signal);
    }
  } while (ctx.nowMs() < untilMs && !options.signal?.aborted);
  return totals;
}
