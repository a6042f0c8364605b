/**
 * A handler that watches what runs at once: the summed weight in flight, per
 * throttle key too, and the order and times jobs start in. A handler runs only
 * while its claim holds its slots, so what it sees bounds what the counters allowed.
 */
import type { JobHandler } from '../../lib/queue/attempt/run-batch.js';
import type { JobType } from '../../lib/domain/job-type.js';
import type { QueueContext } from '../../lib/queue/context.js';
import { auditJobs, contextWith, countStarts, runUntilSettled } from './scenario.js';

export interface InFlightWatch {
  handler: JobHandler;
  /** The largest summed weight of jobs of weight above 0 running at once. */
  readonly maxWeight: number;
  readonly maxWeightByKey: ReadonlyMap<string, number>;
  /** The most throttle keys that had a job running at the same moment. */
  readonly maxKeysAtOnce: number;
  readonly startedIds: readonly string[];
  readonly startedAtMs: readonly number[];
}

export function watchInFlight(work: (data: unknown) => Promise<unknown> | unknown): InFlightWatch {
  let weight = 0;
  let maxWeight = 0;
  let maxKeysAtOnce = 0;
  const byKey = new Map<string, number>();
  const maxWeightByKey = new Map<string, number>();
  const startedIds: string[] = [];
  const startedAtMs: number[] = [];
  const handler: JobHandler = async (data, { job }) => {
    startedIds.push(job.id);
    startedAtMs.push(Date.now());
    const key = job.throttleKey;
    weight += job.weight;
    maxWeight = Math.max(maxWeight, weight);
    if (key !== undefined) {
      byKey.set(key, (byKey.get(key) ?? 0) + job.weight);
      maxWeightByKey.set(key, Math.max(maxWeightByKey.get(key) ?? 0, byKey.get(key) ?? 0));
      maxKeysAtOnce = Math.max(maxKeysAtOnce, [...byKey.values()].filter((value) => value > 0).length);
    }
    try {
      return await work(data);
    } finally {
      weight -= job.weight;
      if (key !== undefined) byKey.set(key, (byKey.get(key) ?? 0) - job.weight);
    }
  };
  return {
    handler,
    get maxWeight() {
      return maxWeight;
    },
    maxWeightByKey,
    get maxKeysAtOnce() {
      return maxKeysAtOnce;
    },
    startedIds,
    startedAtMs,
  };
}

export const sleepMs = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Runs `jobs` of `jobType` to the end with two pollers, a sweeper and a worker on `ctx`, watched in flight: each job
 * works `data.workMs` and, where `data.failFirst`, fails its first attempt. Its starts are counted and the run is
 * audited, nothing being injected: every error a component reports is a finding.
 */
export async function settleWatched(ctx: QueueContext, jobType: JobType, jobs: { type: string; id: string }[]) {
  const failedOnce = new Set<string>();
  const watch = watchInFlight(async (data) => {
    const { workMs, failFirst, id } = data as { workMs: number; failFirst: boolean; id: string };
    await sleepMs(workMs);
    if (failFirst && !failedOnce.has(id)) {
      failedOnce.add(id);
      throw new Error('fails its first attempt');
    }
    return 'done';
  });
  const counter = countStarts((data, context) => watch.handler({ ...(data as object), id: context.job.id }, context));
  const outcome = await runUntilSettled({
    components: { pollers: [contextWith(ctx, {}), contextWith(ctx, {})], sweepers: [contextWith(ctx, {})], workers: ctx },
    registry: { handlers: { [jobType.name]: counter.handler }, retryPolicies: {} },
    auditor: ctx,
    jobs,
    timeoutMs: 120_000,
  });
  const audit = await auditJobs(ctx, jobs, counter.starts, new Map([[jobType.name, jobType]]), { startsByAttempt: counter.byAttempt, errors: outcome.errors });
  return { settled: outcome.settled, audit, watch, failedOnce };
}
