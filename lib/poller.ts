/**
 * The poller: finds due jobs lane by lane, claims them with bounded
 * parallelism, and hands them to workers in batches through an injected invoker.
 */
import pLimit from 'p-limit';
import { claimJob, releaseClaim } from './claims.js';
import type { QueueContext } from './config.js';
import { listJobTypes } from './job-types.js';
import { bucketOf, parseJobPk, type Lane } from './keys.js';
import { advanceCursor, readCursor, scanLane } from './lanes.js';
import type { Job, JobType } from './model.js';

/** What one worker invocation receives: the claimed jobs and the configuration of their types. */
export interface WorkerBatch {
  jobs: Job[];
  jobTypes: Record<string, JobType>;
}

/** Hands a batch to a worker: an async Lambda invoke in AWS, an in-process call locally. */
export interface WorkerInvoker {
  invoke(batch: WorkerBatch): Promise<void>;
}

export interface PollResult {
  claimed: number;
  lostRaces: number;
  expired: number;
  dispatched: number;
  released: number;
  /** Some lane returned a full page: more may be due right now. */
  saturated: boolean;
  /** Age of the oldest due job seen, in ms. */
  oldestDueLagMs: number;
}

/** Cursors this poller has read or moved, so a steady loop does not re-read them every poll. */
export type CursorCache = Map<string, number | undefined>;

/** Lambda's async invoke accepts 1 MB; keep every batch well under it. */
const MAX_BATCH_BYTES = 900 * 1024;

/** Collects jobs into batches of at most `maxJobs` and `maxBytes`, handing each to `flush` as soon as it is full. */
export function createBatcher(maxJobs: number, flush: (jobs: Job[]) => void, maxBytes = MAX_BATCH_BYTES) {
  let current: Job[] = [];
  let currentBytes = 0;
  const flushCurrent = (): void => {
    if (current.length === 0) return;
    flush(current);
    current = [];
    currentBytes = 0;
  };
  return {
    add(job: Job): void {
      const bytes = Buffer.byteLength(JSON.stringify(job), 'utf8');
      if (current.length > 0 && currentBytes + bytes > maxBytes) flushCurrent();
      current.push(job);
      currentBytes += bytes;
      if (current.length >= maxJobs) flushCurrent();
    },
    /** Hands over the last, partly filled batch. */
    close: flushCurrent,
  };
}

function dueLagMs(gsi1sk: string, nowMs: number): number {
  return Math.max(0, nowMs - Number(gsi1sk.slice(0, gsi1sk.indexOf('#'))));
}

export async function pollOnce(
  ctx: QueueContext,
  options: { jobTypes: JobType[]; invoker: WorkerInvoker; cursors: CursorCache; shards?: number[] },
): Promise<PollResult> {
  const { settings } = ctx;
  const shards = options.shards ?? Array.from({ length: settings.shards }, (_, shard) => shard);
  const result: PollResult = {
    claimed: 0,
    lostRaces: 0,
    expired: 0,
    dispatched: 0,
    released: 0,
    saturated: false,
    oldestDueLagMs: 0,
  };
  const nowMs = ctx.nowMs();
  const claimLimit = pLimit(settings.claimConcurrency);
  const jobTypes = Object.fromEntries(options.jobTypes.map((jobType) => [jobType.name, jobType]));
  const dispatches: Promise<void>[] = [];
  // A batch goes to a worker as soon as it is full, so early claims do not wait out the slow ones.
  const batcher = createBatcher(settings.workerBatchSize, (jobs) => {
    dispatches.push(
      (async () => {
        try {
          await options.invoker.invoke({ jobs, jobTypes });
          result.dispatched += jobs.length;
        } catch {
          // The batch never reached a worker: hand the claims back now rather than wait out the visibility
          // timeout. A release that fails leaves the claim to lapse; the sweeper then hands it back.
          const released = await Promise.allSettled(jobs.map((job) => releaseClaim(ctx, job)));
          result.released += released.filter((outcome) => outcome.status === 'fulfilled' && outcome.value).length;
        }
      })(),
    );
  });

  // A paused type (concurrency 0) keeps its jobs queued; nothing is claimed.
  const activeTypes = options.jobTypes.filter((jobType) => jobType.concurrency !== 0);
  const scans = activeTypes.flatMap((jobType) => shards.map((shard) => ({ jobType, shard })));
  // Settled, not all-or-nothing: one lane's failure must not strand the jobs other lanes already claimed.
  const scanOutcomes = await Promise.allSettled(
    scans.map(async ({ jobType, shard }) => {
      const lane: Lane = { kind: 'queued', type: jobType.name };
      const cacheKey = `${jobType.name}#${shard}`;
      const cursor = options.cursors.has(cacheKey) ? options.cursors.get(cacheKey) : await readCursor(ctx, lane, shard);
      const scan = await scanLane(ctx, lane, shard, {
        cursor,
        startBucket: bucketOf(jobType.createdAtMs, settings.bucketMs),
        limit: settings.claimPageSize,
      });
      options.cursors.set(cacheKey, cursor);
      if (scan.advanceTo !== undefined) {
        const moved = await advanceCursor(ctx, lane, shard, cursor, scan.advanceTo);
        if (moved) options.cursors.set(cacheKey, scan.advanceTo);
        else options.cursors.delete(cacheKey);
      }
      if (scan.entries.length >= settings.claimPageSize) result.saturated = true;
      for (const entry of scan.entries) result.oldestDueLagMs = Math.max(result.oldestDueLagMs, dueLagMs(entry.gsi1sk, nowMs));
      const claims = await Promise.allSettled(
        scan.entries.map((entry) =>
          claimLimit(async () => {
            const claim = await claimJob(ctx, parseJobPk(entry.pk), jobType);
            if (claim.kind === 'claimed') {
              result.claimed++;
              batcher.add(claim.job);
            } else if (claim.kind === 'expired') result.expired++;
            else result.lostRaces++;
          }),
        ),
      );
      throwFirstRejection(claims);
    }),
  );

  batcher.close();
  await Promise.all(dispatches);
  // Reported only now, after everything claimed was handed over or released.
  throwFirstRejection(scanOutcomes);
  return result;
}

function throwFirstRejection(outcomes: PromiseSettledResult<unknown>[]): void {
  const rejected = outcomes.find((outcome): outcome is PromiseRejectedResult => outcome.status === 'rejected');
  if (rejected) throw rejected.reason;
}

export interface PollerLoopOptions {
  invoker: WorkerInvoker;
  /** How long to keep polling. @default settings.pollerRunMs */
  runForMs?: number;
  /** Poll only these shards (pollers split shards so they never fight over them). */
  shards?: number[];
  /** Re-read job types this often, so a new type is served within it. @default 5000 */
  jobTypesRefreshMs?: number;
  /** Stops the loop early, e.g. on shutdown. */
  signal?: AbortSignal;
  onPoll?: (result: PollResult) => void;
  onError?: (error: unknown) => void;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

export function abortableSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

/** Polls until the run time is over: at once again while a lane is saturated, otherwise one poll interval after the last poll began. */
export async function runPollerLoop(ctx: QueueContext, options: PollerLoopOptions): Promise<PollResult> {
  const sleep = options.sleep ?? abortableSleep;
  const refreshMs = options.jobTypesRefreshMs ?? 5_000;
  const deadlineMs = ctx.nowMs() + (options.runForMs ?? ctx.settings.pollerRunMs);
  const cursors: CursorCache = new Map();
  const totals: PollResult = { claimed: 0, lostRaces: 0, expired: 0, dispatched: 0, released: 0, saturated: false, oldestDueLagMs: 0 };
  let jobTypes: JobType[] = [];
  let jobTypesReadAtMs = -Infinity;
  do {
    const pollStartedAtMs = ctx.nowMs();
    try {
      if (ctx.nowMs() - jobTypesReadAtMs >= refreshMs) {
        jobTypes = await listJobTypes(ctx);
        jobTypesReadAtMs = ctx.nowMs();
      }
      const result = await pollOnce(ctx, { jobTypes, invoker: options.invoker, cursors, ...(options.shards ? { shards: options.shards } : {}) });
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
