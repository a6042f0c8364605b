/**
 * The poller function: an invocation polls while work is due within a couple of seconds, for about a minute at
 * most; a minute tick, a wake or a timer starts it (lib/queue/wake/lease-keeper.ts).
 */
import type { Context } from 'aws-lambda';
import type { QueueContext } from '../../lib/queue/context.js';
import { ConfigError } from '../../lib/domain/errors.js';
import type { WorkerIdentity } from '../../lib/domain/job.js';
import type { FireResult } from '../../lib/queue/schedules/fire-schedules.js';
import { createMetricsRecorder, type MetricsRecorder } from '../../lib/queue/telemetry/metrics-history.js';
import { runPollerLoop } from '../../lib/queue/poll/poller-loop.js';
import { emptyPollResult, type PollResult } from '../../lib/queue/poll/poll-state.js';
import { leaseLoopOptions, startPollerAwake } from '../../lib/queue/wake/poller-stays.js';
import { startKindOf, type WorkerInvoker } from '../../lib/domain/invocations.js';
import { createRosterHeartbeat } from '../../lib/queue/telemetry/roster.js';
import { log } from '../shared/log.js';
import { countTotals, noMetrics, type QueueMetrics } from '../shared/metrics.js';

/** Time left unused at the end of an invocation, so the loop never runs into the Lambda timeout. */
const INVOCATION_HEADROOM_MS = 5_000;

/**
 * Metrics are written this often while a run goes on, not only at its end: DueLagAlarm then sees the lag of a run
 * that is slow to end, and a run killed by its timeout loses at most this much of its counts.
 */
export const METRICS_REPORT_INTERVAL_MS = 15_000;

export interface PollerDeps {
  ctx: QueueContext;
  invoker: WorkerInvoker;
  /** This process, as the roster of live pollers shows it: made once per process, kept across invocations. */
  identity: WorkerIdentity;
  /** Ends the loop early (the local runtime's shutdown). */
  signal?: AbortSignal;
  metrics?: QueueMetrics;
}

/**
 * The shards a scheduled invocation owns: each poller rule of the stack passes
 * `{ "shards": [...] }` so pollers never fight over a shard. Without it, all shards.
 */
export function shardsFromEvent(event: unknown, shardCount: number): number[] | undefined {
  const shards = typeof event === 'object' && event !== null ? (event as { shards?: unknown }).shards : undefined;
  if (shards === undefined) return undefined;
  const valid =
    Array.isArray(shards) &&
    shards.length > 0 &&
    shards.every((shard) => Number.isInteger(shard) && shard >= 0 && shard < shardCount);
  if (!valid) {
    throw new ConfigError(`event "shards" must be a non-empty list of shard numbers from 0 to ${shardCount - 1}, got ${JSON.stringify(shards)}`);
  }
  return shards as number[];
}

const POLL_METRICS = {
  claimed: 'Claimed',
  dispatched: 'Dispatched',
  lostRaces: 'LostClaimRaces',
  expired: 'ExpiredOnClaim',
  released: 'Released',
} as const satisfies Partial<Record<keyof PollResult, string>>;

/**
 * Counts the jobs schedules made and the fires they skipped per job type, a set admins define and keep small.
 * Not per schedule: "each different value found for a dimension is treated as a separate metric and accrues
 * charges as a separate custom metric" (https://docs.aws.amazon.com/AmazonCloudWatchLogs/latest/APIReference/API_MetricTransformation.html),
 * and schedules are many and come and go. The log line of the fires names each schedule.
 */
export function countScheduleFires(metrics: QueueMetrics, fired: Pick<FireResult, 'bySchedule'>): void {
  const byType = new Map<string, { made: number; skipped: number }>();
  for (const { jobType, made, skipped } of fired.bySchedule) {
    const counts = byType.get(jobType) ?? { made: 0, skipped: 0 };
    counts.made += made;
    counts.skipped += skipped;
    byType.set(jobType, counts);
  }
  for (const [type, { made, skipped }] of byType) {
    metrics.count('ScheduledJobs', made, { type });
    if (skipped > 0) metrics.count('ScheduleFiresSkipped', skipped, { type });
  }
}

/** The invoker, counting the scheduling lag of each job it handed to a worker (claim time minus ready time). */
function lagRecordingInvoker(invoker: WorkerInvoker, history: MetricsRecorder): WorkerInvoker {
  return {
    async invoke(batch) {
      await invoker.invoke(batch);
      // Counted once handed over: a batch that fails is released and counted when it is claimed again.
      for (const job of batch.jobs) {
        if (job.claimedAtMs !== undefined) history.recordLag(job.type, Math.max(0, job.claimedAtMs - job.runAfterMs), job.claimedAtMs);
      }
    },
  };
}

export function createPollerHandler(deps: PollerDeps) {
  const metrics = deps.metrics ?? noMetrics;
  const allShards = Array.from({ length: deps.ctx.settings.shards }, (_, shard) => shard);
  // The roster is for operators: a write that fails is logged and never fails a poll.
  const roster = createRosterHeartbeat(deps.ctx, { role: 'poller', ...deps.identity, startedAtMs: deps.ctx.nowMs(), shards: allShards }, (error) =>
    log('warn', 'could not refresh the roster entry', { error }),
  );
  // The history is for charts: a write that fails is logged and never fails a poll.
  const history = createMetricsRecorder(deps.ctx, (error) => log('warn', 'could not write the metrics history', { error }));
  const invoker = lagRecordingInvoker(deps.invoker, history);
  return async (event: unknown, context: Pick<Context, 'getRemainingTimeInMillis'>): Promise<PollResult> => {
    const shards = shardsFromEvent(event, deps.ctx.settings.shards);
    const runForMs = Math.min(deps.ctx.settings.pollerRunMs, context.getRemainingTimeInMillis() - INVOCATION_HEADROOM_MS);
    const awake = await startPollerAwake(deps.ctx, { shards: shards ?? allShards, endsAtMs: deps.ctx.nowMs() + runForMs, kind: startKindOf(event) });
    if (!awake.stays) {
      log('info', 'poller not needed', { reason: awake.reason, shards });
      // Every tick reports the lag, a sleeping one too: DueLagAlarm counts a minute without it as a breach (a
      // poller that stopped), so an idle queue would otherwise keep it in ALARM.
      metrics.milliseconds('OldestDueLagMs', 0);
      metrics.flush();
      return emptyPollResult();
    }
    // Polling the whole run costs what every run did before pollers slept; a brownout of one item should show.
    if (awake.wakeItemError !== undefined) log('warn', 'could not read or write the wake item: polling the whole run', { error: awake.wakeItemError, shards });
    // Every invocation says which shards it polls: the partitions' rules share the function's containers.
    roster.refresh({ shards: shards ?? allShards });
    const unreported = emptyPollResult();
    let reportedAtMs = deps.ctx.nowMs();
    const report = (): void => {
      metrics.milliseconds('OldestDueLagMs', unreported.oldestDueLagMs);
      countTotals(metrics, POLL_METRICS, unreported);
      metrics.flush();
      Object.assign(unreported, emptyPollResult());
      reportedAtMs = deps.ctx.nowMs();
    };
    try {
      const totals = await runPollerLoop(deps.ctx, {
        invoker,
        runForMs,
        ...(shards ? { shards } : {}),
        ...(deps.signal ? { signal: deps.signal } : {}),
        ...leaseLoopOptions(awake),
        onPoll: (result) => {
          roster.beat();
          history.flushIfDue();
          for (const key of Object.keys(POLL_METRICS) as (keyof typeof POLL_METRICS)[]) unreported[key] += result[key];
          unreported.oldestDueLagMs = Math.max(unreported.oldestDueLagMs, result.oldestDueLagMs);
          if (deps.ctx.nowMs() - reportedAtMs >= METRICS_REPORT_INTERVAL_MS) report();
        },
        onSchedulesFired: (fired) => {
          countScheduleFires(metrics, fired);
          // Which schedule made (or skipped) what is told here, not in metrics.
          if (fired.bySchedule.length > 0) log('info', 'schedules fired', { bySchedule: fired.bySchedule, lostRaces: fired.lostRaces });
        },
        onError: (error) => {
          roster.beat();
          history.flushIfDue();
          metrics.count('PollErrors', 1);
          log('error', 'poll failed', { error, shards });
        },
      });
      report();
      log('info', 'poller run done', { ...totals, shards });
      return totals;
    } finally {
      history.flush();
      await Promise.all([roster.settled(), history.settled()]);
      metrics.flush();
    }
  };
}
