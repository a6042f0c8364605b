/** Reading one job, as every role does before it acts on one. */
import { NotFoundError } from '../domain/errors.js';
import type { Job } from '../domain/job.js';
import { itemToJob } from '../store/items.js';
import { jobKey } from '../store/keys.js';
import { getItem } from '../store/send.js';
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

