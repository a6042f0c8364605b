/** The worker function: runs one batch of claimed jobs. */
import type { QueueContext } from '../../lib/queue/context.js';
import { createSigningSecretCache } from '../../lib/queue/catalog/job-type-cache.js';
import type { WorkerIdentity } from '../../lib/domain/job.js';
import { createMetricsRecorder } from '../../lib/queue/telemetry/metrics-history.js';
import { finishedOutcomeOf } from '../../lib/domain/metrics.js';
import type { WorkerBatch } from '../../lib/domain/invocations.js';
import { createRosterHeartbeat, ROSTER_REFRESH_MS } from '../../lib/queue/telemetry/roster.js';
import type { TargetClients } from '../../lib/targets/index.js';
import { AWAIT_CALLBACK, type BatchResult, type JobHandler, runWorkerBatch, type WorkerRegistry } from '../../lib/queue/attempt/run-batch.js';
import { log } from '../shared/log.js';
import { countTotals, noMetrics, type QueueMetrics } from '../shared/metrics.js';

/** Every outcome of a batch as a metric, so stale and unrecorded outcomes show next to successes. */
const OUTCOME_METRICS: Record<keyof BatchResult, string> = {
  succeeded: 'OutcomeSucceeded',
  failed: 'OutcomeFailed',
  retrying: 'OutcomeRetrying',
  awaiting_callback: 'OutcomeAwaitingCallback',
  expired: 'OutcomeExpired',
  rescheduled: 'OutcomeRescheduled',
  claim_lapsed: 'OutcomeClaimLapsed',
  already_started: 'OutcomeAlreadyStarted',
  cancelled: 'OutcomeCancelled',
  stale: 'OutcomeStale',
  error: 'OutcomeNotRecorded',
};

/**
 * Wraps a handler to count its runs per job type: `Succeeded` or `Failed`
 * (thrown, timed out or claim lost, whichever comes first) and `DurationMs`.
 */
function measured(handler: JobHandler, metrics: QueueMetrics, nowMs: () => number): JobHandler {
  return async (data, context) => {
    const startedAtMs = nowMs();
    let recorded = false;
    const record = (outcome: 'Succeeded' | 'Failed' | 'AwaitingCallback'): void => {
      if (recorded) return;
      recorded = true;
      const dimensions = { type: context.job.type };
      metrics.count(outcome, 1, dimensions);
      metrics.milliseconds('DurationMs', nowMs() - startedAtMs, dimensions);
    };
    // The worker stops waiting for a handler when the attempt times out or loses its claim; so does the metric.
    const onAbort = (): void => record('Failed');
    context.signal.addEventListener('abort', onAbort, { once: true });
    try {
      const value = await handler(data, context);
      record(value === AWAIT_CALLBACK ? 'AwaitingCallback' : 'Succeeded');
      return value;
    } catch (error) {
      record('Failed');
      throw error;
    } finally {
      context.signal.removeEventListener('abort', onAbort);
    }
  };
}

export function measuredRegistry(registry: WorkerRegistry, metrics: QueueMetrics, nowMs: () => number): WorkerRegistry {
  const handlers = Object.fromEntries(Object.entries(registry.handlers).map(([name, handler]) => [name, measured(handler, metrics, nowMs)]));
  return { handlers, retryPolicies: registry.retryPolicies };
}

export function createWorkerHandler(deps: {
  ctx: QueueContext;
  registry: WorkerRegistry;
  worker: WorkerIdentity;
  metrics?: QueueMetrics;
  targets?: TargetClients;
  /** @default CANCEL_WATCH_INTERVAL_MS (lib/queue/attempt/cancel-watch.ts) */
  cancelWatchIntervalMs?: number;
}) {
  const metrics = deps.metrics ?? noMetrics;
  const registry = measuredRegistry(deps.registry, metrics, deps.ctx.nowMs);
  // The roster is for operators: a write that fails is logged and never fails a job.
  const roster = createRosterHeartbeat(deps.ctx, { role: 'worker', ...deps.worker, startedAtMs: deps.ctx.nowMs() }, (error) =>
    log('warn', 'could not refresh the roster entry', { error }),
  );
  // The history is for charts: a write that fails is logged and never fails a job.
  const history = createMetricsRecorder(deps.ctx, (error) => log('warn', 'could not write the metrics history', { error }));
  // Kept across the batches this process runs, so a type's item is read once per cache period, not per batch.
  const signingSecrets = createSigningSecretCache(deps.ctx);
  return async (batch: WorkerBatch): Promise<BatchResult> => {
    roster.beat();
    // A batch of long jobs keeps the worker listed while it runs.
    const beating = setInterval(() => roster.beat(), ROSTER_REFRESH_MS);
    try {
      const counts = await runWorkerBatch(deps.ctx, batch, {
        registry,
        worker: deps.worker,
        signingSecrets,
        ...(deps.targets ? { targets: deps.targets } : {}),
        ...(deps.cancelWatchIntervalMs !== undefined ? { cancelWatchIntervalMs: deps.cancelWatchIntervalMs } : {}),
        onError: (job, error) => log('error', 'could not run a job or record its outcome', { type: job.type, id: job.id, attempt: job.attempt, error }),
        onOutcome: (job, outcome) => {
          const finished = finishedOutcomeOf(outcome);
          if (finished) history.recordFinished(job.type, finished, deps.ctx.nowMs());
        },
      });
      countTotals(metrics, OUTCOME_METRICS, counts);
      log('info', 'worker batch done', { jobs: batch.jobs.length, ...counts });
      return counts;
    } finally {
      clearInterval(beating);
      // Counts held back because a write went out lately still go out, even when no batch follows.
      history.flushSoon();
      await Promise.all([roster.settled(), history.settled()]);
      metrics.flush();
    }
  };
}
