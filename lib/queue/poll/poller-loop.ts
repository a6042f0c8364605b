/**
 * The poller's loop: polls again at once while a lane is saturated or far behind, otherwise
 * one poll interval after the last poll began, re-reading job types as it goes.
 * Each poll also claims, on time, what falls due before the next one begins.
 * The interval shortens while jobs arrive due, so they do not wait a whole one.
 */
import type { JobType } from '../../domain/job-type.js';
import type { QueueSettings } from '../settings.js';
import { abortableSleep } from '../../domain/sleep.js';
import { newsOf, TYPES_CHECK_MS, type WakeNews } from '../wake/lease-keeper.js';
import { EVERY_LANE } from '../../store/wake.js';
import type { WorkerInvoker } from '../../domain/invocations.js';
import type { QueueContext } from '../context.js';
import { fireDueSchedules, type FireResult } from '../schedules/fire-schedules.js';
import { JOB_TYPES_REFRESH_MS, listJobTypes } from '../catalog/job-types.js';
import { pollOnce } from './poll.js';
import { emptyPollResult, type CursorCache, type PollOptions, type PollResult } from './poll-state.js';

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
   * After each poll, with what the loop knows: answers until when to go on (never past the run's end) and the wake
   * item's news (queue/wake/lease-keeper.ts keeps a lease so): when job types last changed, so the loop lists them
   * again at once, and which types' lanes the waker asked it to poll. With it, a poll reads only those lanes and
   * the lanes it found work in, and every lane once it lists types (every JOB_TYPES_REFRESH_MS): an idle type costs
   * no reads between, whatever the traffic of the others.
   */
  afterRound?: (round: PollRound) => Promise<{ untilMs: number } & WakeNews>;
  /** The wake item's news as `afterRound`'s keeper knew it before the loop first listed types. */
  news?: WakeNews;
  /**
   * Read every TYPES_CHECK_MS while the loop waits between polls: the wake item's news. A type changed (one made a
   * moment ago may have a job due now, which the holder's lanes do not include yet), or a lane held anew (a job
   * written there), ends the wait.
   */
  newsNow?: () => Promise<WakeNews>;
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

/** Whether `latest` asks for a poll `known` did not: types changed since, or a lane held past what it knew, and still held. */
function newsCallsForPoll(latest: WakeNews, known: WakeNews, nowMs: number): boolean {
  if (latest.typesChangedAtMs !== known.typesChangedAtMs) return true;
  for (const [lane, untilMs] of latest.laneHoldsUntilMs) if (untilMs >= nowMs && untilMs > (known.laneHoldsUntilMs.get(lane) ?? 0)) return true;
  return false;
}

/**
 * The types whose lanes a poll reads, between polls of every lane (undefined): those it found work in last time,
 * and those the waker holds lanes of.
 */
function typesToPoll(news: WakeNews, typesWithWork: ReadonlySet<string>, nowMs: number): Set<string> | undefined {
  if ((news.laneHoldsUntilMs.get(EVERY_LANE) ?? 0) >= nowMs) return undefined;
  const types = new Set(typesWithWork);
  for (const [lane, untilMs] of news.laneHoldsUntilMs) if (untilMs >= nowMs) types.add(lane);
  return types;
}

/**
 * What the loop knows of its wake item's news (nothing without a lease keeper: every poll reads every lane), and
 * which lanes the next poll reads from it.
 */
function createNewsView(options: Pick<PollerLoopOptions, 'news' | 'afterRound'>) {
  let news = options.news;
  let typesWithWork: ReadonlySet<string> = new Set();
  return {
    get news(): WakeNews | undefined {
      return news;
    },
    /**
     * The types the next poll reads (`types`; undefined: every lane, as once types were listed, so what no hold named,
     * a timer lost or a write the waker missed, waits no longer), and in a poll of every lane those it reads first.
     */
    lanesToPoll(listing: boolean, nowMs: number): Pick<PollOptions, 'types' | 'firstTypes'> {
      const withWork = !options.afterRound || !news ? undefined : typesToPoll(news, typesWithWork, nowMs);
      if (!withWork) return {};
      return listing ? { firstTypes: withWork } : { types: withWork };
    },
    polled(result: PollResult): void {
      typesWithWork = result.typesWithWork;
    },
    /** Takes the latest news in: answers whether job types changed since the last. */
    take(latest: WakeNews): boolean {
      const typesChanged = news !== undefined && latest.typesChangedAtMs !== news.typesChangedAtMs;
      news = newsOf(latest);
      return typesChanged;
    },
  };
}

/**
 * Waits `ms`, in slices of TYPES_CHECK_MS when the loop can read the wake item's news: answers them once they
 * call for a poll `known` did not, ending the wait, and undefined when the wait ran out first.
 */
async function sleepUntilNews(
  ctx: QueueContext,
  ms: number,
  sleep: NonNullable<PollerLoopOptions['sleep']>,
  options: Pick<PollerLoopOptions, 'signal' | 'newsNow'>,
  known: WakeNews | undefined,
): Promise<WakeNews | undefined> {
  const readNews = options.newsNow;
  if (!readNews || known === undefined) {
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
    const latest = await readNews().catch(() => known);
    if (newsCallsForPoll(latest, known, ctx.nowMs())) return latest;
  }
  return undefined;
}

/** What the loop keeps across its polls (poll-state.ts). */
type PollCaches = Required<Pick<PollOptions, 'cursors' | 'rateBuckets' | 'recentClaims' | 'blockedRuns' | 'settledGaps' | 'directoryFromBuckets' | 'quietBefore'>>;

function createPollCaches(): PollCaches {
  return { cursors: new Map(), rateBuckets: new Map(), recentClaims: new Map(), blockedRuns: new Map(), settledGaps: new Map(), directoryFromBuckets: new Map(), quietBefore: new Map() };
}

/** After a failed poll, where the walks stood is read again. */
function forgetWalks(caches: PollCaches): void {
  for (const cache of [caches.cursors, caches.quietBefore, caches.blockedRuns, caches.settledGaps]) cache.clear();
}

/** Polls until the run time is over: at once again while a lane is saturated, otherwise one poll interval after the last poll began. */
export async function runPollerLoop(ctx: QueueContext, options: PollerLoopOptions): Promise<PollResult> {
  const sleep = options.sleep ?? abortableSleep;
  const refreshMs = options.jobTypesRefreshMs ?? JOB_TYPES_REFRESH_MS;
  const deadlineMs = ctx.nowMs() + (options.runForMs ?? ctx.settings.pollerRunMs);
  let untilMs = deadlineMs;
  const known = createNewsView(options);
  let typesChanged = false;
  const caches = createPollCaches();
  const pacer = createPacer(ctx.settings);
  const totals = emptyPollResult();
  let jobTypes: JobType[] = [];
  let jobTypesReadAtMs = -Infinity;
  const firesSchedules = options.fireSchedules ?? (!options.shards || options.shards.includes(0));
  let schedulesCheckedAtMs = -Infinity;
  do {
    const pollStartedAtMs = ctx.nowMs();
    try {
      const listing = ctx.nowMs() - jobTypesReadAtMs >= refreshMs;
      if (listing) {
        jobTypes = await listJobTypes(ctx);
        jobTypesReadAtMs = ctx.nowMs();
      }
      const lanes = known.lanesToPoll(listing, ctx.nowMs());
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
        ...caches,
        ...pacer.horizons,
        claimAheadMs,
        stopWalksAtMs: deadlineMs + WALK_OVERRUN_MS,
        sleep: (ms) => sleep(ms, options.signal),
        ...(options.signal ? { signal: options.signal } : {}),
        ...(options.shards ? { shards: options.shards } : {}),
        ...lanes,
      });
      known.polled(result);
      addPollResult(totals, result);
      options.onPoll?.(result);
      if (options.afterRound) {
        const busy = fired > 0 || result.claimed + result.expired + result.lostRaces > 0 || pollsAgainAtOnce(result);
        const next = await options.afterRound({ busy, jobTypes, cursors: caches.cursors });
        untilMs = Math.min(deadlineMs, next.untilMs);
        typesChanged = known.take(next);
        if (typesChanged) jobTypesReadAtMs = -Infinity;
      }
      const waitMs = pacer.waitAfter(result, pollStartedAtMs, ctx.nowMs(), claimAheadMs);
      // A type made a moment ago, or while waiting, is polled at once: its first job may be due now; so is a lane held anew.
      const latest = pollsAgainAtOnce(result) || typesChanged ? undefined : await sleepUntilNews(ctx, waitMs, sleep, options, known.news);
      if (latest !== undefined && known.take(latest)) jobTypesReadAtMs = -Infinity;
    } catch (error) {
      options.onError?.(error);
      // The next poll reads every lane.
      jobTypesReadAtMs = -Infinity;
      forgetWalks(caches);
      await sleep(pacer.afterError(), options.signal);
    }
  } while (ctx.nowMs() < untilMs && !options.signal?.aborted);
  return totals;
}
