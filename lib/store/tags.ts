/**
 * Tag entries: one small item per (job, tag) in the tag's partitions (keys.ts `tagPartition`), holding nothing
 * but its key and TTL, so each is one write unit. Written unconditionally: writing one again changes nothing.
 */
import { TTL_ATTRIBUTE, type ItemKey } from './keys.js';
import type { PutParams, QueryParams } from './send.js';

export function tagEntryParams(key: ItemKey, purgeAtS: number): PutParams {
  return { Item: { ...key, [TTL_ATTRIBUTE]: purgeAtS } };
}

/**
 * Up to `limit` entries of one tag partition, newest first, before `beforeSortKey` when given. Read
 * consistently: an entry is written before its job, so a job an enqueue has answered is always found.
 */
export function tagEntriesQuery(partition: string, limit: number, beforeSortKey?: string): QueryParams {
  return {
    KeyConditionExpression: beforeSortKey === undefined ? 'pk = :pk' : 'pk = :pk AND sk < :before',
    ExpressionAttributeValues: { ':pk': partition, ...(beforeSortKey === undefined ? {} : { ':before': beforeSortKey }) },
    ProjectionExpression: 'sk',
    ScanIndexForward: false,
    Limit: limit,
    ConsistentRead: true,
  };
}
