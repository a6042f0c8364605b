/**
 * Pointer items: a correlation, dedup or debounce key's item naming the job that holds the key, written in one
 * transaction with that job, and the correlation pointer's reads and release.
 */
import { newJobParams } from './job-writes.js';
import { correlationPartition, type ItemKey } from './keys.js';
import type { Item, PutParams, QueryParams, TransactItem } from './send.js';

/**
 * How a pointer item beside a new job is written: where none exists (`replacing` undefined), in place of exactly
 * the pointer that was read (its `holdToken`), or, for a dedup window, also where the window it records ended by `nowMs`.
 */
export type PointerWrite = { replacing: string | undefined } | { windowEndedBy: number };

function pointerCondition(write: PointerWrite): Pick<PutParams, 'ConditionExpression' | 'ExpressionAttributeValues'> {
  if ('windowEndedBy' in write) {
    return { ConditionExpression: 'attribute_not_exists(pk) OR windowEndsAtMs <= :now', ExpressionAttributeValues: { ':now': write.windowEndedBy } };
  }
  return write.replacing === undefined
    ? { ConditionExpression: 'attribute_not_exists(pk)' }
    : { ConditionExpression: 'holdToken = :seen', ExpressionAttributeValues: { ':seen': write.replacing } };
}

/** A new job and a pointer item naming it (a correlation, dedup or debounce key's), for one transaction. */
export function jobWithPointerItems(tableName: string, jobItem: Item, pointerItem: Item, write: PointerWrite): TransactItem[] {
  return [
    { Put: { TableName: tableName, ...newJobParams(jobItem) } },
    { Put: { TableName: tableName, Item: pointerItem, ...pointerCondition(write), ReturnValuesOnConditionCheckFailure: 'ALL_OLD' } },
  ];
}

/**
 * A new job and its type's pointer of the correlation key, naming it, for one transaction. The pointer is written where none
 * exists, or in place of exactly the pointer that was read (its `holdToken`).
 */
export function correlatedJobItems(tableName: string, jobItem: Item, pointerItem: Item, replacingHoldToken: string | undefined): TransactItem[] {
  return jobWithPointerItems(tableName, jobItem, pointerItem, { replacing: replacingHoldToken });
}

/** Every pointer of a correlation key, of every type, read consistently: a holder written just before is found. */
export function correlationPointersQuery(correlationKey: string): QueryParams {
  return {
    KeyConditionExpression: 'pk = :partition',
    ExpressionAttributeValues: { ':partition': correlationPartition(correlationKey) },
    ConsistentRead: true,
  };
}

/** Deletes the pointer of a correlation key, kept at `pointerKey`, while it still names the holder that was read. */
export function releaseCorrelationParams(pointerKey: ItemKey, holdToken: string) {
  return {
    Key: pointerKey,
    ConditionExpression: 'holdToken = :holder',
    ExpressionAttributeValues: { ':holder': holdToken },
  };
}
