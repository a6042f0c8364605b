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
import type { JobStatus } from './job.js';
import type { JobRunOutcome } from './attempts.js';

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

export const emptyCounts = (): MinuteCounts => ({ finished: { succeeded: 0, failed: 0, expired: 0, retried: 0 }, lag: new Map() });

export function addCounts(target: MinuteCounts, source: MinuteCounts): void {
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

/** Every type's counts for each of a run of minutes, oldest first, and their sum. */
export interface MetricsHistory {
  /** The epoch minutes covered, oldest first; the last one is the current, still running minute. */
  epochMinutes: number[];
  total: MinuteCounts[];
  byType: { name: string; minutes: MinuteCounts[] }[];
}

