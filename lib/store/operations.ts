/**
 * Bulk operations' items: one per operation, holding its cursor and counts, and while it runs an entry in the
 * running-operations partition. Every page is written on condition of the page count it was read at, so two
 * runners never count one page twice.
 */
import type { BulkOperation, OperationState, PendingPage } from '../domain/bulk.js';
import { DUE_INDEX, OPERATIONS_PARTITION, operationKey, parseOperationPk, runningOperationIndexKeys } from './keys.js';
import { queryPages, type PutParams, type StoreContext, type UpdateParams } from './send.js';

/** Written only if no operation of that id exists: the same request again finds the first. */
export function newOperationParams(operation: BulkOperation): PutParams {
  return {
    Item: { ...operationKey(operation.id), ...runningOperationIndexKeys(operation.createdAtMs, operation.id), ...operation },
    ConditionExpression: 'attribute_not_exists(pk)',
    ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
  };
}

const PAGE_NAMES = { '#state': 'state', '#pages': 'pages' };

/** Records the jobs of the next page before any is acted on, so a runner that dies mid-page leaves them for the next. */
export function takePageParams(operation: BulkOperation, pending: PendingPage, nowMs: number): UpdateParams {
  return {
    Key: operationKey(operation.id),
    UpdateExpression: 'SET pending = :pending, updatedAtMs = :now',
    ConditionExpression: '#state = :running AND #pages = :pages AND attribute_not_exists(pending)',
    ExpressionAttributeNames: PAGE_NAMES,
    ExpressionAttributeValues: { ':pending': pending, ':now': nowMs, ':running': 'running', ':pages': operation.pages },
  };
}

/** Leaves the page pending for a later round, one failed run more. */
export function pageFailedParams(operation: BulkOperation, failedRuns: number, nowMs: number): UpdateParams {
  return {
    Key: operationKey(operation.id),
    UpdateExpression: 'SET pending.failedRuns = :failedRuns, updatedAtMs = :now',
    ConditionExpression: '#state = :running AND #pages = :pages AND attribute_exists(pending)',
    ExpressionAttributeNames: PAGE_NAMES,
    ExpressionAttributeValues: { ':failedRuns': failedRuns, ':now': nowMs, ':running': 'running', ':pages': operation.pages },
  };
}

/** What one page did to its jobs. */
export interface PageCounts {
  matched: number;
  done: number;
  skipped: number;
  failed: number;
}

export interface PageEnd {
  counts: PageCounts;
  /** Whether the page's jobs were recorded as pending before they were acted on. */
  pendingRecorded: boolean;
  /** Where the next page starts; absent when the operation ends with this page. */
  nextCursor?: string;
  /** Set when the operation ends with this page. */
  finished?: { state: Exclude<OperationState, 'running'>; purgeAtS: number };
}

/** Counts a page and moves the cursor on, ending the operation with its last page; once only, whoever ran the page. */
export function countPageParams(operation: BulkOperation, end: PageEnd, nowMs: number): UpdateParams {
  const { counts, nextCursor, finished } = end;
  const sets = [
    '#pages = :next',
    'updatedAtMs = :now',
    'matched = matched + :matched',
    'done = done + :done',
    'skipped = skipped + :skipped',
    'failed = failed + :failed',
    ...(nextCursor !== undefined ? ['#cursor = :cursor'] : []),
    ...(finished ? ['#state = :state', 'finishedAtMs = :now', 'purgeAtS = :purgeAtS'] : []),
  ];
  const removes = ['pending', ...(finished ? ['gsi1pk', 'gsi1sk'] : [])];
  return {
    Key: operationKey(operation.id),
    UpdateExpression: `SET ${sets.join(', ')} REMOVE ${removes.join(', ')}`,
    ConditionExpression: `#state = :running AND #pages = :pages AND ${end.pendingRecorded ? 'attribute_exists' : 'attribute_not_exists'}(pending)`,
    ExpressionAttributeNames: { ...PAGE_NAMES, ...(nextCursor !== undefined ? { '#cursor': 'cursor' } : {}) },
    ExpressionAttributeValues: {
      ':running': 'running',
      ':pages': operation.pages,
      ':next': operation.pages + 1,
      ':now': nowMs,
      ':matched': counts.matched,
      ':done': counts.done,
      ':skipped': counts.skipped,
      ':failed': counts.failed,
      ...(nextCursor !== undefined ? { ':cursor': nextCursor } : {}),
      ...(finished ? { ':state': finished.state, ':purgeAtS': finished.purgeAtS } : {}),
    },
  };
}

/** The ids of the running operations, oldest first. */
export async function runningOperationIds(ctx: StoreContext): Promise<string[]> {
  const ids: string[] = [];
  const pages = queryPages(ctx, {
    IndexName: DUE_INDEX,
    KeyConditionExpression: 'gsi1pk = :partition',
    ExpressionAttributeValues: { ':partition': OPERATIONS_PARTITION },
  });
  for await (const page of pages) for (const item of page.Items ?? []) ids.push(parseOperationPk(String(item.pk)));
  return ids;
}
