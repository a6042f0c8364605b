/**
 * The queue's configuration: the construct's `settings` prop, or CDK context
 * (`cdk deploy -c SHARDS=8`) for this repository's app. Both use the
 * environment variable names the functions read, so one name means one thing
 * everywhere; everything is validated at synth, with the same messages a
 * function would give at cold start.
 */
import { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { readQueueSettings, type Env, type QueueSettings } from '../lib/queue/settings.js';
import { ConfigError } from '../lib/domain/errors.js';
import { PRIVATE_ADDRESS_CHOICES, type PrivateAddressChoice } from '../lib/targets/addresses.js';

/**
 * The queue's settings, by the names the functions read them under (`npm start` takes the same names from
 * its environment). Each is validated at synth, with the message a function would give at cold start.
 */
export interface DelayedJobQueueSettings {
  /** Ready-time bucket width. Fixed once jobs are in the table: changing it strands the jobs already queued. @default 60000 */
  BUCKET_MS?: number;
  /** Index partitions per bucket. May grow, never shrink: jobs in a dropped shard are never polled. @default 4 */
  SHARDS?: number;
  /** Claim-lane partitions per bucket, shared by every type's claims. May grow, never shrink: claims in a dropped shard are never swept. @default SHARDS */
  CLAIM_SHARDS?: number;
  /** How long a bucket must be over before a cursor passes it. @default 60000 */
  CURSOR_SAFETY_MARGIN_MS?: number;
  /** Buckets behind each cursor the sweeper re-scans. @default 10 */
  BACKSTOP_BUCKETS?: number;
  /** How long terminal jobs are kept. @default 30 */
  RETENTION_DAYS?: number;
  /** How often a poll starts while no job arrives due. @default 500 */
  POLL_INTERVAL_MS?: number;
  /** While jobs arrive due, polls start about as often as they arrive, never more often than this. @default 50 */
  MIN_POLL_INTERVAL_MS?: number;
  /** How long one poller (and sweeper) invocation loops; at most 60000, as they start every minute. @default 59000 */
  POLLER_RUN_MS?: number;
  /** Claims in flight at once per poller. @default 16 */
  CLAIM_CONCURRENCY?: number;
  /** Due entries read per partition per poll. @default 100 */
  CLAIM_PAGE_SIZE?: number;
  /** Pause between sweeps. @default 10000 */
  SWEEP_INTERVAL_MS?: number;
  /** Jobs per second each sweeper acts on for bulk operations. @default 25 */
  BULK_JOBS_PER_S?: number;
  /** Jobs per worker invocation. @default 10 */
  WORKER_BATCH_SIZE?: number;
  /** Jobs one worker runs at once. @default 10 */
  WORKER_CONCURRENCY?: number;
  /** Poller schedule rules; each owns the shards `s` with `s % POLLER_PARTITIONS` equal to its index. At most SHARDS. @default 1 */
  POLLER_PARTITIONS?: number;
  /** Deletion protection on the table, which the stack then retains when deleted. @default true */
  DELETION_PROTECTION?: boolean;
  /** How long the functions' and the API's logs are kept, in one of the periods CloudWatch Logs offers. @default 30 */
  LOG_RETENTION_DAYS?: number;
  /** The oldest due job may wait this long before the due-lag alarm fires. @default 120000 */
  DUE_LAG_ALARM_MS?: number;
  /** The API stage's steady rate limit, requests per second. @default 100 */
  API_RATE_LIMIT?: number;
  /** The API stage's burst limit. @default 200 */
  API_BURST_LIMIT?: number;
  /** An SNS topic the alarms notify. @default - none: the alarms only change state */
  ALARM_TOPIC_ARN?: string;
  /** Functions `lambda` targets may invoke, comma-separated ARNs. @default - none */
  TARGET_FUNCTION_ARNS?: string;
  /** Buses `eventbridge` targets may send to, comma-separated ARNs. @default - none */
  TARGET_EVENT_BUS_ARNS?: string;
  /** Reserved concurrency for the poller, the sweeper and the worker; the account's quota must exceed the reservations by 100. @default false */
  RESERVED_CONCURRENCY?: boolean;
  /** The worker's reserved concurrency, which caps the worker batches running at once; only with RESERVED_CONCURRENCY. @default 100 */
  WORKER_RESERVED_CONCURRENCY?: number;
  /** A worker batch may wait this long in Lambda's async queue before the event-age alarm fires. @default 30000 */
  WORKER_EVENT_AGE_ALARM_MS?: number;
  /** Whether http targets may reach private addresses (RFC 1918, ...); loopback and link-local never. @default 'allow' */
  HTTP_TARGET_PRIVATE_ADDRESSES?: PrivateAddressChoice;
}

export interface StackSettings {
  /**
   * Queue settings passed to every function: those given in context (the code's defaults apply otherwise), and
   * always POLLER_RUN_MS and POLLER_PARTITIONS, which the stack's schedules depend on.
   */
  queueEnvironment: Record<string, string>;
  /** The queue's settings, as the functions read them; `queue.pollerPartitions` is also the number of poller schedule rules. */
  queue: Omit<QueueSettings, 'tableName'>;
  deletionProtection: boolean;
  logRetention: RetentionDays;
  /** The oldest due job may wait this long before the due-lag alarm fires. */
  dueLagAlarmMs: number;
  apiRateLimit: number;
  apiBurstLimit: number;
  /** An SNS topic the alarms notify; without it they only change state. */
  alarmTopicArn?: string;
  /** Functions `lambda` targets may invoke (ARNs); the worker may invoke these and no others. */
  targetFunctionArns: string[];
  /** Buses `eventbridge` targets may send to (ARNs); the worker may send to these and the lifecycle bus only. */
  targetEventBusArns: string[];
  /**
   * Reserved concurrency for the poller, the sweeper and the worker. Lambda keeps 100 of an account's concurrency
   * unreserved, so the reservations need a quota of 100 more than they add up to; a new account's quota may be
   * as low as 10, where only a stack without them deploys. Hence off unless asked for.
   */
  reservedConcurrency: boolean;
  /**
   * The worker's reserved concurrency, when `reservedConcurrency`: other functions of the account cannot take it,
   * and it is the only cap on the batches running at once (more wait in Lambda's async queue, throttled).
   */
  workerReservedConcurrency: number;
  /** A worker batch may wait this long in Lambda's async queue before the event-age alarm fires. */
  workerEventAgeAlarmMs: number;
  /**
   * Whether http targets may reach private addresses (RFC 1918, 100.64.0.0/10, fc00::/7, ...). The worker
   * and the api read it as HTTP_TARGET_PRIVATE_ADDRESSES; loopback and link-local are refused either way.
   */
  httpTargetPrivateAddresses: PrivateAddressChoice;
}

/**
 * A tenth of the standard account quota (1000): 100 batches at once, up to 1000 jobs running with the default
 * WORKER_BATCH_SIZE, while the account keeps plenty for the rest of its functions.
 */
const DEFAULT_WORKER_RESERVED_CONCURRENCY = 100;

/** Each poller and sweeper invocation is started by an every-minute schedule, so its loop must end within the minute. */
const SCHEDULE_MS = 60_000;

/**
 * How long a deployed poller loops unless POLLER_RUN_MS says otherwise: nearly
 * the whole minute, so the next invocation takes over with at most a second's
 * gap; an overlap, when EventBridge starts one late, only costs lost claim races.
 */
const DEPLOYED_POLLER_RUN_MS = 59_000;

/**
 * The names `readQueueSettings` reads, found by letting it read them, so a
 * setting added to lib/queue/settings.ts becomes configurable here without a second list.
 */
function queueSettingNames(): string[] {
  const names: string[] = [];
  readQueueSettings(
    new Proxy({} as Env, {
      get: (_, name) => {
        if (typeof name === 'string') names.push(name);
        return name === 'TABLE_NAME' ? 'probe' : undefined;
      },
    }),
  );
  return names.filter((name) => name !== 'TABLE_NAME');
}

export type ContextReader = (key: string) => unknown;

function text(read: ContextReader, key: string): string | undefined {
  const value = read(key);
  if (value === undefined || value === null || value === '') return undefined;
  return String(value);
}

function integer(read: ContextReader, key: string, fallback: number, min: number, max: number): number {
  const raw = text(read, key);
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError(`context ${key} must be an integer from ${min} to ${max}, got "${raw}"`);
  }
  return value;
}

/** A comma-separated list of ARNs; empty when absent. */
function arns(read: ContextReader, key: string): string[] {
  const list = (text(read, key) ?? '').split(',').map((arn) => arn.trim()).filter(Boolean);
  const invalid = list.find((arn) => !/^arn:aws[a-z-]*:[a-z0-9-]+:[a-z0-9-]*:\d{12}:.+$/.test(arn));
  if (invalid) throw new ConfigError(`context ${key} must be a comma-separated list of ARNs, got "${invalid}"`);
  return list;
}

function flag(read: ContextReader, key: string, fallback: boolean): boolean {
  const raw = text(read, key);
  if (raw === undefined) return fallback;
  if (raw === 'true' || raw === 'false') return raw === 'true';
  throw new ConfigError(`context ${key} must be true or false, got "${raw}"`);
}

function oneOf<T extends string>(read: ContextReader, key: string, values: readonly T[], fallback: T): T {
  const raw = text(read, key);
  if (raw === undefined) return fallback;
  const value = values.find((candidate) => candidate === raw);
  if (value === undefined) throw new ConfigError(`context ${key} must be one of ${values.join(', ')}, got "${raw}"`);
  return value;
}

/** CloudWatch Logs keeps logs only for the periods it offers (1, 3, 5, 7, 14, 30, 60, 90, ... days). */
function retention(read: ContextReader, key: string, fallback: RetentionDays): RetentionDays {
  const raw = text(read, key);
  if (raw === undefined) return fallback;
  const offered = Object.values(RetentionDays).filter((days): days is RetentionDays => typeof days === 'number' && days !== RetentionDays.INFINITE);
  const days = offered.find((value) => String(value) === raw);
  if (days === undefined) throw new ConfigError(`context ${key} must be one of ${offered.join(', ')}, got "${raw}"`);
  return days;
}

export function stackSettingsFrom(read: ContextReader): StackSettings {
  const queueEnvironment: Record<string, string> = { POLLER_RUN_MS: String(DEPLOYED_POLLER_RUN_MS) };
  for (const name of queueSettingNames()) {
    const value = text(read, name);
    if (value !== undefined) queueEnvironment[name] = value;
  }
  const { tableName: _probe, ...queue } = readQueueSettings({ ...queueEnvironment, TABLE_NAME: 'synth' });
  if (queue.pollerRunMs > SCHEDULE_MS) {
    throw new ConfigError(`context POLLER_RUN_MS must be at most ${SCHEDULE_MS}: pollers start every minute, got "${queue.pollerRunMs}"`);
  }
  if (queue.pollerPartitions > queue.shards) {
    throw new ConfigError(`context POLLER_PARTITIONS must be at most SHARDS (${queue.shards}): a partition without a shard would poll nothing, got "${queue.pollerPartitions}"`);
  }
  // The stack schedules this many partitions, and a writer wakes the one owning a job's shard: every function is told, none left to a default.
  queueEnvironment.POLLER_PARTITIONS = String(queue.pollerPartitions);
  const alarmTopicArn = text(read, 'ALARM_TOPIC_ARN');
  const reservedConcurrency = flag(read, 'RESERVED_CONCURRENCY', false);
  const workerReservedConcurrency = integer(read, 'WORKER_RESERVED_CONCURRENCY', DEFAULT_WORKER_RESERVED_CONCURRENCY, 1, 100_000);
  // Ignored, it would let the worker run uncapped while its setting reads as a cap.
  if (!reservedConcurrency && text(read, 'WORKER_RESERVED_CONCURRENCY') !== undefined) {
    throw new ConfigError('context WORKER_RESERVED_CONCURRENCY applies only with RESERVED_CONCURRENCY=true, which is false: set both, or neither');
  }
  return {
    queueEnvironment,
    queue,
    deletionProtection: flag(read, 'DELETION_PROTECTION', true),
    logRetention: retention(read, 'LOG_RETENTION_DAYS', RetentionDays.ONE_MONTH),
    dueLagAlarmMs: integer(read, 'DUE_LAG_ALARM_MS', 120_000, 1_000, 86_400_000),
    apiRateLimit: integer(read, 'API_RATE_LIMIT', 100, 1, 10_000),
    apiBurstLimit: integer(read, 'API_BURST_LIMIT', 200, 1, 5_000),
    ...(alarmTopicArn ? { alarmTopicArn } : {}),
    targetFunctionArns: arns(read, 'TARGET_FUNCTION_ARNS'),
    targetEventBusArns: arns(read, 'TARGET_EVENT_BUS_ARNS'),
    reservedConcurrency,
    workerReservedConcurrency,
    workerEventAgeAlarmMs: integer(read, 'WORKER_EVENT_AGE_ALARM_MS', 30_000, 1_000, 21_600_000),
    httpTargetPrivateAddresses: oneOf(read, 'HTTP_TARGET_PRIVATE_ADDRESSES', PRIVATE_ADDRESS_CHOICES, PRIVATE_ADDRESS_CHOICES[0]),
  };
}

/** The settings validated as context would be, refusing names the queue does not read. */
export function settingsFromProps(settings: DelayedJobQueueSettings): StackSettings {
  const given = new Map<string, unknown>(Object.entries(settings).filter(([, value]) => value !== undefined));
  const known = new Set(settingNames());
  const unknown = [...given.keys()].find((name) => !known.has(name));
  if (unknown !== undefined) throw new ConfigError(`DelayedJobQueue has no setting ${unknown}; the settings are ${[...known].join(', ')}`);
  return stackSettingsFrom((name) => given.get(name));
}

/** Every name `stackSettingsFrom` reads, found by letting it read them. */
export function settingNames(): string[] {
  const names = new Set<string>();
  stackSettingsFrom((name) => void names.add(name));
  return [...names];
}

export { shardsOfPartition } from '../lib/store/keys.js';
