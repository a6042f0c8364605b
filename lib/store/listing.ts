/**
 * Listing small families of items (job types, API keys, the roster) without a
 * scan: each member is also written into one due-index partition under its
 * name, so a query finds the names and a batch get reads the items.
 */
import { DUE_INDEX, directoryKey, padEpochMs, TTL_ATTRIBUTE, type ItemKey, type Lane } from './keys.js';
import { batchGetItems, putItem, queryPages, type Item, type StoreContext } from './send.js';

export async function listIndexedItems(ctx: StoreContext, partition: string, keyOf: (name: string) => ItemKey): Promise<Item[]> {
  const names: string[] = [];
  const pages = queryPages(ctx, {
    IndexName: DUE_INDEX,
    KeyConditionExpression: 'gsi1pk = :partition',
    ExpressionAttributeValues: { ':partition': partition },
  });
  for await (const page of pages) for (const item of page.Items ?? []) names.push(String(item.gsi1sk));
  return batchGetItems(ctx, names.map(keyOf));
}

/** Records in the bucket directory that `bucket` of the lane holds entries, until DynamoDB TTL removes it at `purgeAtS`. */
export async function putDirectoryEntry(ctx: StoreContext, lane: Lane, bucket: number, purgeAtS: number): Promise<void> {
  await putItem(ctx, { Item: { ...directoryKey(lane, bucket), bucket, [TTL_ATTRIBUTE]: purgeAtS } });
}

/**
 * The recorded buckets of a lane from `fromBucket` on (up to `untilBucket`, included, when given), ascending; the
 * first `limit` of them only, when given. Read consistently with `consistentRead`: a walk that goes past the buckets
 * not listed must see every record.
 */
export async function recordedBuckets(
  ctx: StoreContext,
  lane: Lane,
  fromBucket: number,
  options: { untilBucket?: number; consistentRead?: boolean; limit?: number } = {},
): Promise<number[]> {
  const { untilBucket, consistentRead, limit } = options;
  const buckets: number[] = [];
  const pk = directoryKey(lane, 0).pk;
  const pages = queryPages(ctx, {
    KeyConditionExpression: untilBucket === undefined ? 'pk = :pk AND sk >= :from' : 'pk = :pk AND sk BETWEEN :from AND :until',
    ExpressionAttributeValues: { ':pk': pk, ':from': padEpochMs(fromBucket), ...(untilBucket === undefined ? {} : { ':until': padEpochMs(untilBucket) }) },
    ...(consistentRead ? { ConsistentRead: true } : {}),
    ...(limit !== undefined ? { Limit: limit } : {}),
  });
  for await (const page of pages) {
    for (const item of page.Items ?? []) if (typeof item.bucket === 'number') buckets.push(item.bucket);
    if (limit !== undefined && buckets.length >= limit) return buckets.slice(0, limit);
  }
  return buckets;
}
