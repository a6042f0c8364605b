/**
 * Cancelling a job: one waiting ends cancelled at once; one claimed or running is asked to stop, and ends
 * cancelled when its worker (or the sweeper, once the claim lapses) ends the attempt.
 */
import { guardOf } from '../../domain/attempts.js';
import { claimSeatOf } from '../../domain/claim-seats.js';
import { NotFoundError, ConflictError } from '../../domain/errors.js';
import { eventForUnstartedJob } from '../../domain/lifecycle-events.js';
import type { Job } from '../../domain/job.js';
import { type JobWriteResult, updateJob, requestCancelParams, cancelParams } from '../../store/job-writes.js';
import { finishedIndexKeys, purgeAtS } from '../../store/keys.js';
import { markSeatCancelled } from '../../store/start-records.js';
import type { QueueContext } from '../context.js';
import { getJob } from '../read-job.js';
import { cancelAskedOn } from './claim.js';
import { endCancelled } from './end-attempt.js';

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

/**
 * Cancels a job that has not started, publishing its event; a refusal is the job as it was. A bulk operation's
 * cancel carries its id, so a page it runs again knows the jobs it cancelled itself.
 */
export async function cancelQueuedJob(ctx: QueueContext, ref: { type: string; id: string }, cancelledBy?: string): Promise<JobWriteResult> {
  const nowMs = ctx.nowMs();
  const finished = finishedIndexKeys(ctx.settings, ref, 'cancelled', nowMs);
  const result = await updateJob(ctx, cancelParams(ref, nowMs, purgeAtS(nowMs, ctx.settings.retentionDays), finished, cancelledBy));
  if (result.ok) await ctx.events.publish([eventForUnstartedJob(result.job, 'job.cancelled')]);
  return result;
}

/**
 * What a cancel came to: `cancelled`, the job ended at once (it was queued, or awaiting its callback); or
 * `cancelling`, it was running: its worker was asked to stop, and the job ends cancelled within about
 * CANCEL_WATCH_INTERVAL_MS (queue/attempt/cancel-watch.ts), or once its claim lapses if its worker died.
 */
export type CancelResult = { state: 'cancelled' | 'cancelling'; job: Job };

/**
 * Cancels a job that has not finished, recording who did (a key's id). A queued job or one awaiting its callback
 * ends cancelled at once; a running one is asked to stop, and ends cancelled whatever its attempt comes to. A
 * finished job is a ConflictError naming its status: the cancel lost any race with its end. A job that moves on
 * between the read and the write (claimed, deferred, ended) is read again, a few times at most.
 */
export async function cancelJob(ctx: QueueContext, type: string, id: string, cancelledBy?: string): Promise<CancelResult> {
  const queued = await cancelQueuedJob(ctx, { type, id }, cancelledBy);
  if (queued.ok) return { state: 'cancelled', job: queued.job };
  let current = queued.current;
  for (let tries = 0; tries < MAX_CANCEL_TRIES; tries++) {
    if (!current) throw new NotFoundError(`job "${id}" of type "${type}" does not exist`);
    if (current.status === 'queued') {
      const again = await cancelQueuedJob(ctx, current, cancelledBy);
      if (again.ok) return { state: 'cancelled', job: again.job };
      current = again.current;
    } else if (current.status === 'awaiting_callback') {
      const ended = await endCancelled(ctx, current, { by: cancelledBy });
      if (ended) return { state: 'cancelled', job: ended.job };
      current = await getJob(ctx, type, id);
    } else if (current.status === 'running') {
      const asked = await requestCancel(ctx, current, cancelledBy);
      if (asked.ok) return { state: 'cancelling', job: asked.job };
      current = asked.current;
    } else {
      throw new ConflictError(`job "${id}" is ${current.status}; only a job that has not finished can be cancelled`);
    }
  }
  throw new ConflictError(`job "${id}" kept changing while it was being cancelled; try again`);
}

/** Reads and writes a cancel makes before it gives up on a job that keeps moving on (claimed, retried, claimed again). */
export const MAX_CANCEL_TRIES = 4;
