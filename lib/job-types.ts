/** Job types: stored as `TYPE#<name>` items and listed through one due-index partition. */
import { BatchGetCommand, GetCommand, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { QueueContext } from './config.js';
import { NotFoundError } from './errors.js';
import { itemToJobType } from './items.js';
import { DUE_INDEX, JOB_TYPES_PARTITION, jobTypeKey } from './keys.js';
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

const BATCH_GET_LIMIT = 100;

export async function listJobTypes(ctx: QueueContext): Promise<JobType[]> {
  const names: string[] = [];
  let startKey: Record<string, unknown> | undefined;
  do {
    const page = await ctx.db.send(
      new QueryCommand({
        TableName: ctx.settings.tableName,
        IndexName: DUE_INDEX,
        KeyConditionExpression: 'gsi1pk = :types',
        ExpressionAttributeValues: { ':types': JOB_TYPES_PARTITION },
        ExclusiveStartKey: startKey,
      }),
    );
    for (const item of page.Items ?? []) names.push(String(item.gsi1sk));
    startKey = page.LastEvaluatedKey;
  } while (startKey);

  const jobTypes: JobType[] = [];
  for (let start = 0; start < names.length; start += BATCH_GET_LIMIT) {
    let keys: Record<string, unknown>[] = names.slice(start, start + BATCH_GET_LIMIT).map(jobTypeKey);
    while (keys.length > 0) {
      const { Responses, UnprocessedKeys } = await ctx.db.send(
        new BatchGetCommand({ RequestItems: { [ctx.settings.tableName]: { Keys: keys } } }),
      );
      for (const item of Responses?.[ctx.settings.tableName] ?? []) jobTypes.push(itemToJobType(item));
      keys = UnprocessedKeys?.[ctx.settings.tableName]?.Keys ?? [];
    }
  }
  return jobTypes.sort((a, b) => a.name.localeCompare(b.name));
}
