/**
 * Reading the `due` index: lane cursors, due entries, and the counts and
 * pages of index partitions that stats and listings are made of.
 */
import { cursorKey, dueUpToSortKey, DUE_INDEX, type Lane } from './keys.js';
import { getItem, queryPage, queryPages, updateItem, type QueryParams, type StoreContext, type UpdateParams } from './send.js';

export interface DueEntry {
  /** The job's table key. */
  pk: string;
  sk: string;
  gsi1pk: string;
  gsi1sk: string;
  /** Projected into the index so the poller can order and throttle without reading jobs. */
  priority?: number;
  weight?: number;
  throttleKey?: string;
}

/**
 * Buckets of a lane shard, from `fromBucket` up to (not including) `untilBucket`, found empty after they settled
 * while the cursor could not pass them (an earlier bucket held entries, a blocked backlog say). No write lands in
 * a settled bucket, so scans go past them unread for as long as something still holds the cursor; once nothing
 * does, they are read again as the cursor passes them, which is what lets it pass (queue/lanes/lane-walk.ts).
 */
export interface SettledGap {
  fromBucket: number;
  untilBucket: number;
}

export interface LaneCursor {
  bucket: number | undefined;
  /** The longest gap recorded ahead of the cursor, if any: a new poller goes past it without walking it again. */
  gap: SettledGap | undefined;
  /**
   * The first bucket from which every write into the lane shard recorded its bucket in the bucket directory
   * first (queue/lanes/bucket-directory.ts), set by the cursor's first advance: a walk reads only the recorded buckets from
   * there on.
   */
  directoryFromBucket: number | undefined;
}

export async function readLaneCursor(ctx: StoreContext, lane: Lane, shard: number): Promise<LaneCursor> {
  const item = await getItem(ctx, cursorKey(lane, shard), { consistentRead: true });
  const bucket = typeof item?.bucket === 'number' ? item.bucket : undefined;
  const { gapFrom, gapUntil, directoryFrom } = item ?? {};
  const ahead = typeof gapFrom === 'number' && typeof gapUntil === 'number' && gapUntil > gapFrom && (bucket === undefined || gapFrom > bucket);
  return {
    bucket,
    gap: ahead ? { fromBucket: gapFrom, untilBucket: gapUntil } : undefined,
    directoryFromBucket: typeof directoryFrom === 'number' ? directoryFrom : undefined,
  };
}

export async function readCursor(ctx: StoreContext, lane: Lane, shard: number): Promise<number | undefined> {
  return (await readLaneCursor(ctx, lane, shard)).bucket;
}

/**
 * Records a gap found ahead of the cursor as read, unless the cursor moved since or a gap reaching as far is
 * recorded already: a gap recorded against an older cursor would lie behind the new one, where it means nothing.
 */
export function recordGapParams(lane: Lane, shard: number, cursor: number | undefined, gap: SettledGap): UpdateParams {
  return {
    Key: cursorKey(lane, shard),
    UpdateExpression: 'SET #gapFrom = :from, #gapUntil = :until',
    ConditionExpression: `${cursor === undefined ? 'attribute_not_exists(#bucket)' : '#bucket = :cursor'} AND (attribute_not_exists(#gapUntil) OR #gapUntil < :until)`,
    ExpressionAttributeNames: { '#bucket': 'bucket', '#gapFrom': 'gapFrom', '#gapUntil': 'gapUntil' },
    ExpressionAttributeValues: { ':from': gap.fromBucket, ':until': gap.untilBucket, ...(cursor === undefined ? {} : { ':cursor': cursor }) },
  };
}

export async function recordGap(ctx: StoreContext, lane: Lane, shard: number, cursor: number | undefined, gap: SettledGap): Promise<boolean> {
  return (await updateItem(ctx, recordGapParams(lane, shard, cursor, gap))).ok;
}

/**
 * Compare-and-set, so two pollers advancing at once cannot move it past a bucket neither scanned. The first
 * advance also adopts the directory for the lane shard from `directoryFromBucket`; a later one keeps what it set.
 */
export function advanceCursorParams(lane: Lane, shard: number, move: { from: number | undefined; to: number; directoryFromBucket: number }): UpdateParams {
  const { from, to, directoryFromBucket } = move;
  return {
    Key: cursorKey(lane, shard),
    UpdateExpression: 'SET #bucket = :to, #directoryFrom = if_not_exists(#directoryFrom, :directoryFrom)',
    ConditionExpression: from === undefined ? 'attribute_not_exists(#bucket)' : '#bucket = :from',
    ExpressionAttributeNames: { '#bucket': 'bucket', '#directoryFrom': 'directoryFrom' },
    ExpressionAttributeValues: { ':to': to, ':directoryFrom': directoryFromBucket, ...(from === undefined ? {} : { ':from': from }) },
  };
}

export async function advanceCursor(
  ctx: StoreContext,
  lane: Lane,
  shard: number,
  move: { from: number | undefined; to: number; directoryFromBucket: number },
): Promise<boolean> {
  return (await updateItem(ctx, advanceCursorParams(lane, shard, move))).ok;
}

/** The entries of an index partition due at or before `upToMs`, oldest first. */
export function dueQueryParams(partition: string, upToMs: number): QueryParams {
  return {
    IndexName: DUE_INDEX,
    KeyConditionExpression: 'gsi1pk = :partition AND gsi1sk <= :upTo',
    ExpressionAttributeValues: { ':partition': partition, ':upTo': dueUpToSortKey(upToMs) },
  };
}

/** At most `limit` due entries of a partition, oldest first; after `startAfter` (an entry of it) when given. */
export async function queryDue(ctx: StoreContext, partition: string, upToMs: number, limit: number, startAfter?: DueEntry): Promise<DueEntry[]> {
  const startKey = startAfter && { pk: startAfter.pk, sk: startAfter.sk, gsi1pk: startAfter.gsi1pk, gsi1sk: startAfter.gsi1sk };
  const { Items } = await queryPage(ctx, { ...dueQueryParams(partition, upToMs), Limit: limit }, startKey);
  return (Items ?? []) as DueEntry[];
}

/**
 * The due entries of one partition: the first one's sort key (the oldest ready time there, when there is one)
 * and the count, the rest counted with Select COUNT, which reads every entry but returns none of them.
 */
export async function countDue(ctx: StoreContext, partition: string, nowMs: number): Promise<{ count: number; firstSortKey?: string }> {
  const query = dueQueryParams(partition, nowMs);
  const first = await queryPage(ctx, { ...query, Limit: 1 });
  const firstEntry = first.Items?.[0];
  if (!firstEntry) return { count: 0 };
  let count = 1;
  let startKey = first.LastEvaluatedKey;
  while (startKey) {
    const page = await queryPage(ctx, { ...query, Select: 'COUNT' }, startKey);
    count += page.Count ?? 0;
    startKey = page.LastEvaluatedKey;
  }
  return { count, firstSortKey: String(firstEntry.gsi1sk) };
}

/** Entries of a partition counted with Select COUNT: all, or those after `afterSortKey`. */
export async function countEntries(ctx: StoreContext, partition: string, afterSortKey?: string): Promise<number> {
  let count = 0;
  const pages = queryPages(ctx, {
    IndexName: DUE_INDEX,
    KeyConditionExpression: `gsi1pk = :partition${afterSortKey ? ' AND gsi1sk > :after' : ''}`,
    ExpressionAttributeValues: { ':partition': partition, ...(afterSortKey ? { ':after': afterSortKey } : {}) },
    Select: 'COUNT',
  });
  for await (const page of pages) count += page.Count ?? 0;
  return count;
}

/** The statuses of one type's claims in one claim-lane partition. */
export async function claimStatuses(ctx: StoreContext, partition: string, type: string): Promise<string[]> {
  const statuses: string[] = [];
  const pages = queryPages(ctx, {
    IndexName: DUE_INDEX,
    KeyConditionExpression: 'gsi1pk = :partition',
    FilterExpression: '#type = :type',
    ProjectionExpression: '#status',
    ExpressionAttributeNames: { '#type': 'type', '#status': 'status' },
    ExpressionAttributeValues: { ':partition': partition, ':type': type },
  });
  for await (const page of pages) for (const item of page.Items ?? []) statuses.push(String(item.status));
  return statuses;
}

export interface IndexEntry {
  pk: string;
  gsi1sk: string;
}

/**
 * Up to `wanted` entries of one partition after `afterSortKey`, in `forward` order; with `only`, those of one
 * type in one status (the claim lane holds every type's claims).
 */
export async function pageOfPartition(
  ctx: StoreContext,
  partition: string,
  options: { wanted: number; forward: boolean; afterSortKey?: string | undefined; only?: { type: string; status: string } | undefined },
): Promise<IndexEntry[]> {
  const { wanted, forward, afterSortKey, only } = options;
  const entries: IndexEntry[] = [];
  const pages = queryPages(ctx, {
    IndexName: DUE_INDEX,
    KeyConditionExpression: `gsi1pk = :partition${afterSortKey ? ` AND gsi1sk ${forward ? '>' : '<'} :after` : ''}`,
    ScanIndexForward: forward,
    Limit: wanted,
    ...(only ? { FilterExpression: '#type = :type AND #status = :status', ExpressionAttributeNames: { '#type': 'type', '#status': 'status' } } : {}),
    ExpressionAttributeValues: {
      ':partition': partition,
      ...(afterSortKey ? { ':after': afterSortKey } : {}),
      ...(only ? { ':type': only.type, ':status': only.status } : {}),
    },
  });
  for await (const page of pages) {
    for (const item of page.Items ?? []) entries.push({ pk: String(item.pk), gsi1sk: String(item.gsi1sk) });
    if (entries.length >= wanted) break;
  }
  return entries.slice(0, wanted);
}
