/**
 * The per-minute history behind the dashboard's charts: each process counts
 * what it saw in memory and adds it to the table now and then (see
 * domain/metrics.ts for what is counted and store/metrics.ts for the items).
 */
import pLimit from 'p-limit';
import {
  addCounts,
  emptyCounts,
  epochMinuteOf,
  lagBucketOf,
  METRICS_FLUSH_INTERVAL_MS,
  METRICS_RETENTION_S,
  MINUTE_MS,
  type FinishedOutcome,
  type MetricsHistory,
  type MinuteCounts,
} from '../../domain/metrics.js';
import { addMinuteCounts, readTypeMinutes } from '../../store/metrics.js';
import type { QueueContext } from '../context.js';

/** Counts one process gathers and hands to the table now and then, without ever failing the work it counts. */
export interface MetricsRecorder {
  recordFinished(type: string, outcome: FinishedOutcome, atMs: number): void;
  /** A job claimed `lagMs` after it was ready, at `claimedAtMs`. */
  recordLag(type: string, lagMs: number, claimedAtMs: number): void;
  /** Writes what was gathered unless a write went out within METRICS_FLUSH_INTERVAL_MS or is still in flight. */
  flushIfDue(): void;
  /**
   * `flushIfDue`, and if that leaves counts unwritten, writes them once the interval is over even when
   * nothing else happens by then: locally on time, in Lambda when the frozen container next runs.
   */
  flushSoon(): void;
  /** Writes what was gathered now (the end of an invocation, before Lambda may freeze the process). */
  flush(): void;
  /** Resolves once no write is in flight. Never rejects. */
  settled(): Promise<void>;
}

/**
 * Writes go out in the background, one per type and minute, each handed to `onError` when it fails. The
 * counts of a failed write are dropped rather than added again later: an `ADD` whose answer was lost may
 * have been applied, and the charts would rather miss ten seconds than count them twice.
 */
export function createMetricsRecorder(ctx: QueueContext, onError: (error: unknown) => void): MetricsRecorder {
  let pending = new Map<string, { type: string; epochMinute: number; counts: MinuteCounts }>();
  // Counted from the last attempt, not the last success, so a failing store is not asked again at every poll.
  let lastFlushAtMs = -Infinity;
  const inFlight = new Set<Promise<unknown>>();
  const countsOf = (type: string, atMs: number): MinuteCounts => {
    const epochMinute = epochMinuteOf(atMs);
    const key = `${epochMinute}#${type}`;
    let entry = pending.get(key);
    if (!entry) pending.set(key, (entry = { type, epochMinute, counts: emptyCounts() }));
    return entry.counts;
  };
  let trailingFlush: ReturnType<typeof setTimeout> | undefined;
  const flush = (): void => {
    // Whatever a trailing flush was waiting for goes out now; one is set again only for what comes later.
    clearTimeout(trailingFlush);
    trailingFlush = undefined;
    lastFlushAtMs = ctx.nowMs();
    const batch = [...pending.values()];
    pending = new Map();
    for (const { type, epochMinute, counts } of batch) {
      const purgeAtS = ((epochMinute + 1) * MINUTE_MS) / 1000 + METRICS_RETENTION_S;
      const written: Promise<void> = addMinuteCounts(ctx, type, epochMinute, counts, purgeAtS)
        .catch(onError)
        .finally(() => inFlight.delete(written));
      inFlight.add(written);
    }
  };
  const flushIfDue = (): void => {
    if (pending.size === 0 || inFlight.size > 0 || ctx.nowMs() - lastFlushAtMs < METRICS_FLUSH_INTERVAL_MS) return;
    flush();
  };
  return {
    recordFinished(type, outcome, atMs) {
      countsOf(type, atMs).finished[outcome]++;
    },
    recordLag(type, lagMs, claimedAtMs) {
      const { lag } = countsOf(type, claimedAtMs);
      const bucket = lagBucketOf(lagMs);
      lag.set(bucket, (lag.get(bucket) ?? 0) + 1);
    },
    flushIfDue,
    flushSoon() {
      flushIfDue();
      if (pending.size === 0 || trailingFlush !== undefined) return;
      trailingFlush = setTimeout(() => {
        trailingFlush = undefined;
        if (pending.size > 0) flush();
      }, METRICS_FLUSH_INTERVAL_MS);
      trailingFlush.unref?.();
    },
    flush() {
      if (pending.size > 0) flush();
    },
    async settled() {
      await Promise.all(inFlight);
    },
  };
}

/** Queries in flight at once for one read, so a request over many types cannot flood the table. */
const READ_CONCURRENCY = 16;

/** The last `minutes` minutes (the current one included) of the types named. Cost: see docs/operations/metrics.md#metrics-history. */
export async function readMetricsHistory(ctx: QueueContext, types: string[], minutes: number): Promise<MetricsHistory> {
  const toMinute = epochMinuteOf(ctx.nowMs());
  const fromMinute = toMinute - minutes + 1;
  const epochMinutes = Array.from({ length: minutes }, (_, i) => fromMinute + i);
  const limit = pLimit(READ_CONCURRENCY);
  const stored = await Promise.all(types.map((type) => limit(() => readTypeMinutes(ctx, type, fromMinute, toMinute))));
  const byType = types.map((name, i) => ({ name, minutes: epochMinutes.map((minute) => stored[i]!.get(minute) ?? emptyCounts()) }));
  const total = epochMinutes.map((_, m) => {
    const sum = emptyCounts();
    for (const type of byType) addCounts(sum, type.minutes[m]!);
    return sum;
  });
  return { epochMinutes, total, byType };
}
