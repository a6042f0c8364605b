/**
 * W-mix, a weighted mix under shares (docs/guides/scheduling-controls.md): weights 1 to 5, three throttle keys with shares of 40 / 30 / 30 % of a concurrency of
 * 100, one job in ten failing its first attempt, two pollers, every job due at once so the limits, not the
 * pollers, set the pace. Reports the most weight the handler ever saw in flight and, per start, how long a slot
 * had been free for it (mix-analysis.ts), against the poll interval.
 */
import pLimit from 'p-limit';
import { setTimeout as sleep } from 'node:timers/promises';
import { DEFAULT_PRIORITY } from '../lib/domain/job.js';
import { enqueueJob } from '../lib/queue/enqueue/enqueue.js';
import { analyseMix } from './mix-analysis.js';
import { summariseLag, type LagSummary } from './stats.js';
import { type MixPayload, startSystem } from './system.js';
import { progressLine, systemOptions, type BenchConfig } from './workloads.js';

export const MIX_CONCURRENCY = 100;
export const MIX_SHARES = { east: 0.4, north: 0.3, west: 0.3 } as const;
const MIX_POLLERS = 2;

export interface MixResult {
  n: number;
  pollIntervalMs: number;
  drainJobsPerS: number;
  attempts: number;
  maxWeight: number;
  maxWeightByKey: Record<string, number>;
  freeSlotWaitMs: LagSummary;
  /** Starts whose slot had been free longer than one poll interval. */
  waitsOverPollInterval: number;
  duplicates: number;
  notSucceeded: number;
}

/** The i-th job: keys in turn, every weight in every key, work of 5 to 35 ms, one in ten failing once. */
function mixJob(index: number): { payload: MixPayload; weight: number } {
  const regions = Object.keys(MIX_SHARES);
  return { payload: { region: regions[index % regions.length]!, workMs: 5 + (index % 7) * 5, failFirst: index % 10 === 0 }, weight: 1 + (index % 5) };
}

export async function runMix(config: BenchConfig, n: number, tableName: string, label: string): Promise<MixResult> {
  const mix = { concurrency: MIX_CONCURRENCY, shares: MIX_SHARES };
  const system = await startSystem({ ...systemOptions(config, { tableName }), pollers: MIX_POLLERS, mix, startNow: false });
  const stopProgress = progressLine(() => `${label}: started ${system.startLog.distinct}/${n}, succeeded ${system.counts.outcomes.succeeded}`);
  try {
    // All in before the pollers start, so the run measures the limits and not the producer.
    const limit = pLimit(config.producerConcurrency);
    await Promise.all(
      Array.from({ length: n }, (_, index) =>
        limit(() => {
          const { payload, weight } = mixJob(index);
          return enqueueJob(system.producerCtx, system.jobType, `mix-${index}`, { data: payload, weight, priority: DEFAULT_PRIORITY });
        }),
      ),
    );
    const startMs = Date.now();
    system.start();
    const deadlineMs = startMs + config.deadlineMs + (n / 50) * 1_000;
    while (system.counts.outcomes.succeeded < n && Date.now() < deadlineMs) await sleep(20);
    const drainMs = Date.now() - startMs;
    await system.stop();
    const limits = {
      typeLimit: MIX_CONCURRENCY,
      keyLimits: Object.fromEntries(Object.entries(MIX_SHARES).map(([key, share]) => [key, Math.floor(share * MIX_CONCURRENCY)])),
    };
    const analysis = analyseMix(system.attemptSpans, limits);
    const { pollIntervalMs } = config.settings;
    return {
      n,
      pollIntervalMs,
      drainJobsPerS: (system.counts.outcomes.succeeded * 1_000) / drainMs,
      attempts: system.attemptSpans.length,
      maxWeight: analysis.maxWeight,
      maxWeightByKey: analysis.maxWeightByKey,
      freeSlotWaitMs: summariseLag(analysis.freeSlotWaitsMs),
      waitsOverPollInterval: analysis.freeSlotWaitsMs.filter((waitMs) => waitMs > pollIntervalMs).length,
      duplicates: system.startLog.duplicates(),
      notSucceeded: n - system.counts.outcomes.succeeded,
    };
  } finally {
    stopProgress();
  }
}
