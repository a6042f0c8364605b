/**
 * The sweeper's loop: sweeps every `sweepIntervalMs` while its lease says to go on, so a dead worker's claim comes
 * back soon after it lapses; between sweeps it runs bulk operations' pages, paced, rather than pausing. Shaped as
 * the poller's loop (poll/poller-loop.ts): options in, totals out, ended by its deadline or its signal.
 */
import type { CustomRetryPolicies } from '../../domain/retry.js';
import { abortableSleep } from '../../domain/sleep.js';
import { runBulkOperations } from '../bulk/run-bulk-operations.js';
import type { QueueContext } from '../context.js';
import { addSweepResults, emptySweepResult, sweepOnce, type SweepFailure, type SweepResult } from './sweep.js';

/** The lease a sweeper invocation holds while it stays (wake/sweeper-stays.ts). */
export interface SweeperLease {
  /** Until when to go on sweeping. */
  untilMs(): number;
  /** The last sweep or bulk page did some work. */
  markBusy(): void;
  /** A whole sweep ended. */
  swept(): Promise<void>;
}

export interface SweeperLoopOptions {
  lease: SweeperLease;
  /** The worker's custom retry policies: a lapsed claim ends its attempt under them. */
  customPolicies: CustomRetryPolicies;
  /** Stops the loop early, e.g. on shutdown. */
  signal?: AbortSignal;
  /** A sweep that did some work. */
  onSweep?: (result: SweepResult) => void;
  /** One job or lane a sweep skipped: the next sweep tries it again. */
  onSkipped?: (failure: SweepFailure, error: unknown) => void;
  /** A whole sweep failed. */
  onSweepError?: (error: unknown) => void;
  /** The sweep could not be recorded: the next backstop sweep only comes sooner. */
  onRecordError?: (error: unknown) => void;
  /** Jobs bulk operations acted on between two sweeps. */
  onBulkJobs?: (jobs: number) => void;
  onBulkPageError?: (operation: string, error: unknown) => void;
  onBulkError?: (error: unknown) => void;
}

/** The wait between sweeps is slept in steps this long, so a lease that stops renewing ends the wait with it. */
const SLEEP_STEP_MS = 500;

const didWork = (result: SweepResult): boolean => result.requeued + result.ended + result.stragglers + result.released + result.reconciled > 0;

export async function runSweeperLoop(ctx: QueueContext, options: SweeperLoopOptions): Promise<SweepResult> {
  const { lease, signal } = options;
  let totals = emptySweepResult();
  do {
    try {
      const result = await sweepOnce(ctx, { customPolicies: options.customPolicies, ...(options.onSkipped ? { onError: options.onSkipped } : {}) });
      totals = addSweepResults(totals, result);
      await lease.swept().catch((error: unknown) => options.onRecordError?.(error));
      if (didWork(result)) {
        lease.markBusy();
        options.onSweep?.(result);
      }
    } catch (error) {
      options.onSweepError?.(error);
    }
    // Never past the deadline: the Lambda timeout allows for one last sweep, not for a last pause too.
    const nextSweepAtMs = Math.min(ctx.nowMs() + ctx.settings.sweepIntervalMs, lease.untilMs());
    try {
      const jobs = await runBulkOperations(ctx, {
        untilMs: nextSweepAtMs,
        ...(signal ? { signal } : {}),
        ...(options.onBulkPageError ? { onError: options.onBulkPageError } : {}),
      });
      if (jobs > 0) {
        lease.markBusy();
        options.onBulkJobs?.(jobs);
      }
    } catch (error) {
      options.onBulkError?.(error);
    }
    while (ctx.nowMs() < Math.min(nextSweepAtMs, lease.untilMs()) && !signal?.aborted) {
      await abortableSleep(Math.min(SLEEP_STEP_MS, Math.min(nextSweepAtMs, lease.untilMs()) - ctx.nowMs()), signal);
    }
  } while (ctx.nowMs() < lease.untilMs() && !signal?.aborted);
  return totals;
}
