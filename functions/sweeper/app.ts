/**
 * The sweeper function: sweeps every `sweepIntervalMs` for about a minute, so a dead worker's claim comes back soon
 * after it lapses; between sweeps it runs bulk operations' pages, paced, rather than pausing.
 */
import type { Context } from 'aws-lambda';
import type { QueueContext } from '../../lib/queue/context.js';
import { abortableSleep } from '../../lib/domain/sleep.js';
import { runBulkOperations } from '../../lib/queue/bulk/run-bulk-operations.js';
import { emptySweepResult, sweepOnce, type SweepResult } from '../../lib/queue/sweep/sweep.js';
import type { WorkerRegistry } from '../../lib/queue/attempt/run-batch.js';
import { startKindOf } from '../../lib/domain/invocations.js';
import { startSweeperAwake, type SweeperAwake } from '../../lib/queue/wake/sweeper-stays.js';
import { log } from '../shared/log.js';
import { countTotals, noMetrics, type QueueMetrics } from '../shared/metrics.js';

const INVOCATION_HEADROOM_MS = 5_000;

export interface SweeperDeps {
  ctx: QueueContext;
  /** Only the retry policies: a lapsed claim ends its attempt under them; the sweeper runs no handler. */
  registry: Pick<WorkerRegistry, 'retryPolicies'>;
  signal?: AbortSignal;
  metrics?: QueueMetrics;
}

const SWEEP_METRICS: Record<keyof SweepResult, string> = {
  requeued: 'Requeued',
  ended: 'Ended',
  released: 'ReleasedUnstarted',
  stragglers: 'Stragglers',
  stale: 'StaleEntries',
  failed: 'SweepFailedJobs',
  failedLanes: 'SweepFailedLanes',
  reconciled: 'CountersReconciled',
};

export function createSweeperHandler(deps: SweeperDeps) {
  const metrics = deps.metrics ?? noMetrics;
  return async (event: unknown, context: Pick<Context, 'getRemainingTimeInMillis'>): Promise<SweepResult> => {
    const { ctx } = deps;
    const deadlineMs = ctx.nowMs() + Math.min(ctx.settings.pollerRunMs, context.getRemainingTimeInMillis() - INVOCATION_HEADROOM_MS);
    const totals = emptySweepResult();
    const awake = await startSweeperAwake(ctx, { endsAtMs: deadlineMs, kind: startKindOf(event) });
    if (!awake.stays) {
      log('info', 'sweeper not needed', { reason: awake.reason });
      return totals;
    }
    if (awake.wakeItemError !== undefined) log('warn', 'could not read or write the wake item: sweeping the whole run', { error: awake.wakeItemError });
    try {
      await sweepWhileAwake(deps, totals, awake);
    } finally {
      await awake.stop();
    }
    countTotals(metrics, SWEEP_METRICS, totals);
    metrics.flush();
    return totals;
  };
}

/** Sweeps every SWEEP_INTERVAL_MS, running bulk operations' pages in between, while the lease says to go on. */
async function sweepWhileAwake(deps: SweeperDeps, totals: SweepResult, awake: Extract<SweeperAwake, { stays: true }>): Promise<void> {
  const { ctx } = deps;
  const metrics = deps.metrics ?? noMetrics;
  do {
    try {
      const result = await sweepOnce(ctx, {
        customPolicies: deps.registry.retryPolicies,
        onError: (failure, error) => log('error', failure.id === undefined ? 'sweep skipped a lane' : 'sweep skipped a job', { ...failure, error }),
      });
      for (const key of Object.keys(totals) as (keyof SweepResult)[]) totals[key] += result[key];
      // Recorded for the next ticks: a failure only brings the next backstop sweep sooner.
      await awake.swept().catch((error: unknown) => log('warn', 'could not record the sweep', { error }));
      if (result.requeued + result.ended + result.stragglers + result.released + result.reconciled > 0) {
        awake.markBusy();
        log('info', 'sweep', { ...result });
      }
    } catch (error) {
      metrics.count('SweepErrors', 1);
      log('error', 'sweep failed', { error });
    }
    // Never past the deadline: the Lambda timeout allows for one last sweep, not for a last pause too.
    const nextSweepAtMs = Math.min(ctx.nowMs() + ctx.settings.sweepIntervalMs, awake.untilMs());
    try {
      const jobs = await runBulkOperations(ctx, {
        untilMs: nextSweepAtMs,
        ...(deps.signal ? { signal: deps.signal } : {}),
        onError: (operation, error) => log('error', 'bulk operation page failed', { operation, error }),
      });
      if (jobs > 0) {
        awake.markBusy();
        metrics.count('BulkJobs', jobs);
      }
    } catch (error) {
      metrics.count('BulkErrors', 1);
      log('error', 'bulk operations failed', { error });
    }
    // In steps, so a lease that stops renewing ends the wait with it.
    while (ctx.nowMs() < Math.min(nextSweepAtMs, awake.untilMs()) && !deps.signal?.aborted) {
      await abortableSleep(Math.min(SLEEP_STEP_MS, Math.min(nextSweepAtMs, awake.untilMs()) - ctx.nowMs()), deps.signal);
    }
  } while (ctx.nowMs() < awake.untilMs() && !deps.signal?.aborted);
}

const SLEEP_STEP_MS = 500;
