/**
 * The per-minute history behind the dashboard's charts: jobs finished by
 * outcome and scheduling lag, per job type, without a write per job.
 *
 * Each process (a poller, a worker) counts what it saw in memory, per type and
 * minute, and at most every METRICS_FLUSH_INTERVAL_MS adds its counts to one
 * item per type and minute with an UpdateItem `ADD`, so any number of
 * processes sum into the same item. Lag is kept as a histogram of
 * log-scaled millisecond buckets, which merge by addition too; percentiles
 * come from the merged histogram. Items expire by TTL after a few hours.
 */
import { QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import pLimit from 'p-limit';
import type { QueueContext } from './context.js';
import { metricsKey, metricsMinuteSortKey, TTL_ATTRIBUTE } from '../store/keys.js';
import type { JobStatus } from '../domain/model.js';
import type { JobRunOutcome } from './worker.js';

export const FINISHED_OUTCOMES = ['succeeded', 'failed', 'expired', 'retried'] as const;
export type FinishedOutcome = (typeof FINISHED_OUTCOMES)[number];

/*
 * Constants, not settings, like the roster's: they weigh one write per type every 10 s per busy process
 * against how fresh the charts are, and how long a history is kept against the item count.
 */
/** A process adds its counts to the table at most this often. */
export const METRICS_FLUSH_INTERVAL_MS = 10_000;
/** DynamoDB TTL may delete a minute this long after it ended. */
export const METRICS_RETENTION_S = 6 * 3600;
/** The most minutes one read returns: what the retention keeps for sure. */
export const MAX_METRICS_MINUTES = 360;
export const MINUTE_MS = 60_000;

/**
 * Lag buckets: bucket 0 holds lags under 1 ms, bucket i ≥ 1 holds [2^((i-1)/4), 2^(i/4)) ms, so a
 * percentile read from a bucket is within 19 % of the true value. The last bucket holds everything
 * from about 1.5 days up.
 */
export const LAG_BUCKETS_PER_DOUBLING = 4;
export const LAG_BUCKET_COUNT = 1 + LAG_BUCKETS_PER_DOUBLING * 27;

export function lagBucketOf(lagMs: number): number {
  if (!(lagMs >= 1)) return 0;
  return Math.min(LAG_BUCKET_COUNT - 1, Math.floor(LAG_BUCKETS_PER_DOUBLING * Math.log2(lagMs)) + 1);
}

/** The value a bucket stands for: the geometric middle of its range, rounded to a millisecond; 0 for bucket 0. */
export function lagBucketValueMs(bucket: number): number {
  if (bucket <= 0) return 0;
  return Math.round(2 ** ((bucket - 0.5) / LAG_BUCKETS_PER_DOUBLING));
}

/** Counts by bucket; absent buckets are empty. */
export type LagHistogram = Map<number, number>;

export function mergeHistogramInto(target: LagHistogram, source: LagHistogram): void {
  for (const [bucket, count] of source) target.set(bucket, (target.get(bucket) ?? 0) + count);
}

/**
 * The lag at quantile `q` (0 < q ≤ 1) of a histogram: the value of the bucket holding the ⌈q·n⌉-th
 * smallest sample (nearest-rank); null when it holds none.
 */
export function lagPercentileMs(histogram: LagHistogram, q: number): number | null {
  const total = [...histogram.values()].reduce((sum, count) => sum + count, 0);
  if (total === 0) return null;
  const rank = Math.max(1, Math.ceil(q * total));
  let seen = 0;
  for (const bucket of [...histogram.keys()].sort((a, b) => a - b)) {
    seen += histogram.get(bucket) ?? 0;
    if (seen >= rank) return lagBucketValueMs(bucket);
  }
  return null;
}

/** What one type did in one minute. */
export interface MinuteCounts {
  finished: Record<FinishedOutcome, number>;
  lag: LagHistogram;
}

const emptyCounts = (): MinuteCounts => ({ finished: { succeeded: 0, failed: 0, expired: 0, retried: 0 }, lag: new Map() });

function addCounts(target: MinuteCounts, source: MinuteCounts): void {
  for (const outcome of FINISHED_OUTCOMES) target.finished[outcome] += source.finished[outcome];
  mergeHistogramInto(target.lag, source.lag);
}

/** The finished-attempt outcome a worker's run counts as; the rest (deferred, handed back, stale) finish nothing. */
export function finishedOutcomeOf(outcome: JobRunOutcome): FinishedOutcome | undefined {
  switch (outcome) {
    case 'succeeded':
    case 'failed':
    case 'expired':
      return outcome;
    case 'retrying':
      return 'retried';
    default:
      return undefined;
  }
}

/** What an attempt ended by a status callback counts as, from the job's status after it: queued again is a retry. */
export function finishedOutcomeOfStatus(status: JobStatus): FinishedOutcome | undefined {
  switch (status) {
    case 'succeeded':
    case 'failed':
    case 'expired':
      return status;
    case 'queued':
      return 'retried';
    default:
      return undefined;
  }
}

export const epochMinuteOf = (epochMs: number): number => Math.floor(epochMs / MINUTE_MS);

const LAG_ATTRIBUTE_PREFIX = 'lag';
const lagAttribute = (bucket: number): string => `${LAG_ATTRIBUTE_PREFIX}${String(bucket).padStart(3, '0')}`;

/** Adds one type's counts to its item for `epochMinute`: one UpdateItem, whatever the counts. */
export async function addMinuteCounts(ctx: QueueContext, type: string, epochMinute: number, counts: MinuteCounts): Promise<void> {
  const additions: [string, number][] = [
    ...FINISHED_OUTCOMES.filter((outcome) => counts.finished[outcome] > 0).map((outcome): [string, number] => [outcome, counts.finished[outcome]]),
    ...[...counts.lag].filter(([, count]) => count > 0).map(([bucket, count]): [string, number] => [lagAttribute(bucket), count]),
  ];
  if (additions.length === 0) return;
  await ctx.db.send(
    new UpdateCommand({
      TableName: ctx.settings.tableName,
      Key: metricsKey(type, epochMinute),
      UpdateExpression: `ADD ${additions.map((_, i) => `#a${i} :v${i}`).join(', ')} SET #purgeAt = :purgeAt`,
      ExpressionAttributeNames: { ...Object.fromEntries(additions.map(([name], i) => [`#a${i}`, name])), '#purgeAt': TTL_ATTRIBUTE },
      ExpressionAttributeValues: {
        ...Object.fromEntries(additions.map(([, count], i) => [`:v${i}`, count])),
        ':purgeAt': ((epochMinute + 1) * MINUTE_MS) / 1000 + METRICS_RETENTION_S,
      },
    }),
  );
}

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
      const written: Promise<void> = addMinuteCounts(ctx, type, epochMinute, counts)
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

/** Every type's counts for each of a run of minutes, oldest first, and their sum. */
export interface MetricsHistory {
  /** The epoch minutes covered, oldest first; the last one is the current, still running minute. */
  epochMinutes: number[];
  total: MinuteCounts[];
  byType: { name: string; minutes: MinuteCounts[] }[];
}

function itemToCounts(item: Record<string, unknown>): MinuteCounts {
  const counts = emptyCounts();
  for (const outcome of FINISHED_OUTCOMES) counts.finished[outcome] = Number(item[outcome] ?? 0);
  for (const [name, value] of Object.entries(item)) {
    if (name.startsWith(LAG_ATTRIBUTE_PREFIX)) counts.lag.set(Number(name.slice(LAG_ATTRIBUTE_PREFIX.length)), Number(value));
  }
  return counts;
}

/** One type's minutes from `fromMinute` to `toMinute`: one Query over the sort-key range (paged past 1 MB). */
async function readTypeMinutes(ctx: QueueContext, type: string, fromMinute: number, toMinute: number): Promise<Map<number, MinuteCounts>> {
  const minutes = new Map<number, MinuteCounts>();
  let startKey: Record<string, unknown> | undefined;
  do {
    const page = await ctx.db.send(
      new QueryCommand({
        TableName: ctx.settings.tableName,
        KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
        ExpressionAttributeValues: {
          ':pk': metricsKey(type, fromMinute).pk,
          ':from': metricsMinuteSortKey(fromMinute),
          ':to': metricsMinuteSortKey(toMinute),
        },
        ExclusiveStartKey: startKey,
      }),
    );
    for (const item of page.Items ?? []) {
      const sk = String(item.sk);
      minutes.set(Number(sk.slice(sk.indexOf('#') + 1)), itemToCounts(item));
    }
    startKey = page.LastEvaluatedKey;
  } while (startKey);
  return minutes;
}

/** Queries in flight at once for one read, so a request over many types cannot flood the table. */
const READ_CONCURRENCY = 16;

/** The last `minutes` minutes (the current one included) of the types named. Cost: see README, "Metrics history". */
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

function minutesToApi(epochMinutes: number[], minutes: MinuteCounts[]): Record<string, unknown>[] {
  return minutes.map((counts, i) => ({
    at: new Date(epochMinutes[i]! * MINUTE_MS).toISOString(),
    finished: { ...counts.finished },
    lag_p50_ms: lagPercentileMs(counts.lag, 0.5),
    lag_p99_ms: lagPercentileMs(counts.lag, 0.99),
  }));
}

export function metricsHistoryToApi(history: MetricsHistory): Record<string, unknown> {
  return {
    minutes: minutesToApi(history.epochMinutes, history.total),
    job_types: history.byType.map((type) => ({ name: type.name, minutes: minutesToApi(history.epochMinutes, type.minutes) })),
  };
}
