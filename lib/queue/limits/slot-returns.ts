/**
 * Giving back the slots of an attempt that ended, after the job's own write: so
 * a counter is never below what its jobs hold. A process that dies in between,
 * or a return that fails, leaves the counter above, and the sweeper's
 * settlement (queue/limits/counter-reconcile.ts) brings it back.
 */
import type { Job } from '../../domain/job.js';
import { returnDecreases, type CounterDecrease } from '../../store/counters.js';
import { MAX_TRANSACT_ITEMS, transactWrite, type TransactItem } from '../../store/send.js';
import type { QueueContext, SlotReturnQueue } from '../context.js';

type SlotHolder = Pick<Job, 'type' | 'heldSlots'>;

/**
 * Lowers counters by what was given back. A failure is not the caller's: its jobs have ended or were never
 * claimed either way, and a counter left too high only holds back claims until it is settled.
 */
export async function lowerCounters(ctx: QueueContext, decreases: CounterDecrease[]): Promise<void> {
  for (const chunk of transactionsOf(decreases)) {
    // Refused when a counter was handed over to a new epoch since the weight was reserved: each then goes on its
    // own, and one refused lowers the earlier epochs' part instead. Not after an error, though: the transaction
    // may have landed, and the counters would be lowered twice.
    if ((await lowerQuietly(ctx, chunk.map(({ inEpoch, older }) => inEpoch ?? older))) !== 'refused') continue;
    for (const { inEpoch, older } of chunk) {
      // Alone, it was the whole transaction, and refused already.
      const alone = chunk.length > 1 ? await lowerQuietly(ctx, [inEpoch ?? older]) : 'refused';
      if (alone === 'refused' && inEpoch) await lowerQuietly(ctx, [older]);
    }
  }
}

/**
 * The decreases in transactions of at most MAX_TRANSACT_ITEMS, each writing an item once: weight of one counter
 * reserved in two epochs (jobs claimed on either side of a handover, ending together) is two decreases.
 */
function transactionsOf(decreases: CounterDecrease[]): CounterDecrease[][] {
  const transactions: CounterDecrease[][] = [];
  for (const decrease of decreases) {
    const open = transactions.find((chunk) => chunk.length < MAX_TRANSACT_ITEMS && chunk.every(({ itemId }) => itemId !== decrease.itemId));
    if (open) open.push(decrease);
    else transactions.push([decrease]);
  }
  return transactions;
}

async function lowerQuietly(ctx: QueueContext, items: TransactItem[]): Promise<'written' | 'refused' | 'unknown'> {
  try {
    const result = await transactWrite(ctx, items);
    return result.ok ? 'written' : 'reasons' in result ? 'refused' : 'unknown';
  } catch {
    // Left too high, at worst: see above.
    return 'unknown';
  }
}

function sendReturns(ctx: QueueContext, jobs: SlotHolder[]): Promise<void> {
  return lowerCounters(ctx, returnDecreases(ctx.settings.tableName, jobs));
}

/**
 * A worker runs several jobs at once, and their ends come close together: one write per counter for all
 * those ending within the window costs a fraction of a write each, at the price of `windowMs` more before
 * their slots are free.
 */
export function createSlotReturnQueue(ctx: QueueContext, windowMs: number): SlotReturnQueue {
  let pending: SlotHolder[] = [];
  let flushed: Promise<void> | undefined;
  return {
    add(job) {
      pending.push(job);
      flushed ??= new Promise<void>((resolve) => {
        setTimeout(() => {
          const jobs = pending;
          pending = [];
          flushed = undefined;
          void sendReturns(ctx, jobs).then(resolve);
        }, windowMs);
      });
      return flushed;
    },
  };
}

/** Gives back what the job's claim took, through the context's return queue when it has one. */
export async function giveBackSlots(ctx: QueueContext, job: SlotHolder): Promise<void> {
  if (job.heldSlots === undefined || job.heldSlots.weight === 0) return;
  if (ctx.slotReturns) return ctx.slotReturns.add(job);
  await sendReturns(ctx, [job]);
}
