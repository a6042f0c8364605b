/**
 * The one place that sends DynamoDB commands and turns the SDK's exceptions
 * into results: a write whose condition failed is `{ ok: false }` with the item
 * as it was (when DynamoDB returned it), a transaction cancelled by a condition
 * is its reasons, one that kept conflicting is `contended`. Every other error (a
 * dependency failure) is thrown as the SDK threw it. Callers build the inputs
 * with the pure `*Params` builders beside this module.
 */
import { ConditionalCheckFailedException, ProvisionedThroughputExceededException, TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import {
  BatchGetCommand,
  DeleteCommand,
  GetCommand,
  PutCommand,
  QueryCommand,
  TransactWriteCommand,
  UpdateCommand,
  type DeleteCommandInput,
  type DynamoDBDocumentClient,
  type PutCommandInput,
  type QueryCommandInput,
  type QueryCommandOutput,
  type TransactWriteCommandInput,
  type UpdateCommandInput,
} from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { abortableSleep } from '../domain/sleep.js';
import type { ItemKey } from './keys.js';

export type Db = DynamoDBDocumentClient;
export type Item = Record<string, unknown>;

/** What the store needs to reach the table; the queue's context is one. */
export interface StoreContext {
  db: Db;
  settings: { tableName: string };
}

export type UpdateParams = Omit<UpdateCommandInput, 'TableName'>;
export type PutParams = Omit<PutCommandInput, 'TableName'>;
export type DeleteParams = Omit<DeleteCommandInput, 'TableName'>;
export type QueryParams = Omit<QueryCommandInput, 'TableName' | 'ExclusiveStartKey'>;
export type TransactItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

/** A conditional write: applied (with the new item when asked for), or refused by its condition. */
export type WriteResult = { ok: true; item?: Item } | { ok: false; current?: Item };

/** Runs a conditional write; a failed condition is a result, with the item as it was when the input asked for it. */
async function conditionally(write: () => Promise<{ Attributes?: Item | undefined }>): Promise<WriteResult> {
  try {
    const { Attributes } = await write();
    return Attributes ? { ok: true, item: Attributes } : { ok: true };
  } catch (error) {
    if (!(error instanceof ConditionalCheckFailedException)) throw error;
    // Items on a failed condition come back in wire format, even through the document client.
    return error.Item ? { ok: false, current: unmarshall(error.Item) } : { ok: false };
  }
}

export function updateItem(ctx: StoreContext, params: UpdateParams): Promise<WriteResult> {
  return conditionally(() => ctx.db.send(new UpdateCommand({ TableName: ctx.settings.tableName, ...params })));
}

export function putItem(ctx: StoreContext, params: PutParams): Promise<WriteResult> {
  return conditionally(() => ctx.db.send(new PutCommand({ TableName: ctx.settings.tableName, ...params })));
}

export function deleteItem(ctx: StoreContext, params: DeleteParams): Promise<WriteResult> {
  return conditionally(() => ctx.db.send(new DeleteCommand({ TableName: ctx.settings.tableName, ...params })));
}

export async function getItem(ctx: StoreContext, key: ItemKey, options: { consistentRead?: boolean } = {}): Promise<Item | undefined> {
  const { Item } = await ctx.db.send(
    new GetCommand({ TableName: ctx.settings.tableName, Key: key, ...(options.consistentRead ? { ConsistentRead: true } : {}) }),
  );
  return Item;
}

/** One page of a query. */
export function queryPage(ctx: StoreContext, params: QueryParams, startKey?: Item): Promise<QueryCommandOutput> {
  return ctx.db.send(new QueryCommand({ TableName: ctx.settings.tableName, ...params, ...(startKey ? { ExclusiveStartKey: startKey } : {}) }));
}

/** Every page of a query, following `LastEvaluatedKey`; stop early by leaving the loop. */
export async function* queryPages(ctx: StoreContext, params: QueryParams): AsyncGenerator<QueryCommandOutput> {
  let startKey: Item | undefined;
  do {
    const page = await queryPage(ctx, params, startKey);
    yield page;
    startKey = page.LastEvaluatedKey;
  } while (startKey);
}

const BATCH_GET_LIMIT = 100;

/**
 * DynamoDB leaves keys unprocessed when the table or a partition is throttled, and asks for exponential backoff
 * before they are tried again: these tries span about half a second, then the read fails as a throttled call does.
 */
export const UNPROCESSED_KEYS_TRIES = 6;
const UNPROCESSED_KEYS_BACKOFF_MS = 20;

function stillUnprocessed(count: number): ProvisionedThroughputExceededException {
  return new ProvisionedThroughputExceededException({
    message: `${count} keys of a batch read were still unprocessed after ${UNPROCESSED_KEYS_TRIES} tries`,
    $metadata: {},
  });
}

/** The items under `keys`, in no particular order; missing ones are left out. */
export async function batchGetItems(
  ctx: StoreContext & { random?: () => number },
  keys: ItemKey[],
  options: { consistentRead?: boolean } = {},
): Promise<Item[]> {
  const { tableName } = ctx.settings;
  const random = ctx.random ?? Math.random;
  const items: Item[] = [];
  for (let start = 0; start < keys.length; start += BATCH_GET_LIMIT) {
    let pending: Item[] = keys.slice(start, start + BATCH_GET_LIMIT);
    for (let tryNumber = 1; pending.length > 0; tryNumber++) {
      if (tryNumber > 1) await abortableSleep(UNPROCESSED_KEYS_BACKOFF_MS * 2 ** (tryNumber - 2) * (0.5 + random()));
      const { Responses, UnprocessedKeys } = await ctx.db.send(
        new BatchGetCommand({ RequestItems: { [tableName]: { Keys: pending, ...(options.consistentRead ? { ConsistentRead: true } : {}) } } }),
      );
      items.push(...(Responses?.[tableName] ?? []));
      pending = UnprocessedKeys?.[tableName]?.Keys ?? [];
      if (pending.length > 0 && tryNumber >= UNPROCESSED_KEYS_TRIES) throw stillUnprocessed(pending.length);
    }
  }
  return items;
}

export interface CancellationReason {
  /** `ConditionalCheckFailed`, `TransactionConflict`, `None`, … */
  code: string;
  /** The item as it was, when its write asked for it on a failed condition. */
  item?: Item;
}

/**
 * A transaction: written; refused by a condition (one reason per item, in order); or still conflicting with other
 * transactions after every try, which says nothing about the conditions.
 */
export type TransactionResult = { ok: true } | { ok: false; reasons: CancellationReason[] } | { ok: false; contended: true };

/** DynamoDB's most items in one transaction. */
export const MAX_TRANSACT_ITEMS = 100;

/** Conflicts clear in milliseconds; these tries span about half a second. */
const CONFLICT_TRIES = 8;
const CONFLICT_BACKOFF_MS = 10;
/** Throttling clears as the partition's capacity refills, within a second or so: these tries span about two. */
const THROTTLE_BACKOFF_MS = 50;

/** The reasons DynamoDB gives for an item of a transaction it cancelled because it was throttled. */
const THROTTLED_CODES = new Set(['ThrottlingError', 'ProvisionedThroughputExceeded', 'RequestLimitExceeded']);

function reasonsOf(error: TransactionCanceledException): CancellationReason[] {
  return (error.CancellationReasons ?? []).map((reason) => ({
    code: reason.Code ?? 'None',
    ...(reason.Item ? { item: unmarshall(reason.Item) } : {}),
  }));
}

/**
 * Writes `items` in one transaction. DynamoDB cancels a transaction that touches an item another transaction is
 * writing at that moment, or one it throttled; both are tried again, with jitter from `random`. The SDK's own
 * retries never see these: to it a cancelled transaction is an answer. A transaction still throttled after every
 * try is thrown, as a throttled call is once the SDK gives up. A transaction of one item stays one, though it bills
 * the item twice: the SDK gives each transaction a client request token, so its retry after a lost answer is not
 * applied again, where a counter's ADD sent as a plain update would be (counter-reconcile.test.ts's lost return).
 */
export async function transactWrite(ctx: StoreContext & { random: () => number }, items: TransactItem[]): Promise<TransactionResult> {
  for (let tryNumber = 1; ; tryNumber++) {
    try {
      await ctx.db.send(new TransactWriteCommand({ TransactItems: items }));
      return { ok: true };
    } catch (error) {
      if (!(error instanceof TransactionCanceledException)) throw error;
      const reasons = reasonsOf(error);
      const conditionFailed = reasons.some((reason) => reason.code === 'ConditionalCheckFailed');
      const throttled = reasons.some((reason) => THROTTLED_CODES.has(reason.code));
      const conflicted = reasons.some((reason) => reason.code === 'TransactionConflict');
      if (conditionFailed || !(conflicted || throttled)) return { ok: false, reasons };
      if (tryNumber >= CONFLICT_TRIES) {
        if (throttled) throw error;
        return { ok: false, contended: true };
      }
      await abortableSleep((throttled ? THROTTLE_BACKOFF_MS : CONFLICT_BACKOFF_MS) * tryNumber * (0.5 + ctx.random()));
    }
  }
}
