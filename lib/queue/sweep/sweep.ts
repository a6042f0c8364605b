/**
 * The sweeper: ends attempts whose claim ran out (a dead worker, a callback
 * that never came) and, as a backstop, moves any waiting job found behind a
 * poller's cursor back into the current bucket. A job or lane shard that fails
 * is reported and skipped; the rest of the sweep goes on.
 */
import { attemptStart } from '../attempt/claim.js';
import { endCancelled, endAttempt, releaseClaim } from '../attempt/end-attempt.js';
import type { QueueContext } from '../context.js';
import { listJobTypes } from '../catalog/job-types.js';
import { getJob } from '../read-job.js';
import { requeueStragglerParams } from '../../store/job-writes.js';
import { bucketOf, laneShards, parseClaimSortKey, parseJobPk, queuedIndexKeys, sortKeyTimeMs, type Lane } from '../../store/keys.js';
import { updateItem } from '../../store/send.js';
import { readCursor, type DueEntry } from '../../store/due-index.js';
import { scanBehindCursor, scanLane } from '../lanes/lane-walk.js';
import { advanceLaneCursor, readWalkCursor, writeLaneEntry } from '../lanes/bucket-directory.js';
import { reconcileCounters } from '../limits/counter-reconcile.js';
import type { JobType } from '../../domain/job-type.js';
import type { CustomRetryPolicies } from '../../domain/retry.js';

export interface SweepResult {
  /** Expired claims sent back to the queue for another attempt. */
  requeued: number;
  /** Expired claims that ended the job: no attempts left, at_most_once, or cancelled while it ran. */
  ended: number;
  /** Index entries that no longer matched their job (already finished or extended). */
  stale: number;
  /** Waiting jobs found behind a cursor and moved to the current bucket. */
  stragglers: number;
  /** Lapsed claims whose worker never started them (no start record), handed back without counting an attempt. */
  released: number;
  /** Jobs the sweep could not handle (a read or write failed): skipped, and found again by the next sweep. */
  failed: number;
  /** Lane shards the sweep could not read: skipped, and read again by the next sweep. */
  failedLanes: number;
  /** Concurrency counters found above what their jobs hold, after a process died between two writes, and set right. */
  reconciled: number;
}

/** What a failure the sweep skipped was about: a lane shard, and the job when it was one job's. */
export interface SweepFailure {
  /** A lane, or a type's concurrency counters. */
  lane: Lane['kind'] | 'counters';
  shard: number;
  /** The lane's job type, or the failed job's. */
  type?: string;
  id?: string;
}

export interface SweepOptions {
  customPolicies: CustomRetryPolicies;
  shards?: number[];
  /** Told of each failure the sweep skipped; the rest of the sweep goes on without it. */
  onError?: (failure: SweepFailure, error: unknown) => void;
}

export const emptySweepResult = (): SweepResult => ({ requeued: 0, ended: 0, stale: 0, stragglers: 0, released: 0, failed: 0, failedLanes: 0, reconciled: 0 });

/** Two sweeps' counts added, field by field: a loop's totals. */
export const addSweepResults = (a: SweepResult, b: SweepResult): SweepResult => ({
  requeued: a.requeued + b.requeued,
  ended: a.ended + b.ended,
  stale: a.stale + b.stale,
  stragglers: a.stragglers + b.stragglers,
  released: a.released + b.released,
  failed: a.failed + b.failed,
  failedLanes: a.failedLanes + b.failedLanes,
  reconciled: a.reconciled + b.reconciled,
});

const SWEEP_PAGE = 100;
/** Pages per lane shard in one sweep, so one sweep always ends. */
const MAX_PAGES = 20;

async function timeOutClaim(
  ctx: QueueContext,
  entry: DueEntry,
  jobTypes: Map<string, JobType>,
  customPolicies: CustomRetryPolicies,
  result: SweepResult,
): Promise<void> {
  const seen = parseClaimSortKey(entry.gsi1sk);
  const job = await getJob(ctx, seen.type, seen.id);
  const jobType = jobTypes.get(seen.type);
  const stillClaimed =
    job !== undefined &&
    (job.status === 'running' || job.status === 'awaiting_callback') &&
    job.claimedUntilMs === seen.claimedUntilMs &&
    seen.claimedUntilMs <= ctx.nowMs();
  if (!stillClaimed || jobType === undefined) {
    result.stale++;
    return;
  }
  // Every attempt records its start before its target runs (on the job, or for its claim's group): without that
  // record the worker never started it (its invoke was throttled, late or lost), so the job goes back without
  // counting an attempt, as if never claimed; unless a worker renewed the claim since it was seen lapsed.
  const started = await attemptStart(ctx, job);
  if (job.cancelRequestedAtMs !== undefined) {
    // Cancelled while it ran, and its worker died before ending it: it ends cancelled, never queued again.
    const cancelled = await endCancelled(ctx, job, {
      by: job.cancelledBy,
      expectedClaimedUntilMs: seen.claimedUntilMs,
      ...started,
    });
    if (cancelled) result.ended++;
    else result.stale++;
    return;
  }
  if (!started) {
    if (await releaseClaim(ctx, job, job.runAfterMs, seen.claimedUntilMs)) result.released++;
    else result.stale++;
    return;
  }
  const awaitingCallback = job.status === 'awaiting_callback';
  const ended = await endAttempt(ctx, job, {
    ending: {
      outcome: 'timed_out',
      failure: {
        error: awaitingCallback
          ? { class: 'CallbackTimeoutError', message: `no callback within ${jobType.timeoutS} s` }
          : { class: 'VisibilityTimeoutError', message: 'the claim expired before the worker reported an outcome' },
        retryable: true,
      },
    },
    jobType,
    customPolicies,
    expectedClaimedUntilMs: seen.claimedUntilMs,
    ...started,
  });
  if (!ended) result.stale++;
  else if (ended.next.status === 'queued') result.requeued++;
  else result.ended++;
}

async function requeueStraggler(ctx: QueueContext, entry: DueEntry, result: SweepResult): Promise<void> {
  const ref = parseJobPk(entry.pk);
  const nowMs = ctx.nowMs();
  const index = queuedIndexKeys(ctx.settings, ref, sortKeyTimeMs(entry.gsi1sk), nowMs);
  const requeued = await writeLaneEntry(ctx, index.gsi1pk, () => updateItem(ctx, requeueStragglerParams(ref, entry.gsi1pk, index)));
  if (requeued.ok) result.stragglers++;
}

export async function sweepOnce(ctx: QueueContext, options: SweepOptions): Promise<SweepResult> {
  const result = emptySweepResult();
  const jobTypeList = await listJobTypes(ctx);
  if (jobTypeList.length === 0) return result;
  const jobTypes = new Map(jobTypeList.map((jobType) => [jobType.name, jobType]));
  const shards = options.shards ?? Array.from({ length: ctx.settings.shards }, (_, shard) => shard);
  const firstTypeBucket = bucketOf(Math.min(...jobTypeList.map((t) => t.createdAtMs)), ctx.settings.bucketMs);

  // A failure is skipped, never thrown: the same entry is found again every sweep, so one job or lane that
  // failed the whole sweep would stop every other lapsed claim from coming back, for good.
  const skip = (failure: SweepFailure, error: unknown): void => {
    if (failure.id === undefined) result.failedLanes++;
    else result.failed++;
    options.onError?.(failure, error);
  };
  const inLane = async (lane: Lane, shard: number, sweepLane: () => Promise<void>): Promise<void> => {
    try {
      await sweepLane();
    } catch (error) {
      skip({ lane: lane.kind, shard, ...(lane.kind === 'queued' ? { type: lane.type } : {}) }, error);
    }
  };
  /** Handles each entry not already failed in this sweep; returns how many it tried. */
  const handleEntries = async (
    lane: Lane,
    shard: number,
    entries: DueEntry[],
    handle: (entry: DueEntry) => Promise<void>,
    failedJobs: Set<string>,
  ): Promise<number> => {
    let tried = 0;
    for (const entry of entries) {
      // A failed job keeps its entry, so every later page of the lane finds it again.
      if (failedJobs.has(entry.pk)) continue;
      tried++;
      try {
        await handle(entry);
      } catch (error) {
        failedJobs.add(entry.pk);
        skip({ lane: lane.kind, shard, ...parseJobPk(entry.pk) }, error);
      }
    }
    return tried;
  };

  const claims: Lane = { kind: 'claims' };
  const timeOut = (entry: DueEntry) => timeOutClaim(ctx, entry, jobTypes, options.customPolicies, result);
  const sweepClaims = async (shard: number): Promise<void> => {
    const failedJobs = new Set<string>();
    const read = await readWalkCursor(ctx, claims, shard);
    let cursor = read.bucket;
    if (cursor !== undefined) {
      await handleEntries(claims, shard, await scanBehindCursor(ctx, claims, shard, cursor, SWEEP_PAGE), timeOut, failedJobs);
    }
    for (let page = 0; page < MAX_PAGES; page++) {
      const scan = await scanLane(ctx, claims, shard, { cursor, startBucket: firstTypeBucket, limit: SWEEP_PAGE, directoryFromBucket: read.directoryFromBucket });
      const tried = await handleEntries(claims, shard, scan.entries, timeOut, failedJobs);
      const move = scan.advanceTo !== undefined ? { from: cursor, to: scan.advanceTo, directoryFromBucket: read.directoryFromBucket } : undefined;
      const advanced = move !== undefined && (await advanceLaneCursor(ctx, claims, shard, move));
      if (advanced) cursor = scan.advanceTo;
      // A walk that ran out of queries goes on from its cursor next sweep; a full page of jobs that already failed
      // would only be read again as it is.
      if (!scan.caughtUp || scan.entries.length < SWEEP_PAGE || tried === 0) break;
    }
  };
  const claimShards = options.shards ?? laneShards(ctx.settings, claims);
  await Promise.all(claimShards.map((shard) => inLane(claims, shard, () => sweepClaims(shard))));

  const sweepStragglers = async (lane: Lane, shard: number): Promise<void> => {
    const cursor = await readCursor(ctx, lane, shard);
    if (cursor === undefined) return;
    const entries = await scanBehindCursor(ctx, lane, shard, cursor, SWEEP_PAGE);
    await handleEntries(lane, shard, entries, (entry) => requeueStraggler(ctx, entry, result), new Set());
  };
  await Promise.all(
    jobTypeList.flatMap((jobType) => {
      const lane: Lane = { kind: 'queued', type: jobType.name };
      return shards.map((shard) => inLane(lane, shard, () => sweepStragglers(lane, shard)));
    }),
  );
  // Counters are per type, not per shard: the sweep of shard 0 reconciles them.
  if (shards.includes(0)) await reconcileAll(ctx, jobTypeList, result, skip);
  return result;
}

async function reconcileAll(ctx: QueueContext, jobTypes: JobType[], result: SweepResult, skip: (failure: SweepFailure, error: unknown) => void): Promise<void> {
  for (const jobType of jobTypes) {
    try {
      result.reconciled += await reconcileCounters(ctx, jobType);
    } catch (error) {
      skip({ lane: 'counters', shard: 0, type: jobType.name }, error);
    }
  }
}
