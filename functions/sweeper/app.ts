/**
 * The sweeper function: wires the sweeper's loop (lib/queue/sweep/sweeper-loop.ts) to its lease, its logs and its
 * metrics: an invocation sweeps while work is due (a claim lapsed, a bulk operation running), for about a minute at most.
 */
import type { Context } from 'aws-lambda';
import type { QueueContext } from '../../lib/queue/context.js';
import { runSweeperLoop } from '../../lib/queue/sweep/sweeper-loop.js';
import { emptySweepResult, type SweepResult } from '../../lib/queue/sweep/sweep.js';
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
    const awake = await startSweeperAwake(ctx, { endsAtMs: deadlineMs, kind: startKindOf(event) });
    if (!awake.stays) {
      log('info', 'sweeper not needed', { reason: awake.reason });
      return emptySweepResult();
    }
    if (awake.wakeItemError !== undefined) log('warn', 'could not read or write the wake item: sweeping the whole run', { error: awake.wakeItemError });
    let totals: SweepResult;
    try {
      totals = await sweepWhileAwake(deps, awake);
    } finally {
      await awake.stop();
    }
    countTotals(metrics, SWEEP_METRICS, totals);
    metrics.flush();
    return totals;
  };
}

/** The loop with what the function does of its reports: logs, and counts for the alarms. */
function sweepWhileAwake(deps: SweeperDeps, awake: Extract<SweeperAwake, { stays: true }>): Promise<SweepResult> {
  const metrics = deps.metrics ?? noMetrics;
  return runSweeperLoop(deps.ctx, {
    lease: awake,
    customPolicies: deps.registry.retryPolicies,
    ...(deps.signal ? { signal: deps.signal } : {}),
    onSweep: (result) => log('info', 'sweep', { ...result }),
    onSkipped: (failure, error) => log('error', failure.id === undefined ? 'sweep skipped a lane' : 'sweep skipped a job', { ...failure, error }),
    onSweepError: (error) => {
      metrics.count('SweepErrors', 1);
      log('error', 'sweep failed', { error });
    },
    onRecordError: (error) => log('warn', 'could not record the sweep', { error }),
    onBulkJobs: (jobs) => metrics.count('BulkJobs', jobs),
    onBulkPageError: (operation, error) => log('error', 'bulk operation page failed', { operation, error }),
    onBulkError: (error) => {
      metrics.count('BulkErrors', 1);
      log('error', 'bulk operations failed', { error });
    },
  });
}
