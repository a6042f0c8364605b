/**
 * The stack's configuration, from CDK context (`cdk deploy -c SHARDS=8`).
 * Context keys are the environment variable names the functions read, so one
 * name means one thing everywhere; everything is validated at synth, with the
 * same messages a function would give at cold start.
 */
import { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { readQueueSettings, type Env, type QueueSettings } from '../lib/queue/context.js';
import { ConfigError } from '../lib/domain/errors.js';
import { PRIVATE_ADDRESS_CHOICES, type PrivateAddressChoice } from '../lib/targets/addresses.js';

export interface StackSettings {
  /** Queue settings passed to every function, only those given in context (the code's defaults apply otherwise). */
  queueEnvironment: Record<string, string>;
  queue: Omit<QueueSettings, 'tableName'>;
  /** Poller schedule rules; each owns the shards `s` with `s % pollerPartitions == its index`. */
  pollerPartitions: number;
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
   * Reserved concurrency for the poller, the sweeper and the worker. Lambda keeps 10 of an account's concurrency
   * unreserved, so an account whose quota is 10 can deploy only without it.
   */
  reservedConcurrency: boolean;
  /**
   * The worker's reserved concurrency, when `reservedConcurrency`: other functions of the account cannot take it,
   * and it caps the batches running at once (more wait in Lambda's async queue, throttled).
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
 * setting added to lib/queue/context.ts becomes configurable here without a second list.
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
  const pollerPartitions = integer(read, 'POLLER_PARTITIONS', 1, 1, 256);
  if (pollerPartitions > queue.shards) {
    throw new ConfigError(`context POLLER_PARTITIONS must be at most SHARDS (${queue.shards}): a partition without a shard would poll nothing, got "${pollerPartitions}"`);
  }
  const alarmTopicArn = text(read, 'ALARM_TOPIC_ARN');
  return {
    queueEnvironment,
    queue,
    pollerPartitions,
    deletionProtection: flag(read, 'DELETION_PROTECTION', true),
    logRetention: retention(read, 'LOG_RETENTION_DAYS', RetentionDays.ONE_MONTH),
    dueLagAlarmMs: integer(read, 'DUE_LAG_ALARM_MS', 120_000, 1_000, 86_400_000),
    apiRateLimit: integer(read, 'API_RATE_LIMIT', 100, 1, 10_000),
    apiBurstLimit: integer(read, 'API_BURST_LIMIT', 200, 1, 5_000),
    ...(alarmTopicArn ? { alarmTopicArn } : {}),
    targetFunctionArns: arns(read, 'TARGET_FUNCTION_ARNS'),
    targetEventBusArns: arns(read, 'TARGET_EVENT_BUS_ARNS'),
    reservedConcurrency: flag(read, 'RESERVED_CONCURRENCY', true),
    workerReservedConcurrency: integer(read, 'WORKER_RESERVED_CONCURRENCY', DEFAULT_WORKER_RESERVED_CONCURRENCY, 1, 100_000),
    workerEventAgeAlarmMs: integer(read, 'WORKER_EVENT_AGE_ALARM_MS', 30_000, 1_000, 21_600_000),
    httpTargetPrivateAddresses: oneOf(read, 'HTTP_TARGET_PRIVATE_ADDRESSES', PRIVATE_ADDRESS_CHOICES, PRIVATE_ADDRESS_CHOICES[0]),
  };
}

/** The shards poller partition `partition` owns: every `partitions`-th shard, so partitions never share one. */
export function shardsOfPartition(partition: number, partitions: number, shards: number): number[] {
  return Array.from({ length: shards }, (_, shard) => shard).filter((shard) => shard % partitions === partition);
}
