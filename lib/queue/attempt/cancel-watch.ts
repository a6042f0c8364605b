/**
 * How a worker learns that a job it runs was cancelled (queue/attempt/cancel.ts cancelJob): the cancel marks the job's seat
 * in its claim's group start record (store/start-records.ts), and the worker reads the start records of the
 * seats it runs, a read per group a second or so, only while some job of the batch has run that long.
 */
import type { Job } from '../../domain/job.js';
import { claimSeatOf } from '../../domain/claim-seats.js';
import { cancelledSeats, type SeatCancel } from '../../store/start-records.js';
import type { QueueContext } from '../context.js';

/**
 * How often a worker looks for cancels of the jobs it runs: one read of each of its batch's start records,
 * and none at all while no job of the batch has run this long.
 */
export const CANCEL_WATCH_INTERVAL_MS = 1000;

/** Tells the attempts of a batch that a cancel was asked for their jobs (DELETE of a running job). */
export interface CancelWatch {
  /** Calls `onCancel` once a cancel of the job's seat is seen; the function returned stops watching. */
  watch(job: Job, onCancel: (cancel: SeatCancel) => void): () => void;
}

/**
 * Watches the start records of the seats being run: a timer that runs only while some seat is watched, each
 * tick one eventually consistent read per group. A read that fails is simply made again at the next tick.
 * Jobs of older tokens (no seat) learn of a cancel when their claim is renewed (runAttempt).
 */
export function createCancelWatch(ctx: QueueContext, intervalMs: number): CancelWatch {
  const watched = new Map<string, Map<number, (cancel: SeatCancel) => void>>();
  let timer: ReturnType<typeof setInterval> | undefined;
  let looking = false;
  const look = async (): Promise<void> => {
    if (looking) return;
    looking = true;
    try {
      await Promise.all(
        [...watched].map(async ([group, seats]) => {
          const cancels = await cancelledSeats(ctx, group).catch(() => new Map<number, SeatCancel>());
          for (const [seat, cancel] of cancels) seats.get(seat)?.(cancel);
        }),
      );
    } finally {
      looking = false;
    }
  };
  const unwatch = (group: string, seat: number): void => {
    const seats = watched.get(group);
    seats?.delete(seat);
    if (seats?.size === 0) watched.delete(group);
    if (watched.size === 0 && timer !== undefined) {
      clearInterval(timer);
      timer = undefined;
    }
  };
  return {
    watch: (job, onCancel) => {
      const seat = claimSeatOf(job.claimToken);
      if (!seat) return () => undefined;
      const seats = watched.get(seat.group) ?? new Map<number, (cancel: SeatCancel) => void>();
      seats.set(seat.seat, (cancel) => {
        unwatch(seat.group, seat.seat);
        onCancel(cancel);
      });
      watched.set(seat.group, seats);
      timer ??= setInterval(() => void look(), intervalMs);
      return () => unwatch(seat.group, seat.seat);
    },
  };
}
