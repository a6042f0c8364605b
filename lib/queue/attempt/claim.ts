/**
 * The start of an attempt: the claim (a conditional visibility-timeout update) and the worker's start record.
 * Its heartbeats are renew-claim.ts, its end end-attempt.ts. The writes are built in store/job-writes.ts; here
 * they are chosen, sent, and their lifecycle events published.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { guardOf } from '../../domain/attempts.js';
import type { HeldSlots, Job, WorkerIdentity } from '../../domain/job.js';
import type { JobType } from '../../domain/job-type.js';
import { eventForUnstartedJob } from '../../domain/lifecycle-events.js';
import { claimParams, expireQueuedParams, markStartedParams } from '../../store/job-writes.js';
import { claimIndexKeys, finishedIndexKeys, purgeAtS } from '../../store/keys.js';
import type { QueueContext } from '../context.js';
import { claimSeatOf, claimTokenOf, createSeatAllocator, type ClaimSeat } from '../../domain/claim-seats.js';
import { handBackSeats, recordStarts, seatStart } from '../../store/start-records.js';
import { recordSpan, SpanKind } from '../../domain/spans.js';
import { writeJob } from './write-job.js';

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
export function cancelAskedOn(current: Job | undefined, job: Job): current is Job {
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

