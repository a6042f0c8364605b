/** The one way an attempt's writes reach the job: through the lane entry writer, which records its bucket first. */
import { type JobWriteResult, updateJob } from '../../store/job-writes.js';
import type { UpdateParams } from '../../store/send.js';
import type { QueueContext } from '../context.js';
import { writeLaneEntry } from '../lanes/bucket-directory.js';

/** A job update, its lane bucket recorded first when it lies ahead (see directory.ts). */
export function writeJob(ctx: QueueContext, params: UpdateParams): Promise<JobWriteResult> {
  const values = params.ExpressionAttributeValues;
  return writeLaneEntry(ctx, values?.[':gsi1pk'], () => updateJob(ctx, params));
}
