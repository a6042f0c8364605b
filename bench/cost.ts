/** What measured capacity and invocations cost on AWS, at the prices of infra/local/aws/prices.ts. */
import { HOURS_PER_MONTH, priced } from '../infra/local/aws/prices.js';

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

/** Dollars per million jobs: a unit per job is a million units per million jobs. */
export function dollarsPerMillionJobs(perJob: PerJob): DollarsPerMillionJobs {
  const writes = priced('dynamoDbWriteRequestUnit', perJob.writeUnits * 1_000_000);
  const reads = priced('dynamoDbReadRequestUnit', perJob.readUnits * 1_000_000);
  const lambdaRequests = priced('lambdaRequest', perJob.workerInvocations * 1_000_000);
  return { writes, reads, lambdaRequests, total: writes + reads + lambdaRequests };
}

/** Units consumed over `elapsedMs`, scaled to one hour. */
export function perHour(units: number, elapsedMs: number): number {
  if (elapsedMs <= 0) throw new RangeError('elapsedMs must be positive');
  return (units * 3_600_000) / elapsedMs;
}

/** Dollars per month for a steady Lambda duration in GB-seconds per hour: the stack's functions run on arm64. */
export function lambdaDollarsPerMonth(gbSecondsPerHour: number): number {
  return priced('lambdaArm64Duration', gbSecondsPerHour * HOURS_PER_MONTH);
}

/** Dollars per month for a steady read rate in RRU per hour. */
export function readDollarsPerMonth(readUnitsPerHour: number): number {
  return priced('dynamoDbReadRequestUnit', readUnitsPerHour * HOURS_PER_MONTH);
}
