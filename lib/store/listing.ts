/**
 * Listing small families of items (job types, API keys) without a scan: each
 * member is also written into one due-index partition under its name, so a
 * query finds the names and a batch get reads the items.
 */
import { BatchGetCommand, QueryCommand, type QueryCommandInput, type QueryCommandOutput } from '@aws-sdk/lib-dynamodb';
import type { QueueContext } from '../queue/context.js';
import { DUE_INDEX, type ItemKey } from './keys.js';

const BATCH_GET_LIMIT = 100;

/** Every page of a query, following `LastEvaluatedKey`; stop early by leaving the loop. */
export async function* queryPages(
  ctx: QueueContext,
  input: Omit<QueryCommandInput, 'TableName' | 'ExclusiveStartKey'>,
): AsyncGenerator<QueryCommandOutput> {
  let startKey: Record<string, unknown> | undefined;
  do {
    const page = await ctx.db.send(
      new QueryCommand({ TableName: ctx.settings.tableName, ...input, ...(startKey ? { ExclusiveStartKey: startKey } : {}) }),
    );
    yield page;
    startKey = page.LastEvaluatedKey;
  } while (startKey);
}

export async function listIndexedItems(
  ctx: QueueContext,
  partition: string,
  keyOf: (name: string) => ItemKey,
): Promise<Record<string, unknown>[]> {
  const names: string[] = [];
  const pages = queryPages(ctx, {
    IndexName: DUE_INDEX,
    KeyConditionExpression: 'gsi1pk = :partition',
    ExpressionAttributeValues: { ':partition': partition },
  });
  for await (const page of pages) for (const item of page.Items ?? []) names.push(String(item.gsi1sk));
  return batchGetItems(ctx, names.map(keyOf));
}

/** The items under `keys`, in no particular order; missing ones are left out. */
export async function batchGetItems(
  ctx: QueueContext,
  keys: ItemKey[],
  options: { consistentRead?: boolean } = {},
): Promise<Record<string, unknown>[]> {
  const items: Record<string, unknown>[] = [];
  for (let start = 0; start < keys.length; start += BATCH_GET_LIMIT) {
    let pending: Record<string, unknown>[] = keys.slice(start, start + BATCH_GET_LIMIT);
    while (pending.length > 0) {
      const { Responses, UnprocessedKeys } = await ctx.db.send(
        new BatchGetCommand({
          RequestItems: { [ctx.settings.tableName]: { Keys: pending, ...(options.consistentRead ? { ConsistentRead: true } : {}) } },
        }),
      );
      items.push(...(Responses?.[ctx.settings.tableName] ?? []));
      pending = UnprocessedKeys?.[ctx.settings.tableName]?.Keys ?? [];
    }
  }
  return items;
}
