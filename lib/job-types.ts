/** Job types: stored as `TYPE#<name>` items and listed through one due-index partition. */
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import type { QueueContext } from './config.js';
import { NotFoundError } from './errors.js';
import { itemToJobType } from './items.js';
import { listIndexedItems } from './listing.js';
import { JOB_TYPES_PARTITION, jobTypeKey } from './keys.js';
import { jobTypeFromInput, type JobType, type JobTypeInput } from './model.js';
import { newSigningSecret } from './signing.js';

export async function getJobType(ctx: QueueContext, name: string): Promise<JobType | undefined> {
  const { Item } = await ctx.db.send(
    new GetCommand({ TableName: ctx.settings.tableName, Key: jobTypeKey(name), ConsistentRead: true }),
  );
  return Item ? itemToJobType(Item) : undefined;
}

export async function requireJobType(ctx: QueueContext, name: string): Promise<JobType> {
  const jobType = await getJobType(ctx, name);
  if (!jobType) throw new NotFoundError(`job type "${name}" does not exist`);
  return jobType;
}

/**
 * Creates or replaces a job type; `created` tells which. Jobs already enqueued keep the attempts and strategy
 * they were enqueued with. An http target keeps the type's signing secret; `newSigningSecret` is set only when
 * this call generated one, the one time the caller gets to see it.
 */
export async function putJobType(
  ctx: QueueContext,
  name: string,
  input: JobTypeInput,
): Promise<{ jobType: JobType; created: boolean; newSigningSecret?: string }> {
  const nowMs = ctx.nowMs();
  const existing = await getJobType(ctx, name);
  const jobType = jobTypeFromInput(name, input, {
    createdAtMs: existing?.createdAtMs ?? nowMs,
    updatedAtMs: nowMs,
  });
  let generated: string | undefined;
  if (existing?.signingSecret !== undefined) jobType.signingSecret = existing.signingSecret;
  else if (jobType.target.kind === 'http') jobType.signingSecret = generated = newSigningSecret();
  await ctx.db.send(
    new PutCommand({
      TableName: ctx.settings.tableName,
      Item: { ...jobTypeKey(name), gsi1pk: JOB_TYPES_PARTITION, gsi1sk: name, ...jobType },
    }),
  );
  return { jobType, created: existing === undefined, ...(generated !== undefined ? { newSigningSecret: generated } : {}) };
}

export async function listJobTypes(ctx: QueueContext): Promise<JobType[]> {
  const jobTypes = (await listIndexedItems(ctx, JOB_TYPES_PARTITION, jobTypeKey)).map(itemToJobType);
  return jobTypes.sort((a, b) => a.name.localeCompare(b.name));
}
