/**
 * Writes that must land together or not at all: a job's claim or end with the
 * in-flight counters it takes or gives back. DynamoDB cancels a transaction that
 * touches an item another transaction is writing at that moment; such a
 * conflict says nothing about the conditions, so it is tried again.
 */
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { TransactWriteCommand, type TransactWriteCommandInput } from '@aws-sdk/lib-dynamodb';
import type { QueueContext } from '../queue/context.js';
import { unmarshallItem } from './items.js';
import { abortableSleep } from '../domain/sleep.js';

export type TransactItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

export interface CancellationReason {
  /** `ConditionalCheckFailed`, `TransactionConflict`, `None`, … */
  code: string;
  /** The item as it was, when its write asked for it on a failed condition. */
  item?: Record<string, unknown>;
}

export type TransactionResult = { ok: true } | { ok: false; reasons: CancellationReason[] };

/** Conflicts clear in milliseconds; these tries span about half a second. */
const CONFLICT_TRIES = 8;
const CONFLICT_BACKOFF_MS = 10;

function reasonsOf(error: TransactionCanceledException): CancellationReason[] {
  return (error.CancellationReasons ?? []).map((reason) => ({
    code: reason.Code ?? 'None',
    ...(reason.Item ? { item: unmarshallItem(reason.Item) } : {}),
  }));
}

/**
 * Writes `items` in one transaction. Returns the cancellation reasons, one per
 * item, when a condition failed; throws what the store throws otherwise.
 */
export async function transactWrite(ctx: QueueContext, items: TransactItem[]): Promise<TransactionResult> {
  for (let tryNumber = 1; ; tryNumber++) {
    try {
      await ctx.db.send(new TransactWriteCommand({ TransactItems: items }));
      return { ok: true };
    } catch (error) {
      if (!(error instanceof TransactionCanceledException)) throw error;
      const reasons = reasonsOf(error);
      const conditionFailed = reasons.some((reason) => reason.code === 'ConditionalCheckFailed');
      const conflicted = reasons.some((reason) => reason.code === 'TransactionConflict');
      if (conditionFailed || !conflicted || tryNumber >= CONFLICT_TRIES) {
        if (conditionFailed || !conflicted) return { ok: false, reasons };
        throw error;
      }
      await abortableSleep(CONFLICT_BACKOFF_MS * tryNumber * (0.5 + ctx.random()));
    }
  }
}
