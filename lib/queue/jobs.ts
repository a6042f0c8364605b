/** Reading and cancelling jobs: the producer's side of the job store, besides enqueue. */
import { ConflictError, NotFoundError } from '../domain/errors.js';
import type { Job } from '../domain/job.js';
import { eventForUnstartedJob } from '../domain/lifecycle-events.js';
import { itemToJob } from '../store/items.js';
import { cancelParams, updateJob, type JobWriteResult } from '../store/job-writes.js';
import { finishedIndexKeys, jobKey, purgeAtS } from '../store/keys.js';
import { getItem, type Item } from '../store/send.js';
import type { QueueContext } from './context.js';

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

/** Cancels a job that has not started, recording who did (a key's id); a running or finished job is a ConflictError. */
export async function cancelJob(ctx: QueueContext, type: string, id: string, cancelledBy?: string): Promise<Job> {
  const result = await cancelQueuedJob(ctx, { type, id }, cancelledBy);
  if (!result.ok) {
    if (!result.current) throw new NotFoundError(`job "${id}" of type "${type}" does not exist`);
    throw new ConflictError(`job "${id}" is ${result.current.status}; only a queued job can be cancelled`);
  }
  return result.job;
}
