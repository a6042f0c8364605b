/** Summary statistics for the benchmark: nearest-rank percentiles and medians of runs. */

/** The p-th percentile (0–100) by nearest rank; undefined for no samples. `sorted` must be ascending. */
export function percentile(sorted: readonly number[], p: number): number | undefined {
  if (sorted.length === 0) return undefined;
  if (p <= 0) return sorted[0];
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, rank) - 1];
}

export interface LagSummary {
  p50: number | undefined;
  p95: number | undefined;
  p99: number | undefined;
  max: number | undefined;
}

export function summariseLag(lagsMs: readonly number[]): LagSummary {
  const sorted = [...lagsMs].sort((a, b) => a - b);
  return {
    p50: percentile(sorted, 50),
    p95: percentile(sorted, 95),
    p99: percentile(sorted, 99),
    max: sorted.at(-1),
  };
}

/** The median of the defined values (the mean of the middle two for an even count); undefined when there are none. */
export function median(values: readonly (number | undefined)[]): number | undefined {
  const sorted = values.filter((value): value is number => value !== undefined && Number.isFinite(value)).sort((a, b) => a - b);
  if (sorted.length === 0) return undefined;
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle] : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
}

export const fmt = (value: number | undefined, digits = 0): string => (value === undefined ? '-' : value.toFixed(digits));

/** What every workload's summary gives, in-process or over HTTP: medians of its runs, and failures summed. */
export interface WorkloadSummary {
  workload: string;
  n: number;
  enqueueJobsPerS: number | undefined;
  drainJobsPerS: number | undefined;
  lagP50: number | undefined;
  lagP95: number | undefined;
  lagP99: number | undefined;
  lagMax: number | undefined;
  duplicates: number;
  lost: number;
  enqueuedAfterDue: number | undefined;
}

/** The cells every workload table shares: lag percentiles, then duplicates, lost and late enqueues, failures marked. */
export function lagAndOutcomeCells(s: WorkloadSummary): string[] {
  return [
    fmt(s.lagP50),
    fmt(s.lagP95),
    fmt(s.lagP99),
    fmt(s.lagMax),
    s.duplicates > 0 ? `FAILURE ${s.duplicates}` : '0',
    s.lost > 0 ? `FAILURE ${s.lost}` : '0',
    fmt(s.enqueuedAfterDue),
  ];
}
