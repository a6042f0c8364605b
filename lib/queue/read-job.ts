/** Reading and cancelling jobs: the producer's side of the job store, besides enqueue. */
import { ConflictError, NotFoundError } from '../domain/errors.js';
import type { Job } from '../domain/job.js';
import { eventForUnstartedJob } from '../domain/lifecycle-events.js';
import { itemToJob } from '../store/items.js';
import { cancelParams, updateJob, type JobWriteResult } from '../store/job-writes.js';
import { finishedIndexKeys, jobKey, purgeAtS } from '../store/keys.js';
import { getItem, type Item } from '../store/send.js';
import type { QueueContext } from './context.js';
import { endCancelled, requestCancel } from './attempt/claim.js';

export async function getJob(ctx: QueueContext, type: string, id: string): Promise<Job | undefined> {
  const item = await getItem(ctx, jobKey(type, id), { consistentRead: true });
  return item ? itemToJob(item) : undefined;
}

export async function requireJob(ctx: QueueContext, type: string, id: string): Promise<Job> {
  const job = await getJob(ctx, type, id);
  if (!job) throw new NotFoundError(`job "${id}" of type "${type}" does not exist`);
  return job;
}

/** The stored job when it was enqueued with the same body (an idempotent repeat); a ConflictError otherwise. */
export async function sameJobOrConflict(ctx: QueueContext, job: Job, storedItem: Item | undefined): Promise<{ job: Job; created: false }> {
  const existing = storedItem ? itemToJob(storedItem) : await getJob(ctx, job.type, job.id);
  if (existing?.requestHash === job.requestHash) return { job: existing, created: false };
  throw new ConflictError(`job "${job.id}" already exists with a different body`);
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
const MAX_CANCEL_TRIES = 4;
