/**
 * How AWS turns what the queue does into billed units, and billed units into dollars at ./prices.ts: the
 * arithmetic of the meter (./meter.ts), kept apart so each rule is tested on its own numbers.
 */
import { metricsOf, type AlarmDefinition } from '../../alarm-definitions.js';
import { billedDurationMs } from './invocation-report.js';
import { BILLING_INCREMENTS, BYTES_PER_GB, HOURS_PER_MONTH, MB_PER_GB, priced } from './prices.js';

/** A size billed per `chunkBytes` started: one chunk at least, even empty. */
export function billedChunks(bytes: number, chunkBytes: number): number {
  return Math.max(1, Math.ceil(bytes / chunkBytes));
}

/** An HTTP API request, the request and its response together, is billed per 512 KB started. */
export const httpApiRequestsBilled = (requestAndResponseBytes: number): number => billedChunks(requestAndResponseBytes, BILLING_INCREMENTS.httpApiRequestBytes);

/** An EventBridge entry is billed as one event per 64 KB started of its size as PutEvents counts it. */
export const eventBridgeEventsBilled = (entryBytes: number): number => billedChunks(entryBytes, BILLING_INCREMENTS.eventBridgeEventBytes);

/** An SQS call is billed as one request per 64 KB started of its payload (a batch's messages together). */
export const sqsRequestsBilled = (payloadBytes: number): number => billedChunks(payloadBytes, BILLING_INCREMENTS.sqsRequestBytes);

/** A Lambda asynchronous invoke is one request up to 256 KB of payload, and one more per 64 KB started beyond. */
export function lambdaAsyncRequestsBilled(payloadBytes: number): number {
  const beyondBytes = Math.max(0, payloadBytes - BILLING_INCREMENTS.lambdaAsyncIncludedBytes);
  return 1 + Math.ceil(beyondBytes / BILLING_INCREMENTS.lambdaAsyncChunkBytes);
}

/** Lambda duration as billed: whole milliseconds rounded up, times the configured memory in GB. */
export function billedGbSeconds(durationMs: number, memorySizeMb: number): number {
  return ((billedDurationMs(durationMs) / 1_000) * memorySizeMb) / MB_PER_GB;
}

/**
 * Lambda's own lines in a function's log, START, END and REPORT, as it writes them in the text log format the stack
 * keeps, with this invocation's figures: about 250 bytes an invocation. Max Memory Used is not known locally (every
 * function shares one process) and is written as three digits; a cold start's INIT_START line and Init Duration
 * are left out, as the runtime has no cold starts.
 */
export function lambdaPlatformLogLines(invocation: { requestId: string; durationMs: number; memorySizeMb: number }): string[] {
  const { requestId, durationMs, memorySizeMb } = invocation;
  return [
    `START RequestId: ${requestId} Version: $LATEST`,
    `END RequestId: ${requestId}`,
    `REPORT RequestId: ${requestId}\tDuration: ${durationMs.toFixed(2)} ms\tBilled Duration: ${billedDurationMs(durationMs)} ms\tMemory Size: ${memorySizeMb} MB\tMax Memory Used: 100 MB\t`,
  ];
}

/** CloudWatch bills an alarm per metric it reads: one, or each of a metric-math expression's. */
export function alarmMetricsBilled(alarms: readonly AlarmDefinition[]): number {
  return alarms.reduce((total, alarm) => total + metricsOf(alarm).length, 0);
}

/**
 * Lambda's mapping on an SQS standard queue long-polls it whether or not anything is sent, and SQS bills each empty
 * receive. At low traffic it polls with five pollers (docs.aws.amazon.com/lambda/latest/dg/services-sqs-scaling.html,
 * which adds it "can optimize to as few as 2"), each ReceiveMessage waiting up to 20 s (from memory): 900 an hour.
 */
export const SQS_MAPPING_IDLE_RECEIVES_PER_HOUR = 5 * 3 * 60;

/** Everything the meter counts, for one function or for all; each field in the unit AWS bills or meters it by. */
export interface Usage {
  lambdaRequests: number;
  lambdaBilledMs: number;
  lambdaGbSeconds: number;
  dynamoDbCalls: number;
  /** As DynamoDB Local reports them with ReturnConsumedCapacity TOTAL: the table's units and its index's together. */
  dynamoDbWriteUnits: number;
  dynamoDbReadUnits: number;
  /** What AWS bills that DynamoDB Local reports as 0: 0.5 RRU (1 consistent) for a query or scan with nothing in it, and per key a batch get did not find. */
  dynamoDbUnreportedReadUnits: number;
  /** A conditional write whose condition failed: DynamoDB Local reports nothing, AWS bills at least 1 WRU. */
  dynamoDbFailedConditionalWriteUnits: number;
  httpApiRequests: number;
  eventBridgeEvents: number;
  sqsRequests: number;
  /** Parameter Store calls (the callback token parameter's reads, and its creation). */
  ssmCalls: number;
  /** Distinct custom metrics (namespace, name and dimensions) sent. */
  customMetrics: number;
  /** Each custom metric times the clock hours it was sent in: CloudWatch prorates a metric-month by these. */
  customMetricHours: number;
  logEvents: number;
  logBytes: number;
}

export const USAGE_FIELDS = [
  'lambdaRequests',
  'lambdaBilledMs',
  'lambdaGbSeconds',
  'dynamoDbCalls',
  'dynamoDbWriteUnits',
  'dynamoDbReadUnits',
  'dynamoDbUnreportedReadUnits',
  'dynamoDbFailedConditionalWriteUnits',
  'httpApiRequests',
  'eventBridgeEvents',
  'sqsRequests',
  'ssmCalls',
  'customMetrics',
  'customMetricHours',
  'logEvents',
  'logBytes',
] as const satisfies readonly (keyof Usage)[];

export const noUsage = (): Usage => Object.fromEntries(USAGE_FIELDS.map((field) => [field, 0])) as unknown as Usage;

export function addUsage(into: Usage, more: Usage): Usage {
  for (const field of USAGE_FIELDS) into[field] += more[field];
  return into;
}

export const SERVICES = ['lambda', 'dynamodb', 'api_gateway', 'eventbridge', 'sqs', 'ssm', 'cloudwatch_metrics', 'cloudwatch_alarms', 'cloudwatch_logs'] as const;
export type Service = (typeof SERVICES)[number];

const noDollars = (): Record<Service, number> => Object.fromEntries(SERVICES.map((service) => [service, 0])) as Record<Service, number>;

/** What the stack deploys that the bill depends on, whatever the traffic. */
export interface StackHoldings {
  /** Standard SecureString parameters of Parameter Store the stack keeps (the callback token's). */
  parameters: number;
  /** Its alarms' metrics: an alarm on metric math counts each metric it reads. */
  alarmMetrics: number;
  /** Empty ReceiveMessage calls an hour of Lambda's mapping on the waker's timer queue, which long-polls it whether or not anything is sent. */
  timerQueueIdleReceivesPerHour: number;
  /** How long the log groups keep what they ingest. */
  logRetentionDays: number;
}

/** Dollars of `usage`, by service: the traffic's part of the bill. */
export function dollarsOf(usage: Usage, stack: Pick<StackHoldings, 'logRetentionDays'>): Record<Service, number> {
  const logGb = usage.logBytes / BYTES_PER_GB;
  const logMonthsKept = (stack.logRetentionDays * 24) / HOURS_PER_MONTH;
  return {
    ...noDollars(),
    lambda: priced('lambdaRequest', usage.lambdaRequests) + priced('lambdaArm64Duration', usage.lambdaGbSeconds),
    dynamodb:
      priced('dynamoDbWriteRequestUnit', usage.dynamoDbWriteUnits + usage.dynamoDbFailedConditionalWriteUnits) +
      priced('dynamoDbReadRequestUnit', usage.dynamoDbReadUnits + usage.dynamoDbUnreportedReadUnits),
    api_gateway: priced('httpApiRequest', usage.httpApiRequests),
    eventbridge: priced('eventBridgeCustomEvent', usage.eventBridgeEvents),
    sqs: priced('sqsStandardRequest', usage.sqsRequests),
    ssm: priced('ssmStandardParameterApiCall', usage.ssmCalls),
    cloudwatch_metrics: priced('cloudWatchCustomMetric', usage.customMetricHours / HOURS_PER_MONTH),
    // Kept for the whole retention, uncompressed: an upper bound on storage, which is charged compressed.
    cloudwatch_logs: priced('cloudWatchLogsIngestion', logGb) + priced('cloudWatchLogsStorage', logGb * logMonthsKept),
  };
}

/** Dollars a month of what the stack holds, by service. */
export function fixedDollarsPerMonth(stack: StackHoldings): Record<Service, number> {
  return {
    ...noDollars(),
    ssm: priced('ssmStandardParameter', stack.parameters),
    cloudwatch_alarms: priced('cloudWatchAlarmMetric', stack.alarmMetrics),
    sqs: priced('sqsStandardRequest', stack.timerQueueIdleReceivesPerHour * HOURS_PER_MONTH),
  };
}

export const sumOf = (dollars: Readonly<Record<Service, number>>): number => SERVICES.reduce((total, service) => total + dollars[service], 0);
