/** An enqueue under an id that exists: the same body is the same job (an idempotent repeat), another a conflict. */
import { ConflictError } from '../../domain/errors.js';
import type { Job } from '../../domain/job.js';
import { itemToJob } from '../../store/items.js';
import type { Item } from '../../store/send.js';
import type { QueueContext } from '../context.js';
import { getJob } from '../read-job.js';

/** The stored job when it was enqueued with the same body (an idempotent repeat); a ConflictError otherwise. */
export async function sameJobOrConflict(ctx: QueueContext, job: Job, storedItem: Item | undefined): Promise<{ job: Job; created: false }> {
  const existing = storedItem ? itemToJob(storedItem) : await getJob(ctx, job.type, job.id);
  if (existing?.requestHash === job.requestHash) return { job: existing, created: false };
  throw new ConflictError(`job "${job.id}" already exists with a different body`);
}
