/**
 * The poller: finds due jobs lane by lane, claims them with bounded
 * parallelism, and hands them to workers in batches through an injected invoker.
 */
import pLimit from 'p-limit';
import { claimJob, releaseClaim, type ClaimResult } from './claims.js';
import type { QueueContext } from './context.js';
import { JOB_TYPES_REFRESH_MS, listJobTypes } from './job-types.js';
import { bucketOf, parseJobPk, type Lane } from '../store/keys.js';
import { advanceCursor, readCursor, scanLane, type DueEntry } from './lanes.js';
import { jsonBytes } from './jobs.js';
import { DEFAULT_PRIORITY, withoutSecrets, type JobTypeWithoutSecrets } from '../domain/model.js';
import type { Job, JobType, PriorityOrder } from '../domain/model.js';
import { returnRateTokens, takeRateTokens, type RateBucketCache } from './rate-limit.js';
import { abortableSleep } from '../domain/sleep.js';
import { hasSlotLimits, limitTooSmall, readInFlight, slotsFor, throttleKeyLimit } from './slots.js';

/**
 * What one worker invocation receives: the claimed jobs and the configuration of their types, those types only
 * and without their secrets, since a batch that fails is kept in the dead-letter queue as it was sent.
 */
export interface WorkerBatch {
  jobs: Job[];
  jobTypes: Record<string, JobTypeWithoutSecrets>;
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

/** Lambda's async invoke accepts 1 MB; keep every payload well under it. */
const MAX_BATCH_BYTES = 900 * 1024;

const EMPTY_BATCH_BYTES = jsonBytes({ jobs: [], jobTypes: {} } satisfies WorkerBatch);

interface TypeEntry {
  jobType: JobTypeWithoutSecrets;
  /** The size of its `"<name>":<type>` entry in the serialised batch. */
  bytes: number;
}

function typeEntry(name: string, jobType: JobType): TypeEntry {
  const stripped = withoutSecrets(jobType);
  return { jobType: stripped, bytes: jsonBytes(name) + 1 + jsonBytes(stripped) };
}

/**
 * Collects jobs, each with its type, into batches of at most `maxJobs` whose serialised payload is at most
 * `maxBytes`, handing each to `flush` as soon as it is full; a job too big for any batch travels alone. A batch
 * carries the types of its own jobs only. Its size is kept as jobs join rather than by serialising it again:
 * the empty payload, each job, each type's entry, and a comma between two jobs or two entries.
 */
export function createBatcher(maxJobs: number, flush: (batch: WorkerBatch) => void, maxBytes = MAX_BATCH_BYTES) {
  let batch: WorkerBatch = { jobs: [], jobTypes: {} };
  let typeCount = 0;
  let batchBytes = EMPTY_BATCH_BYTES;
  const flushBatch = (): void => {
    if (batch.jobs.length === 0) return;
    flush(batch);
    batch = { jobs: [], jobTypes: {} };
    typeCount = 0;
    batchBytes = EMPTY_BATCH_BYTES;
  };
  /** The batch's size with a job of `jobBytes` in, and the entry of its type when the batch lacks it. */
  const bytesWith = (jobBytes: number, entry: TypeEntry | undefined): number =>
    batchBytes + (batch.jobs.length > 0 ? 1 : 0) + jobBytes + (entry ? (typeCount > 0 ? 1 : 0) + entry.bytes : 0);
  return {
    add(job: Job, jobType: JobType): void {
      const jobBytes = jsonBytes(job);
      let entry = Object.hasOwn(batch.jobTypes, job.type) ? undefined : typeEntry(job.type, jobType);
      if (batch.jobs.length > 0 && bytesWith(jobBytes, entry) > maxBytes) {
        flushBatch();
        entry ??= typeEntry(job.type, jobType);
      }
      batchBytes = bytesWith(jobBytes, entry);
      batch.jobs.push(job);
      if (entry) {
        batch.jobTypes[job.type] = entry.jobType;
        typeCount++;
      }
      if (batch.jobs.length >= maxJobs) flushBatch();
    },
    /** Hands over the last, partly filled batch. */
    close: flushBatch,
  };
}

function readyAtMsOf(entry: DueEntry): number {
  return Number(entry.gsi1sk.slice(0, entry.gsi1sk.indexOf('#')));
}

/**
 * The order a type's due jobs are claimed in: critical jobs (weight 0) first,
 * then by ready time and priority as the type says (lower priority first).
 */
export function orderDueEntries(entries: DueEntry[], order: PriorityOrder): DueEntry[] {
  const rank = (entry: DueEntry): [number, number, number] => {
    const critical = entry.weight === 0 ? 0 : 1;
    const priority = entry.priority ?? DEFAULT_PRIORITY;
    return order === 'priority_first' ? [critical, priority, readyAtMsOf(entry)] : [critical, readyAtMsOf(entry), priority];
  };
  return entries
    .map((entry) => ({ entry, rank: rank(entry) }))
    .sort((a, b) => a.rank[0] - b.rank[0] || a.rank[1] - b.rank[1] || a.rank[2] - b.rank[2] || a.entry.pk.localeCompare(b.entry.pk))
    .map(({ entry }) => entry);
}

export interface PollOptions {
  jobTypes: JobType[];
  invoker: WorkerInvoker;
  cursors: CursorCache;
  /** Token buckets this poller has seen; a fresh map costs one failed write per rate-limited type. */
  rateBuckets?: RateBucketCache;
  shards?: number[];
}

export async function pollOnce(ctx: QueueContext, options: PollOptions): Promise<PollResult> {
  const { settings } = ctx;
  const shards = options.shards ?? Array.from({ length: settings.shards }, (_, shard) => shard);
  const rateBuckets = options.rateBuckets ?? new Map();
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
  const dispatches: Promise<void>[] = [];
  // A batch goes to a worker as soon as it is full, so early claims do not wait out the slow ones.
  const batcher = createBatcher(settings.workerBatchSize, (batch) => {
    dispatches.push(
      (async () => {
        try {
          await options.invoker.invoke(batch);
          result.dispatched += batch.jobs.length;
        } catch {
          // The batch never reached a worker: hand the claims back now rather than wait out the visibility
          // timeout. A release that fails leaves the claim to lapse; the sweeper then hands it back.
          const released = await Promise.allSettled(batch.jobs.map((job) => releaseClaim(ctx, job)));
          result.released += released.filter((outcome) => outcome.status === 'fulfilled' && outcome.value).length;
        }
      })(),
    );
  });

  const scanShard = async (jobType: JobType, shard: number): Promise<DueEntry[]> => {
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
    for (const entry of scan.entries) result.oldestDueLagMs = Math.max(result.oldestDueLagMs, Math.max(0, nowMs - readyAtMsOf(entry)));
    return scan.entries;
  };

  /** Counts a claim's outcome; true when it used one of the poll's rate tokens. */
  const record = (claim: ClaimResult, jobType: JobType): boolean => {
    if (claim.kind === 'claimed') {
      result.claimed++;
      batcher.add(claim.job, jobType);
      return true;
    }
    if (claim.kind === 'expired') result.expired++;
    else if (claim.kind === 'lost') result.lostRaces++;
    return false;
  };

  /** Claims without counters: in parallel, in order. */
  const claimUnlimited = async (jobType: JobType, entries: DueEntry[]): Promise<number> => {
    const outcomes = await Promise.allSettled(
      entries.map((entry) => claimLimit(async () => record(await claimJob(ctx, parseJobPk(entry.pk), jobType), jobType))),
    );
    throwFirstRejection(outcomes);
    return outcomes.filter((outcome) => outcome.status === 'fulfilled' && outcome.value).length;
  };

  /**
   * Claims one at a time, in order, while the counters have room: every claim of the type touches the same
   * counter, so parallel claims would only conflict. When the next job does not fit the type, no later job of
   * weight above 0 is claimed in this poll, so a heavy or urgent job is not overtaken for ever by light ones; a
   * full throttle key holds back only that key's jobs.
   */
  const claimWithinSlots = async (jobType: JobType, entries: DueEntry[], tokens: number): Promise<number> => {
    const limitedKeys = [...new Set(entries.flatMap((entry) => entry.throttleKey ?? []))].filter(
      (key) => throttleKeyLimit(jobType, key) !== undefined,
    );
    const inFlight = await readInFlight(ctx, jobType.name, limitedKeys);
    let typeRoom = jobType.concurrency === null ? Infinity : jobType.concurrency - inFlight.type;
    const keyRoom = new Map(limitedKeys.map((key) => [key, (throttleKeyLimit(jobType, key) ?? 0) - (inFlight.keys.get(key) ?? 0)]));
    let typeFull = false;
    const fullKeys = new Set<string>();
    let used = 0;
    for (const entry of entries) {
      if (used >= tokens) break;
      const slots = slotsFor(jobType, { weight: entry.weight ?? 1, ...(entry.throttleKey !== undefined ? { throttleKey: entry.throttleKey } : {}) });
      if (slots) {
        if ((slots.type && typeFull) || (slots.key !== undefined && fullKeys.has(slots.key))) continue;
        // A job heavier than a limit can never run under it: it waits for the type to change, holding nothing up.
        if (limitTooSmall(jobType, slots)) continue;
        if (slots.type && slots.weight > typeRoom) {
          typeFull = true;
          continue;
        }
        if (slots.key !== undefined && slots.weight > (keyRoom.get(slots.key) ?? 0)) {
          fullKeys.add(slots.key);
          continue;
        }
      }
      const claim = await claimJob(ctx, parseJobPk(entry.pk), jobType, slots);
      if (record(claim, jobType)) used++;
      if (claim.kind === 'claimed' && slots) {
        if (slots.type) typeRoom -= slots.weight;
        if (slots.key !== undefined) keyRoom.set(slots.key, (keyRoom.get(slots.key) ?? 0) - slots.weight);
      }
      if (claim.kind === 'full') {
        if (claim.limit === 'type') typeFull = true;
        else if (slots?.key !== undefined) fullKeys.add(slots.key);
      }
    }
    return used;
  };

  const pollType = async (jobType: JobType): Promise<void> => {
    // Settled, not all-or-nothing: one lane's failure must not keep the other lanes' jobs from being claimed.
    const scans = await Promise.allSettled(shards.map((shard) => scanShard(jobType, shard)));
    const entries = orderDueEntries(
      scans.flatMap((scan) => (scan.status === 'fulfilled' ? scan.value : [])),
      jobType.priorityOrder,
    );
    if (entries.length > 0) {
      const tokens = await takeRateTokens(ctx, jobType, entries.length, rateBuckets);
      let used = 0;
      try {
        used = hasSlotLimits(jobType)
          ? await claimWithinSlots(jobType, entries, tokens)
          : await claimUnlimited(jobType, entries.slice(0, tokens));
      } finally {
        if (jobType.rateLimitPerS !== null) await returnRateTokens(ctx, jobType.name, tokens - used, rateBuckets);
      }
    }
    throwFirstRejection(scans);
  };

  // A paused type (paused, or concurrency 0) keeps its jobs queued; nothing is claimed.
  const activeTypes = options.jobTypes.filter((jobType) => jobType.concurrency !== 0 && !jobType.paused);
  // Settled too: what one type claimed is dispatched whatever happened to another.
  const typeOutcomes = await Promise.allSettled(activeTypes.map(pollType));

  batcher.close();
  await Promise.all(dispatches);
  // Reported only now, after everything claimed was handed over or released.
  throwFirstRejection(typeOutcomes);
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
      const result = await pollOnce(ctx, { jobTypes, invoker: options.invoker, cursors, rateBuckets, ...(options.shards ? { shards: options.shards } : {}) });
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
