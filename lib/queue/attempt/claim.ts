/**
 * The life of an attempt: claim (a conditional visibility-timeout update), start,
 * heartbeat, defer, and end. The writes are built in store/job-writes.ts; here
 * they are chosen, sent, and their lifecycle events published.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import {
  appendHistory,
  attemptRecordOf,
  boundedEnding,
  guardOf,
  jobAfterEnd,
  planNextState,
  type ClaimGuard,
  type EndAttemptOptions,
  type NextState,
} from '../../domain/attempts.js';
import type { HeldSlots, Job, WorkerIdentity } from '../../domain/job.js';
import type { ProgressReport } from '../../domain/progress.js';
import { progressToJson } from '../../store/items.js';
import type { JobType } from '../../domain/job-type.js';
import { eventForUnstartedJob, eventsForEndedAttempt } from '../../domain/lifecycle-events.js';
import { giveBackSlots } from '../limits/slot-returns.js';
import {
  claimParams,
  deferParams,
  endAttemptParams,
  expireQueuedParams,
  extendClaimParams,
  historyRoomBytes,
  markStartedParams,
  recordProgressParams,
  releaseClaimParams,
  requestCancelParams,
  updateJob,
  type JobWriteResult,
} from '../../store/job-writes.js';
import { claimIndexKeys, finishedIndexKeys, purgeAtS, queuedIndexKeys } from '../../store/keys.js';
import type { UpdateParams } from '../../store/send.js';
import type { QueueContext } from '../context.js';
import { writeLaneEntry } from '../lanes/bucket-directory.js';
import { claimSeatOf, claimTokenOf, createSeatAllocator, type ClaimSeat } from '../../domain/claim-seats.js';
import { handBackSeats, markSeatCancelled, recordStarts, seatStart } from '../../store/start-records.js';
import { recordSpan, SpanKind } from '../../domain/spans.js';

/** A job update, its lane bucket recorded first when it lies ahead (see directory.ts). */
function writeJob(ctx: QueueContext, params: UpdateParams): Promise<JobWriteResult> {
  const values = params.ExpressionAttributeValues;
  return writeLaneEntry(ctx, values?.[':gsi1pk'], values?.[':gsi1sk'], () => updateJob(ctx, params));
}

export type ClaimResult =
  | { kind: 'claimed'; job: Job }
  /** Another poller claimed it first, or it is not due (yet) any more. */
  | { kind: 'lost' }
  /** It was due but past its expires_at: archived as expired without running. */
  | { kind: 'expired'; job: Job };

/**
 * Claims a due job. With `slots`, the job records them as held: the poll reserved them on the counters
 * beforehand (queue/poll/claim-due-entries.ts), so the claim itself is a plain conditional update either way. Its token
 * names `seat`, whose group's start a worker records for all of them at once (domain/claim-seats.ts); a claim
 * made on its own has a group of its own.
 */
export async function claimJob(
  ctx: QueueContext,
  ref: Pick<Job, 'type' | 'id'>,
  jobType: JobType,
  slots?: HeldSlots,
  seat: ClaimSeat = createSeatAllocator(1)(),
): Promise<ClaimResult> {
  const claimToken = claimTokenOf(seat);
  const startedAt = new Date();
  const nowMs = ctx.nowMs();
  const claimedUntilMs = nowMs + jobType.visibilityTimeoutS * 1000;
  const params = claimParams(ref, { claimToken, nowMs, claimedUntilMs, index: claimIndexKeys(ctx.settings, ref, claimedUntilMs), slots });
  const claimed = await writeJob(ctx, params);
  if (claimed.ok) {
    if (claimed.job.claimToken !== claimToken) return { kind: 'lost' };
    const { job } = claimed;
    recordSpan('djq claim', job.traceparent, { kind: SpanKind.INTERNAL, attributes: { 'djq.job.type': job.type, 'djq.job.id': job.id, 'djq.attempt': job.attempt }, startedAt });
    return { kind: 'claimed', job };
  }
  const current = claimed.current;
  // The SDK retried a claim whose first try was applied but whose answer was lost: the claim is ours.
  if (current?.claimToken === claimToken) return { kind: 'claimed', job: current };
  if (current?.status === 'queued' && current.expiresAtMs !== undefined && current.expiresAtMs <= ctx.nowMs()) {
    const expired = await expireQueuedJob(ctx, current);
    if (expired) return { kind: 'expired', job: expired };
  }
  return { kind: 'lost' };
}

async function expireQueuedJob(ctx: QueueContext, job: Job): Promise<Job | undefined> {
  const nowMs = ctx.nowMs();
  const finished = finishedIndexKeys(ctx.settings, job, 'expired', nowMs);
  const result = await writeJob(ctx, expireQueuedParams(job, nowMs, purgeAtS(nowMs, ctx.settings.retentionDays), finished));
  if (!result.ok) return undefined;
  await ctx.events.publish([eventForUnstartedJob(result.job, 'job.expired')]);
  return result.job;
}

/**
 * How recording an attempt's start went; `cancelAsked`: a cancel was asked before the attempt started, so it ends
 * cancelled without running (`by`: who asked, when the job or start record says).
 */
export type StartResult = 'started' | 'already_started' | 'claim_lapsed' | { cancelAsked: true; by?: string | undefined };

/**
 * Records that the attempt has started, once, before its target runs: a second delivery of the same claim (an
 * async invoke delivered twice) finds `startedAtMs` set and must not run the job, a delivery whose claim was
 * taken back (it came too late) finds another claim or none, and the sweeper tells a claim whose worker never
 * started (a throttled or late invoke) from an attempt that started and hung.
 */
export async function markStarted(ctx: QueueContext, job: Job, worker: WorkerIdentity): Promise<StartResult> {
  const startToken = randomUUID();
  const guard = guardOf(job);
  const result = await writeJob(ctx, markStartedParams(guard, ctx.nowMs(), worker, startToken));
  // A retried write whose first try was applied finds its own start token: this delivery is the one that started.
  if (result.ok || result.current?.startToken === startToken) return 'started';
  const current = result.current;
  const sameClaim = current?.claimToken === guard.claimToken && current.attempt === guard.attempt;
  if (sameClaim && current.startedAtMs !== undefined) return 'already_started';
  return sameClaim && current.cancelRequestedAtMs !== undefined ? { cancelAsked: true, by: current.cancelledBy } : 'claim_lapsed';
}

/** Whether `current` is the job's claim as `job` held it, with a cancel asked since. */
function cancelAskedOn(current: Job | undefined, job: Job): current is Job {
  return current !== undefined && current.claimToken === job.claimToken && current.attempt === job.attempt && current.cancelRequestedAtMs !== undefined;
}

/** The jobs whose claims name seats, by group (domain/claim-seats.ts); jobs of older tokens are left out. */
function bySeatGroup(jobs: readonly Job[]): Map<string, { seats: number[]; jobs: Job[] }> {
  const groups = new Map<string, { seats: number[]; jobs: Job[] }>();
  for (const job of jobs) {
    const seat = claimSeatOf(job.claimToken);
    if (!seat) continue;
    const group = groups.get(seat.group) ?? { seats: [], jobs: [] };
    group.seats.push(seat.seat);
    group.jobs.push(job);
    groups.set(seat.group, group);
  }
  return groups;
}

/** A short id for one start record write: it is stored once for each seat the write takes. */
const newWriteId = (): string => randomBytes(6).toString('base64url');

/**
 * Records the start of jobs whose claims name seats (domain/claim-seats.ts), before any of them runs: one write
 * per group among them, usually one for the batch, where a start of its own would cost each job a write. Each
 * such job gets 'started', 'already_started' (its batch was delivered twice and the other copy has it, or the
 * poller handed it back), or the error its group's write failed with; jobs of older tokens are left out.
 */
export async function recordBatchStarts(ctx: QueueContext, jobs: readonly Job[], worker: WorkerIdentity): Promise<Map<Job, StartResult | Error>> {
  const starts = new Map<Job, StartResult | Error>();
  const nowMs = ctx.nowMs();
  await Promise.all(
    [...bySeatGroup(jobs)].map(async ([group, members]) => {
      let outcome: StartResult | Error;
      try {
        const start = { writeId: newWriteId(), nowMs, worker, purgeAtS: purgeAtS(nowMs, ctx.settings.retentionDays) };
        const recorded = await recordStarts(ctx, group, members.seats, start);
        if (recorded.outcome === 'recorded') {
          for (const [at, job] of members.jobs.entries()) {
            const cancel = recorded.cancelledSeats.get(members.seats[at]!);
            starts.set(job, cancel ? { cancelAsked: true, by: cancel.by } : 'started');
          }
          return;
        }
        outcome = 'already_started';
      } catch (error) {
        outcome = error instanceof Error ? error : new Error(String(error));
      }
      for (const job of members.jobs) starts.set(job, outcome);
    }),
  );
  return starts;
}

/**
 * The jobs of a batch whose invoke failed that may be handed back at once: those of older tokens (a copy that
 * still arrives finds their claims gone when it records their starts), and those whose seats the poller took away
 * from any worker first (store/start-records.ts), so a copy that still arrives runs none of them. A seat a worker
 * took already, or one whose write failed, stays claimed: it lapses, and the sweeper decides.
 */
export async function handBackable(ctx: QueueContext, jobs: readonly Job[]): Promise<Job[]> {
  const groups = bySeatGroup(jobs);
  const seated = new Set([...groups.values()].flatMap((group) => group.jobs));
  const nowMs = ctx.nowMs();
  const handedBack = await Promise.all(
    [...groups].map(async ([group, members]) =>
      (await handBackSeats(ctx, group, members.seats, purgeAtS(nowMs, ctx.settings.retentionDays)).catch(() => false)) ? members.jobs : [],
    ),
  );
  return [...jobs.filter((job) => !seated.has(job)), ...handedBack.flat()];
}

/**
 * When and where the attempt a lapsed claim holds started, or undefined if no worker took it up: the job says so
 * (a start of its own, a callback wait), or its claim's group start record does.
 */
export async function attemptStart(ctx: QueueContext, job: Job): Promise<{ startedAtMs: number; worker?: WorkerIdentity } | undefined> {
  if (job.startedAtMs !== undefined) return { startedAtMs: job.startedAtMs, ...(job.worker ? { worker: job.worker } : {}) };
  const seat = claimSeatOf(job.claimToken);
  return seat === undefined ? undefined : seatStart(ctx, seat);
}

/** The attempt's report as the job keeps it, made at `nowMs`. */
function progressJsonOf(guard: ClaimGuard, report: ProgressReport, nowMs: number): string {
  return progressToJson({ ...report, attempt: guard.attempt, atMs: nowMs });
}

/**
 * Moves the claim's deadline to `claimedUntilMs` (never earlier than it is), and records `progress` when
 * given, even when the deadline is already later; undefined when the claim is no longer held.
 */
export async function extendClaim(ctx: QueueContext, guard: ClaimGuard, claimedUntilMs: number, progress?: ProgressReport): Promise<Job | undefined> {
  const nowMs = ctx.nowMs();
  const index = claimIndexKeys(ctx.settings, guard, claimedUntilMs);
  const progressJson = progress === undefined ? undefined : progressJsonOf(guard, progress, nowMs);
  const result = await writeJob(ctx, extendClaimParams(guard, nowMs, claimedUntilMs, index, progressJson));
  if (result.ok) return result.job;
  const current = result.current;
  const stillHeld = current?.claimToken === guard.claimToken && current.attempt === guard.attempt;
  if (!stillHeld || (current.status !== 'running' && current.status !== 'awaiting_callback')) return undefined;
  return progress === undefined ? current : recordProgress(ctx, guard, progress);
}

/** Records the attempt's progress report, its claim's deadline untouched; undefined when the claim is no longer held. */
export async function recordProgress(ctx: QueueContext, guard: ClaimGuard, progress: ProgressReport): Promise<Job | undefined> {
  const nowMs = ctx.nowMs();
  const result = await updateJob(ctx, recordProgressParams(guard, nowMs, progressJsonOf(guard, progress, nowMs)));
  return result.ok ? result.job : undefined;
}

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
function endLanded(current: Job | undefined, endToken: string): boolean {
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

async function writeEnd(
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

/**
 * Asks the running attempt to stop, for `cancelledBy`: marks the job (on condition it is still running on the
 * claim read) and then its claim's seat in the start record, where its worker looks a second or so while it
 * runs. The job ends cancelled when its worker, or the sweeper once the claim lapses, ends the attempt. A
 * refusal is the job as it was; a cancel asked already is asked again (the seat marked again, the first
 * canceller kept), so a repeat whose seat mark failed mends it.
 */
export async function requestCancel(ctx: QueueContext, job: Job, cancelledBy?: string): Promise<JobWriteResult> {
  const nowMs = ctx.nowMs();
  const guard = guardOf(job);
  let result = await updateJob(ctx, requestCancelParams(guard, nowMs, cancelledBy));
  if (!result.ok && result.current?.status === 'running' && cancelAskedOn(result.current, job)) result = { ok: true, job: result.current };
  if (!result.ok) return result;
  const seat = claimSeatOf(job.claimToken);
  const by = result.job.cancelledBy;
  if (seat) await markSeatCancelled(ctx, seat, { atMs: nowMs, ...(by !== undefined ? { by } : {}) }, purgeAtS(nowMs, ctx.settings.retentionDays));
  return result;
}
