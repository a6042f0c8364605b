/** What measured capacity and invocations cost on AWS at on-demand list prices. */

/** US East on-demand list prices, in dollars per million. */
export const PRICES_PER_MILLION = {
  writeRequestUnits: 0.625,
  readRequestUnits: 0.125,
  lambdaRequests: 0.2,
  /** Lambda duration on x86, per million GB-seconds. */
  lambdaGbSeconds: 16.6667,
} as const;

export interface PerJob {
  writeUnits: number;
  readUnits: number;
  workerInvocations: number;
}

export interface DollarsPerMillionJobs {
  writes: number;
  reads: number;
  lambdaRequests: number;
  total: number;
}

/** Dollars per million jobs: a unit per job is a million units per million jobs, priced per million. */
export function dollarsPerMillionJobs(perJob: PerJob): DollarsPerMillionJobs {
  const writes = perJob.writeUnits * PRICES_PER_MILLION.writeRequestUnits;
  const reads = perJob.readUnits * PRICES_PER_MILLION.readRequestUnits;
  const lambdaRequests = perJob.workerInvocations * PRICES_PER_MILLION.lambdaRequests;
  return { writes, reads, lambdaRequests, total: writes + reads + lambdaRequests };
}

/** Units consumed over `elapsedMs`, scaled to one hour. */
export function perHour(units: number, elapsedMs: number): number {
  if (elapsedMs <= 0) throw new RangeError('elapsedMs must be positive');
  return (units * 3_600_000) / elapsedMs;
}

/** Dollars per 30-day month for a steady Lambda duration in GB-seconds per hour. */
export function lambdaDollarsPerMonth(gbSecondsPerHour: number): number {
  return (gbSecondsPerHour * 24 * 30 * PRICES_PER_MILLION.lambdaGbSeconds) / 1_000_000;
}

/** Dollars per 30-day month for a steady read rate in RRU per hour. */
export function readDollarsPerMonth(readUnitsPerHour: number): number {
  return (readUnitsPerHour * 24 * 30 * PRICES_PER_MILLION.readRequestUnits) / 1_000_000;
}
