/**
 * The end of an attempt: its outcome recorded under the claim's guard (succeeded, retried, failed, cancelled),
 * deferred to a callback, or handed back untouched when it never ran.
 */
import { randomUUID } from 'node:crypto';
import { guardOf, type EndAttemptOptions, planNextState, type NextState, jobAfterEnd, boundedEnding, attemptRecordOf, appendHistory } from '../../domain/attempts.js';
import type { JobType } from '../../domain/job-type.js';
import type { WorkerIdentity, Job } from '../../domain/job.js';
import { eventsForEndedAttempt } from '../../domain/lifecycle-events.js';
import { deferParams, historyRoomBytes, endAttemptParams, releaseClaimParams } from '../../store/job-writes.js';
import { claimIndexKeys, purgeAtS, finishedIndexKeys, queuedIndexKeys } from '../../store/keys.js';
import type { QueueContext } from '../context.js';
import { giveBackSlots } from '../limits/slot-returns.js';
import { cancelAskedOn } from './claim.js';
import { writeJob } from './write-job.js';

/**
 * The attempt now waits for a callback until `timeoutS` from now; the sweeper times it out after that. A cancel
 * asked while it ran ends it cancelled instead: the job answered is then cancelled.
 */
export async function deferAttempt(
  ctx: QueueContext,
  job: Job,
  jobType: Pick<JobType, 'timeoutS'>,
  started: { startedAtMs: number; worker: WorkerIdentity },
): Promise<Job | undefined> {
  const nowMs = ctx.nowMs();
  const claimedUntilMs = nowMs + jobType.timeoutS * 1000;
  const index = claimIndexKeys(ctx.settings, job, claimedUntilMs);
  const result = await writeJob(ctx, deferParams(guardOf(job), { nowMs, claimedUntilMs, index, ...started }));
  if (result.ok) return result.job;
  if (cancelAskedOn(result.current, job)) return (await endCancelled(ctx, result.current, { ...started, by: result.current.cancelledBy }))?.job;
  return undefined;
}

/**
 * Hands a claim back untouched when the job was never handed to a worker
 * (dispatch failed), or reached it outside its time windows (due again at
 * `runAfterMs`): the attempt did not happen, so it is not counted. One a cancel was asked for ends cancelled instead.
 */
export async function releaseClaim(ctx: QueueContext, job: Job, runAfterMs = job.runAfterMs, expectedClaimedUntilMs?: number): Promise<boolean> {
  const nowMs = ctx.nowMs();
  const index = queuedIndexKeys(ctx.settings, job, runAfterMs, nowMs);
  const result = await writeJob(ctx, releaseClaimParams(guardOf(job), nowMs, runAfterMs, index, expectedClaimedUntilMs));
  if (result.ok) await giveBackSlots(ctx, job);
  // A job cancelled while claimed must never be queued again: its unstarted attempt ends cancelled.
  else if (cancelAskedOn(result.current, job)) await endCancelled(ctx, result.current, { by: result.current.cancelledBy, expectedClaimedUntilMs });
  return result.ok;
}

/**
 * Whether the job already holds this very end: a write whose answer was lost (a timeout after it landed) is tried
 * again by the SDK and meets its own change as a failed condition. Its events must still be published, and its
 * slots given back, once. Told by a token of its own: two ends of one attempt (a job delivered twice, both runs
 * ending in the same millisecond) can write the same history record.
 */
export function endLanded(current: Job | undefined, endToken: string): boolean {
  return current?.endToken === endToken;
}

/** An attempt's end as written: the job after it and where it went. */
export interface EndedAttempt {
  job: Job;
  next: NextState;
}

/**
 * Ends the attempt the guard names: records it in the history and moves the job
 * to its next state, then publishes its lifecycle events. Returns undefined when
 * the claim is no longer held (a stale worker, callback or sweep), in which case
 * nothing changed and nothing is published. When a cancel was asked while the
 * attempt ran, the attempt ends cancelled whatever it came to (`next.status`
 * says so): the cancel's answer promised it.
 */
export async function endAttempt(ctx: QueueContext, job: Job, options: EndAttemptOptions): Promise<EndedAttempt | undefined> {
  return writeEnd(ctx, job, options, planNextState(ctx, job, options), options.jobType.listSucceeded);
}

/** Ends the attempt cancelled: asked while it ran, or at once for one awaiting its callback (queue/read-job.ts). */
export async function endCancelled(
  ctx: QueueContext,
  job: Job,
  options: Pick<EndAttemptOptions, 'startedAtMs' | 'worker' | 'expectedClaimedUntilMs'> & { by?: string | undefined },
): Promise<EndedAttempt | undefined> {
  const { by, ...rest } = options;
  return writeEnd(ctx, job, { ...rest, ending: { outcome: 'cancelled', by } }, { status: 'cancelled', outcome: 'cancelled' }, false);
}

export async function writeEnd(
  ctx: QueueContext,
  job: Job,
  options: Pick<EndAttemptOptions, 'ending' | 'startedAtMs' | 'worker' | 'expectedClaimedUntilMs'>,
  next: NextState,
  listSucceeded: boolean,
): Promise<EndedAttempt | undefined> {
  const endedAtMs = ctx.nowMs();
  const record = attemptRecordOf(job, options, next.outcome, endedAtMs);
  // The events carry the error as the history keeps it: an unbounded one could pass PutEvents' entry limit.
  const planned = { next, endedAtMs, ending: boundedEnding(options.ending) };
  const end = { ...planned, ...appendHistory(job, record, historyRoomBytes(job, planned)) };
  const index =
    next.status === 'queued'
      ? queuedIndexKeys(ctx.settings, job, next.runAfterMs, endedAtMs)
      : next.status === 'succeeded' && !listSucceeded
        ? // Removing the entry of a success that is not listed costs a write unit less than moving it.
          undefined
        : finishedIndexKeys(ctx.settings, job, next.status, endedAtMs);
  const endToken = randomUUID();
  const update = endAttemptParams(guardOf(job), {
    ...end,
    index,
    purgeAtS: purgeAtS(endedAtMs, ctx.settings.retentionDays),
    expectedClaimedUntilMs: options.expectedClaimedUntilMs,
    endToken,
  });
  const result = await writeJob(ctx, update);
  let ended: Job;
  if (result.ok) ended = result.job;
  else if (endLanded(result.current, endToken)) ended = jobAfterEnd(job, end);
  else if (next.status !== 'cancelled' && cancelAskedOn(result.current, job)) {
    const { startedAtMs, worker, expectedClaimedUntilMs } = options;
    return endCancelled(ctx, result.current, { startedAtMs, worker, expectedClaimedUntilMs, by: result.current.cancelledBy });
  } else return undefined;
  await giveBackSlots(ctx, job);
  await ctx.events.publish(eventsForEndedAttempt(ended, end.ending, next));
  return { job: ended, next };
}
