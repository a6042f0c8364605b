/**
 * The queue's settings, read from the environment and validated once, at cold start; every message names the
 * environment variable, so a misconfigured deployment says what to fix.
 */
import { ConfigError } from '../domain/errors.js';
import { MAX_DYNAMODB_CALL_MS } from '../domain/limits.js';

export interface QueueSettings {
  tableName: string;
  /** Width of a ready-time bucket. Must never change once jobs exist. @default 60000 */
  bucketMs: number;
  /** Due-index partitions per bucket; may grow, must never shrink while jobs exist. @default 4 */
  shards: number;
  /**
   * Partitions per bucket of the claim lane, which every type's claims share; may grow, must never shrink while
   * claims exist. @default SHARDS
   */
  claimShards: number;
  /** Pollers that split the shards between them, each woken and ticked on its own (store/keys.ts, shardsOfPartition). @default 1 */
  pollerPartitions: number;
  /**
   * The cursor only passes a bucket that ended longer ago than this: longer than
   * any write in flight (bounded by DYNAMODB_CALL_LIMITS) plus index propagation
   * plus clock skew. At least MIN_CURSOR_SAFETY_MARGIN_MS.
   * @default 60000
   */
  cursorSafetyMarginMs: number;
  /** Buckets behind each cursor that the sweeper re-scans as a backstop. @default 10 */
  backstopBuckets: number;
  /** How long terminal jobs stay in the table before DynamoDB TTL removes them. @default 30 */
  retentionDays: number;
  /** How often polls start while no job arrives due. @default 500 */
  pollIntervalMs: number;
  /**
   * How often polls may start while jobs keep arriving due (enqueued with no future run_after): about as
   * often as they arrive, never more often than this nor less often than pollIntervalMs. @default 50
   */
  minPollIntervalMs: number;
  /** How long one poller invocation keeps looping. @default 55000 */
  pollerRunMs: number;
  /** Claims in flight at once inside one poller. @default 16 */
  claimConcurrency: number;
  /** Due entries read per partition per poll. @default 100 */
  claimPageSize: number;
  /** Pause between sweeps inside one sweeper invocation. @default 10000 */
  sweepIntervalMs: number;
  /**
   * Jobs a sweeper acts on per second for bulk operations, between sweeps: a bulk retry enqueues its replays at
   * this pace rather than all at once, so it does not crowd out the other types' due jobs: 25 is a page a second.
   * @default 25
   */
  bulkJobsPerS: number;
  /** Jobs per worker invocation. @default 10 */
  workerBatchSize: number;
  /** Jobs one worker invocation runs at once. @default 10 */
  workerConcurrency: number;
}

export type Env = Record<string, string | undefined>;

/** The longest a write can be in flight, plus 5 s of clock skew between writers and pollers. */
export const MIN_CURSOR_SAFETY_MARGIN_MS = MAX_DYNAMODB_CALL_MS + 5_000;

/** An integer setting from the environment, `fallback` when unset; anything else out of range is a ConfigError naming it. */
export function integerSetting(env: Env, name: string, fallback: number, min: number, max: number): number {
  // oxlint-disable-next-line own-names/no-lookup-by-name -- a setting's name is the code's own; infra/settings.ts reads them through a Proxy's get
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError(`${name} must be an integer from ${min} to ${max}, got "${raw}"`);
  }
  return value;
}

export function requiredSetting(env: Env, name: string): string {
  // oxlint-disable-next-line own-names/no-lookup-by-name -- a setting's name is the code's own
  const value = env[name];
  if (value === undefined || value === '') {
    throw new ConfigError(`${name} environment variable is not set`);
  }
  return value;
}

export function readQueueSettings(env: Env): QueueSettings {
  const shards = integerSetting(env, 'SHARDS', 4, 1, 256);
  return {
    tableName: requiredSetting(env, 'TABLE_NAME'),
    bucketMs: integerSetting(env, 'BUCKET_MS', 60_000, 1_000, 3_600_000),
    shards,
    // Claims were filed under SHARDS before the claim lane had a count of its own: unset, it keeps finding them.
    claimShards: integerSetting(env, 'CLAIM_SHARDS', shards, 1, 256),
    pollerPartitions: integerSetting(env, 'POLLER_PARTITIONS', 1, 1, 256),
    cursorSafetyMarginMs: integerSetting(env, 'CURSOR_SAFETY_MARGIN_MS', 60_000, MIN_CURSOR_SAFETY_MARGIN_MS, 3_600_000),
    backstopBuckets: integerSetting(env, 'BACKSTOP_BUCKETS', 10, 0, 10_000),
    retentionDays: integerSetting(env, 'RETENTION_DAYS', 30, 1, 3_650),
    pollIntervalMs: integerSetting(env, 'POLL_INTERVAL_MS', 500, 10, 60_000),
    minPollIntervalMs: integerSetting(env, 'MIN_POLL_INTERVAL_MS', 50, 10, 60_000),
    pollerRunMs: integerSetting(env, 'POLLER_RUN_MS', 55_000, 0, 900_000),
    claimConcurrency: integerSetting(env, 'CLAIM_CONCURRENCY', 16, 1, 1_000),
    claimPageSize: integerSetting(env, 'CLAIM_PAGE_SIZE', 100, 1, 1_000),
    sweepIntervalMs: integerSetting(env, 'SWEEP_INTERVAL_MS', 10_000, 100, 600_000),
    bulkJobsPerS: integerSetting(env, 'BULK_JOBS_PER_S', 25, 1, 10_000),
    workerBatchSize: integerSetting(env, 'WORKER_BATCH_SIZE', 10, 1, 1_000),
    workerConcurrency: integerSetting(env, 'WORKER_CONCURRENCY', 10, 1, 1_000),
  };
}
