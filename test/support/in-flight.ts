/**
 * A handler that watches what runs at once: the summed weight in flight, per
 * throttle key too, and the order and times jobs start in. A handler runs only
 * while its claim holds its slots, so what it sees bounds what the counters allowed.
 */
import type { JobHandler } from '../../lib/queue/attempt/run-batch.js';

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
