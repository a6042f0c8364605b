/**
 * The bill, counted: the local runtime hands every client, invocation, log line and request of its functions
 * through this meter, which counts what AWS would bill for them deployed, per function (and for API Gateway's own
 * part, `gateway`), in the units of ./billing.ts. `snapshot()` reads the counts; `bill()` prices them at ./prices.ts.
 *
 * Counted where each service is reached: DynamoDB calls from their consumed capacity (./capacity-meter.ts), with
 * what AWS bills and DynamoDB Local reports as nothing; Lambda requests and billed GB-seconds from each invocation's
 * end; API Gateway requests and their access log lines around the gateway; lifecycle events as the EventBridge
 * entries they are deployed; SQS, EventBridge and Parameter Store calls on the SDK clients the functions are
 * handed; custom metrics and log bytes from the lines each function writes, with Lambda's own START, END and
 * REPORT lines. What the stack holds by the month (the callback token parameter, the alarms, the timer queue's
 * polling) is given.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { lifecycleEventEntry, putEventsEntryBytes, type PutEventsRequestEntry } from '../../../lib/aws/eventbridge.js';
import { utf8Bytes } from '../../../lib/domain/json-size.js';
import type { DeployedCost } from '../../../lib/domain/deployed-cost.js';
import type { LifecycleEvent } from '../../../lib/domain/lifecycle-events.js';
import { queueAlarmDefinitions, type AlarmSettings } from '../../alarm-definitions.js';
import { ACCESS_LOG_FORMAT } from '../../http-api.js';
import type { StackSettings } from '../../settings.js';
import type { ApiHandler } from '../http-server.js';
import {
  addUsage,
  alarmMetricsBilled,
  billedGbSeconds,
  dollarsOf,
  eventBridgeEventsBilled,
  fixedDollarsPerMonth,
  httpApiRequestsBilled,
  lambdaAsyncRequestsBilled,
  lambdaPlatformLogLines,
  noUsage,
  sqsRequestsBilled,
  SQS_MAPPING_IDLE_RECEIVES_PER_HOUR,
  sumOf,
  type Service,
  type StackHoldings,
  type Usage,
} from './billing.js';
import { consumedUnitsOf } from './capacity-meter.js';
import { emfMetrics, metricKey } from './cloudwatch.js';
import type { SdkClient } from './iam/iam-check.js';
import { QUEUE_FUNCTIONS, type QueueFunctionName } from './iam/stack-policies.js';
import { billedDurationMs, type InvocationReporter } from './invocation-report.js';
import { localAlarmedResources } from './monitoring.js';
import { HOURS_PER_MONTH, PRICE_REGION, PRICES_AS_OF } from './prices.js';

/** Who a unit is counted for: a function, or API Gateway itself (its requests and access log). */
export const METERED_SOURCES = [...QUEUE_FUNCTIONS, 'gateway'] as const;
export type MeteredSource = (typeof METERED_SOURCES)[number];

export interface MeterSnapshot {
  startedAtMs: number;
  atMs: number;
  usage: Record<MeteredSource, Usage>;
  stack: StackHoldings;
}

export interface Meter {
  snapshot(): MeterSnapshot;
  /** Counts the calls of function `fn`'s DynamoDB client (the base client its document client wraps). */
  dynamoDbClient(fn: QueueFunctionName, client: DynamoDBClient): void;
  /** Counts the billed calls of an SDK client `fn` is handed: `service` as the local IAM layer names it (SQS, EventBridge, SSM). */
  sdkClient(fn: QueueFunctionName, client: SdkClient, service: string): void;
  /** Lifecycle events `fn` publishes: on AWS, entries put on the lifecycle bus. */
  lifecycleEventsPut(fn: QueueFunctionName, events: readonly LifecycleEvent[]): void;
  /** An asynchronous invoke of `fn` with this payload (the poller's of the worker). */
  asyncInvoke(fn: QueueFunctionName, payloadBytes: number): void;
  /** `report` hearing of each invocation's end and each line it logs, the meter counting them first. */
  invocations(report: InvocationReporter): InvocationReporter;
  /** An EMF line of `fn`'s metrics: on AWS written to its log, where CloudWatch extracts the metrics. */
  emfLine(fn: QueueFunctionName, line: string): void;
  /** A batch of `fn`'s event source mapping on an SQS queue: one ReceiveMessage, and one DeleteMessageBatch once handled. */
  fromQueue<T>(fn: QueueFunctionName, handle: () => Promise<T>): Promise<T>;
  /** A message Lambda sends to `fn`'s dead-letter queue for a failed asynchronous invocation. */
  deadLettered(fn: QueueFunctionName, payloadBytes: number): void;
  /** The gateway, each request counted as API Gateway bills it and logs it. */
  gateway(handler: ApiHandler): ApiHandler;
  /** Distinct custom metrics (per function, as `customMetrics` counts them) sent at `atMs` or since: those a window starting then pays for. */
  customMetricsSentSince(atMs: number): number;
}

export interface MeterOptions {
  memorySizesMb: Readonly<Record<QueueFunctionName, number>>;
  stack: StackHoldings;
  /** @default Date.now */
  nowMs?: () => number;
}

export function createMeter(options: MeterOptions): Meter {
  const nowMs = options.nowMs ?? Date.now;
  const startedAtMs = nowMs();
  const usage = Object.fromEntries(METERED_SOURCES.map((source) => [source, noUsage()])) as Record<MeteredSource, Usage>;
  const logged = (source: MeteredSource, line: string): void => {
    usage[source].logEvents += 1;
    usage[source].logBytes += utf8Bytes(line);
  };
  const metrics = metricCounter(usage, nowMs);
  return {
    snapshot: () => ({
      startedAtMs,
      atMs: nowMs(),
      usage: Object.fromEntries(METERED_SOURCES.map((source) => [source, { ...usage[source] }])) as Record<MeteredSource, Usage>,
      stack: { ...options.stack },
    }),
    dynamoDbClient: (fn, client) => meterDynamoDb(client, usage[fn]),
    sdkClient: (fn, client, service) => meterSdkCalls(client, service, usage[fn]),
    lifecycleEventsPut: (fn, events) => {
      for (const event of events) usage[fn].eventBridgeEvents += eventBridgeEventsBilled(putEventsEntryBytes(lifecycleEventEntry('lifecycle', event)));
    },
    asyncInvoke: (fn, payloadBytes) => {
      // The invocation counts its one request when it ends; only the payload's chunks beyond that are counted here.
      usage[fn].lambdaRequests += lambdaAsyncRequestsBilled(payloadBytes) - 1;
    },
    invocations: (report) => ({
      ended(end) {
        const fn = end.fn as QueueFunctionName;
        const memorySizeMb = options.memorySizesMb[fn];
        usage[fn].lambdaRequests += 1;
        usage[fn].lambdaBilledMs += billedDurationMs(end.durationMs);
        usage[fn].lambdaGbSeconds += billedGbSeconds(end.durationMs, memorySizeMb);
        for (const line of lambdaPlatformLogLines({ requestId: end.requestId, durationMs: end.durationMs, memorySizeMb })) logged(fn, line);
        report.ended(end);
      },
      logged: (fn, line) => logged(fn as QueueFunctionName, line),
      flush: () => report.flush(),
    }),
    emfLine: (fn, line) => {
      logged(fn, line);
      metrics.sent(fn, line);
    },
    fromQueue: async (fn, handle) => {
      usage[fn].sqsRequests += 1;
      const handled = await handle();
      usage[fn].sqsRequests += 1;
      return handled;
    },
    deadLettered: (fn, payloadBytes) => {
      usage[fn].sqsRequests += sqsRequestsBilled(payloadBytes);
    },
    gateway: (handler) => meterGateway(handler, usage.gateway, logged, nowMs),
    customMetricsSentSince: (atMs) => metrics.sentSince(atMs),
  };
}

/** Distinct metrics and metric-hours per function, from the EMF lines it writes. */
function metricCounter(usage: Record<MeteredSource, Usage>, nowMs: () => number) {
  const seen = new Set<string>();
  const lastSentAtMs = new Map<string, number>();
  return {
    sent(fn: QueueFunctionName, line: string): void {
      const atMs = nowMs();
      const hour = Math.floor(atMs / 3_600_000);
      for (const { metric } of emfMetrics(line)) {
        const key = `${fn} ${metricKey(metric)}`;
        if (!seen.has(key)) usage[fn].customMetrics += 1;
        if (!seen.has(`${hour} ${key}`)) usage[fn].customMetricHours += 1;
        seen.add(key).add(`${hour} ${key}`);
        lastSentAtMs.set(key, atMs);
      }
    },
    sentSince: (atMs: number): number => [...lastSentAtMs.values()].filter((sentAtMs) => sentAtMs >= atMs).length,
  };
}

const CONDITIONAL_WRITES = new Set(['PutItemCommand', 'UpdateItemCommand', 'DeleteItemCommand']);
const EMPTY_READ_FLOORED = new Set(['QueryCommand', 'ScanCommand']);

/** Eventually consistent reads bill half a unit per 4 KB, strongly consistent ones a whole. */
const minimumReadUnits = (input: { ConsistentRead?: unknown }): number => (input.ConsistentRead === true ? 1 : 0.5);

/** What AWS bills for a read that DynamoDB Local reports as nothing: its minimum for an empty query, and per key a batch get did not find. */
function unreportedReadUnits(command: string, input: Record<string, unknown>, output: Record<string, unknown>, reportedReadUnits: number): number {
  if (EMPTY_READ_FLOORED.has(command)) return reportedReadUnits === 0 ? minimumReadUnits(input) : 0;
  if (command !== 'BatchGetItemCommand') return 0;
  const requested = (input.RequestItems ?? {}) as Record<string, { Keys?: unknown[]; ConsistentRead?: unknown }>;
  const found = (output.Responses ?? {}) as Record<string, unknown[]>;
  const unprocessed = (output.UnprocessedKeys ?? {}) as Record<string, { Keys?: unknown[] }>;
  let units = 0;
  for (const [table, request] of Object.entries(requested)) {
    const missing = (request.Keys?.length ?? 0) - (Object.hasOwn(found, table) ? (found[table]?.length ?? 0) : 0) - (Object.hasOwn(unprocessed, table) ? (unprocessed[table]?.Keys?.length ?? 0) : 0);
    units += Math.max(0, missing) * minimumReadUnits(request);
  }
  return units;
}

function meterDynamoDb(client: DynamoDBClient, usage: Usage): void {
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as Record<string, unknown>;
      if (!('ReturnConsumedCapacity' in input)) input.ReturnConsumedCapacity = 'TOTAL';
      const command = context.commandName ?? 'unknown';
      usage.dynamoDbCalls += 1;
      let result;
      try {
        result = await next(args);
      } catch (error) {
        // AWS bills a failed condition by the existing item's size, at least 1 WRU: the least is counted.
        if (CONDITIONAL_WRITES.has(command) && error instanceof Error && error.name === 'ConditionalCheckFailedException') usage.dynamoDbFailedConditionalWriteUnits += 1;
        throw error;
      }
      const { writeUnits, readUnits } = consumedUnitsOf(command, result.output);
      usage.dynamoDbWriteUnits += writeUnits;
      usage.dynamoDbReadUnits += readUnits;
      usage.dynamoDbUnreportedReadUnits += unreportedReadUnits(command, input, result.output as unknown as Record<string, unknown>, readUnits);
      return result;
    },
    { step: 'initialize', name: 'meterDynamoDb' },
  );
}

/** The payload SQS bills a send by: the message bodies, a batch's together. */
function sqsPayloadBytes(command: string, input: { MessageBody?: string; Entries?: { MessageBody?: string }[] }): number {
  const bodies = command === 'SendMessageBatchCommand' ? (input.Entries ?? []).map((entry) => entry.MessageBody) : [input.MessageBody];
  return bodies.reduce((total, body) => total + utf8Bytes(body ?? ''), 0);
}

function meterSdkCalls(client: SdkClient, service: string, usage: Usage): void {
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const command = String(context.commandName);
      const input = args.input as Record<string, unknown>;
      if (service === 'SSM') usage.ssmCalls += 1;
      const result = await next(args);
      if (service === 'SQS') usage.sqsRequests += sqsRequestsBilled(sqsPayloadBytes(command, input));
      if (service === 'EventBridge' && command === 'PutEventsCommand') {
        const answers = (result.output as { Entries?: { EventId?: string }[] }).Entries ?? [];
        const entries = (input.Entries ?? []) as PutEventsRequestEntry[];
        entries.forEach((entry, index) => {
          if (answers[index]?.EventId !== undefined) usage.eventBridgeEvents += eventBridgeEventsBilled(putEventsEntryBytes(entry));
        });
      }
      return result;
    },
    { step: 'initialize', name: 'meterSdkCalls' },
  );
}

/** A request or response as HTTP carries it, near enough: its start line or status, its headers and its body. */
function messageBytes(headers: Readonly<Record<string, unknown>> | undefined, body: string | undefined, isBase64Encoded: boolean | undefined, startLine: string): number {
  const headerBytes = Object.entries(headers ?? {}).reduce((total, [name, value]) => total + utf8Bytes(`${name}: ${String(value)}\r\n`), 0);
  const bodyBytes = body === undefined ? 0 : isBase64Encoded ? Buffer.byteLength(body, 'base64') : utf8Bytes(body);
  return utf8Bytes(`${startLine}\r\n`) + headerBytes + bodyBytes;
}

/** Stands in for each $context variable of the stage's access log, at the length API Gateway writes it. */
function accessLogLine(event: APIGatewayProxyEventV2, result: APIGatewayProxyStructuredResultV2, latencyMs: number): string {
  const { http } = event.requestContext;
  const values: Record<string, string> = {
    // Its ids and times have a length of their own, which is all the count needs.
    '$context.requestId': 'AbCdEfGhIjKlMnO=',
    '$context.identity.sourceIp': http.sourceIp,
    '$context.requestTime': '29/Nov/2026:12:00:00 +0000',
    '$context.httpMethod': http.method,
    '$context.path': http.path,
    '$context.routeKey': `${http.method} ${http.path}`,
    '$context.status': String(result.statusCode ?? 200),
    '$context.responseLength': String(utf8Bytes(result.body ?? '')),
    '$context.responseLatency': String(Math.round(latencyMs)),
    '$context.integrationErrorMessage': '-',
  };
  return JSON.stringify(Object.fromEntries(Object.entries(ACCESS_LOG_FORMAT).map(([field, variable]) => [field, Object.hasOwn(values, variable) ? values[variable] : variable])));
}

function meterGateway(handler: ApiHandler, usage: Usage, logged: (source: 'gateway', line: string) => void, nowMs: () => number): ApiHandler {
  return async (event, context) => {
    const startedAtMs = nowMs();
    const result = await handler(event, context);
    const requestBytes = messageBytes(event.headers, event.body, event.isBase64Encoded, `${event.requestContext.http.method} ${event.rawPath}?${event.rawQueryString} HTTP/1.1`);
    const responseBytes = messageBytes(result.headers, result.body, result.isBase64Encoded, `HTTP/1.1 ${result.statusCode ?? 200}`);
    usage.httpApiRequests += httpApiRequestsBilled(requestBytes + responseBytes);
    logged('gateway', accessLogLine(event, result, nowMs() - startedAtMs));
    return result;
  };
}

/** What the counts would cost deployed, over the snapshot's window. */
export interface Bill {
  windowMs: number;
  /** Every source's usage together. */
  usage: Usage;
  /** The traffic's dollars, by service. */
  trafficDollars: Record<Service, number>;
  /** The traffic's dollars, by function (and API Gateway's own part). */
  trafficDollarsBySource: Record<MeteredSource, number>;
  /** What the stack holds, by service, in dollars a month. */
  fixedDollarsPerMonth: Record<Service, number>;
  /** The traffic and the holdings over the window. */
  totalDollars: number;
}

export function bill(snapshot: MeterSnapshot): Bill {
  const windowMs = snapshot.atMs - snapshot.startedAtMs;
  const usage = METERED_SOURCES.reduce((total, source) => addUsage(total, snapshot.usage[source]), noUsage());
  const trafficDollars = dollarsOf(usage, snapshot.stack);
  const trafficDollarsBySource = Object.fromEntries(METERED_SOURCES.map((source) => [source, sumOf(dollarsOf(snapshot.usage[source], snapshot.stack))])) as Record<MeteredSource, number>;
  const fixed = fixedDollarsPerMonth(snapshot.stack);
  const windowMonths = windowMs / 3_600_000 / HOURS_PER_MONTH;
  return { windowMs, usage, trafficDollars, trafficDollarsBySource, fixedDollarsPerMonth: fixed, totalDollars: sumOf(trafficDollars) + sumOf(fixed) * windowMonths };
}


/** What the stack deploys that the meter prices by the month: its callback token parameter, its alarms' metrics, its timer queue's polling, its logs' retention. */
export function stackHoldingsOf(stack: AlarmSettings & Pick<StackSettings, 'logRetention'>, tableName: string): StackHoldings {
  return {
    // The callback token parameter, which the worker creates; the stack holds no other.
    parameters: 1,
    alarmMetrics: alarmMetricsBilled(queueAlarmDefinitions(stack, localAlarmedResources(tableName))),
    timerQueueIdleReceivesPerHour: SQS_MAPPING_IDLE_RECEIVES_PER_HOUR,
    logRetentionDays: stack.logRetention,
  };
}

/** The snapshot's bill as `GET /v1/stats` shows it. */
export function deployedCostOf(snapshot: MeterSnapshot): DeployedCost {
  const priced = bill(snapshot);
  return {
    sinceMs: snapshot.startedAtMs,
    pricesAsOf: PRICES_AS_OF,
    region: PRICE_REGION,
    units: { ...priced.usage },
    trafficDollars: priced.trafficDollars,
    trafficDollarsByFunction: priced.trafficDollarsBySource,
    fixedDollarsPerMonth: priced.fixedDollarsPerMonth,
    totalDollars: priced.totalDollars,
  };
}
