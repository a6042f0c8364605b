/** The meter counts what reaches it as AWS would bill it, for the function it reached it through. */
import { DynamoDBClient, BatchGetItemCommand, PutItemCommand, QueryCommand, type DynamoDBClientConfig } from '@aws-sdk/client-dynamodb';
import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';
import { describe, expect, test } from 'vitest';
import { bill, createMeter, type Meter } from '../../../../../infra/local/aws/meter.js';
import { createInvocationReporter } from '../../../../../infra/local/aws/invocation-report.js';
import { httpApiEvent } from '../../../../../infra/local/http-server.js';
import type { LifecycleEvent } from '../../../../../lib/domain/lifecycle-events.js';

const MEMORY_SIZES_MB = { api: 512, authorizer: 256, worker: 1024, poller: 512, sweeper: 256, waker: 256 };
const STACK = { parameters: 1, alarmMetrics: 10, timerQueueIdleReceivesPerHour: 900, logRetentionDays: 30 };

const lifecycleEvent = (name: LifecycleEvent['name']): LifecycleEvent => ({ name, type: 't', id: '1', attempt: 1, outcome: 'succeeded', status: 'succeeded', atMs: 0 });

function meterAt(clock: { nowMs: number }): Meter {
  return createMeter({ memorySizesMb: MEMORY_SIZES_MB, stack: STACK, nowMs: () => clock.nowMs });
}

/** A DynamoDB client whose calls `answer` answers in process, the meter's middleware in front. */
function answeringClient(answer: (command: string, input: Record<string, unknown>) => unknown): DynamoDBClient {
  const config: DynamoDBClientConfig = { region: 'us-east-1', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } };
  const client = new DynamoDBClient(config);
  client.middlewareStack.add(
    (_next, context) => async (args) => ({ output: { $metadata: {}, ...(answer(String(context.commandName), args.input as Record<string, unknown>) as object) }, response: {} }) as never,
    { step: 'initialize', priority: 'low', name: 'answer' },
  );
  return client;
}

const conditionFailed = (): never => {
  throw Object.assign(new Error('The conditional request failed'), { name: 'ConditionalCheckFailedException' });
};

describe('DynamoDB', () => {
  test('a call counts the units its answer reports, asked for on every call', async () => {
    const seen: Record<string, unknown>[] = [];
    const client = answeringClient((_command, input) => (seen.push(input), { ConsumedCapacity: { TableName: 'jobs', CapacityUnits: 2 } }));
    const meter = meterAt({ nowMs: 0 });
    meter.dynamoDbClient('api', client);
    await client.send(new PutItemCommand({ TableName: 'jobs', Item: { pk: { S: 'a' } } }));
    expect(seen[0]?.ReturnConsumedCapacity).toBe('TOTAL');
    expect(meter.snapshot().usage.api).toMatchObject({ dynamoDbCalls: 1, dynamoDbWriteUnits: 2, dynamoDbReadUnits: 0 });
  });

  test('a failed conditional write counts 1 WRU, which DynamoDB Local does not report', async () => {
    const client = answeringClient(conditionFailed);
    const meter = meterAt({ nowMs: 0 });
    meter.dynamoDbClient('worker', client);
    await expect(client.send(new PutItemCommand({ TableName: 'jobs', Item: { pk: { S: 'a' } } }))).rejects.toThrow('conditional');
    expect(meter.snapshot().usage.worker).toMatchObject({ dynamoDbCalls: 1, dynamoDbWriteUnits: 0, dynamoDbFailedConditionalWriteUnits: 1 });
  });

  test('a query that finds nothing counts the half unit AWS bills it, a consistent one a whole', async () => {
    const client = answeringClient(() => ({ Items: [], ConsumedCapacity: { TableName: 'jobs', CapacityUnits: 0 } }));
    const meter = meterAt({ nowMs: 0 });
    meter.dynamoDbClient('poller', client);
    await client.send(new QueryCommand({ TableName: 'jobs', KeyConditionExpression: 'pk = :p', ExpressionAttributeValues: { ':p': { S: 'a' } } }));
    await client.send(new QueryCommand({ TableName: 'jobs', ConsistentRead: true, KeyConditionExpression: 'pk = :p', ExpressionAttributeValues: { ':p': { S: 'a' } } }));
    expect(meter.snapshot().usage.poller.dynamoDbUnreportedReadUnits).toBe(1.5);
  });

  test('a query that finds something counts only what it reports', async () => {
    const client = answeringClient(() => ({ Items: [{}], ConsumedCapacity: { TableName: 'jobs', CapacityUnits: 0.5 } }));
    const meter = meterAt({ nowMs: 0 });
    meter.dynamoDbClient('poller', client);
    await client.send(new QueryCommand({ TableName: 'jobs', KeyConditionExpression: 'pk = :p', ExpressionAttributeValues: { ':p': { S: 'a' } } }));
    expect(meter.snapshot().usage.poller).toMatchObject({ dynamoDbReadUnits: 0.5, dynamoDbUnreportedReadUnits: 0 });
  });

  test('a batch get counts half a unit for each key it did not find', async () => {
    const client = answeringClient(() => ({ Responses: { jobs: [{}] }, UnprocessedKeys: {}, ConsumedCapacity: [{ TableName: 'jobs', CapacityUnits: 0.5 }] }));
    const meter = meterAt({ nowMs: 0 });
    meter.dynamoDbClient('api', client);
    const keys = ['a', 'b', 'c'].map((pk) => ({ pk: { S: pk } }));
    await client.send(new BatchGetItemCommand({ RequestItems: { jobs: { Keys: keys } } }));
    expect(meter.snapshot().usage.api).toMatchObject({ dynamoDbReadUnits: 0.5, dynamoDbUnreportedReadUnits: 1 });
  });
});

describe('Lambda', () => {
  test("an invocation counts a request, its billed GB-seconds at its function's memory and Lambda's own lines in its log", () => {
    const meter = meterAt({ nowMs: 0 });
    const report = meter.invocations(createInvocationReporter({ write: () => undefined }));
    report.ended({ fn: 'worker', requestId: '6f1c3a52-8d0e-4f5b-9a41-2b7e0c9d1f38', durationMs: 1_000.2, timedOut: false });
    expect(meter.snapshot().usage.worker).toMatchObject({ lambdaRequests: 1, lambdaBilledMs: 1_001, lambdaGbSeconds: 1.001, logEvents: 3 });
    expect(meter.snapshot().usage.worker.logBytes).toBeGreaterThan(250);
  });

  test("a line an invocation writes counts toward its function's log", () => {
    const meter = meterAt({ nowMs: 0 });
    meter.invocations(createInvocationReporter({ write: () => undefined })).logged?.('poller', '{"message":"claimed"}');
    expect(meter.snapshot().usage.poller).toMatchObject({ logEvents: 1, logBytes: 21 });
  });

  test("an asynchronous invoke over 256 KB counts the requests of its chunks beyond the invocation's own", () => {
    const meter = meterAt({ nowMs: 0 });
    meter.asyncInvoke('worker', 300 * 1024);
    expect(meter.snapshot().usage.worker.lambdaRequests).toBe(1);
  });
});

describe('CloudWatch metrics', () => {
  const emf = (name: string): string =>
    JSON.stringify({ _aws: { Timestamp: 0, CloudWatchMetrics: [{ Namespace: 'Queue', Dimensions: [['service']], Metrics: [{ Name: name, Unit: 'Count' }] }] }, service: 'poller', [name]: 1 });

  test('a metric sent twice in an hour is one metric and one metric-hour, and another hour adds a metric-hour', () => {
    const clock = { nowMs: 0 };
    const meter = meterAt(clock);
    meter.emfLine('poller', emf('Claimed'));
    meter.emfLine('poller', emf('Claimed'));
    clock.nowMs = 3_600_000;
    meter.emfLine('poller', emf('Claimed'));
    expect(meter.snapshot().usage.poller).toMatchObject({ customMetrics: 1, customMetricHours: 2, logEvents: 3 });
  });

  test('the metrics a window pays for are those sent in it, not those of before', () => {
    const clock = { nowMs: 0 };
    const meter = meterAt(clock);
    meter.emfLine('api', emf('Enqueued'));
    meter.emfLine('poller', emf('Claimed'));
    clock.nowMs = 60_000;
    meter.emfLine('poller', emf('Claimed'));
    expect({ since0: meter.customMetricsSentSince(0), since60s: meter.customMetricsSentSince(60_000), later: meter.customMetricsSentSince(60_001) }).toEqual({ since0: 2, since60s: 1, later: 0 });
  });
});

describe('EventBridge', () => {
  test('each lifecycle event published counts as one event put on the bus', () => {
    const meter = meterAt({ nowMs: 0 });
    meter.lifecycleEventsPut('worker', [lifecycleEvent('job.succeeded'), lifecycleEvent('job.failed')]);
    expect(meter.snapshot().usage.worker.eventBridgeEvents).toBe(2);
  });
});

describe('SQS', () => {
  test('a batch of the timer queue counts its receive, and its delete once handled', async () => {
    const meter = meterAt({ nowMs: 0 });
    await meter.fromQueue('waker', async () => undefined);
    await expect(meter.fromQueue('waker', async () => Promise.reject(new Error('failed')))).rejects.toThrow('failed');
    expect(meter.snapshot().usage.waker.sqsRequests).toBe(3);
  });
});

describe('API Gateway', () => {
  const event = (body: string): APIGatewayProxyEventV2 =>
    httpApiEvent({ method: 'PUT', url: new URL('http://localhost/v1/jobs/t/1'), headers: {}, body, isBase64Encoded: false, requestId: 'r', sourceIp: '127.0.0.1', protocol: 'HTTP/1.1' });

  test('each request counts one billed request per 512 KB of it and its answer, and an access log line', async () => {
    const meter = meterAt({ nowMs: 0 });
    const handler = meter.gateway(async () => ({ statusCode: 201, body: '{}' }));
    await handler(event('{}'), {} as Context);
    await handler(event('x'.repeat(600 * 1024)), {} as Context);
    expect(meter.snapshot().usage.gateway).toMatchObject({ httpApiRequests: 3, logEvents: 2 });
  });
});

describe('the bill', () => {
  test("prices the traffic and the stack's holdings over the snapshot's window", () => {
    const clock = { nowMs: 0 };
    const meter = meterAt(clock);
    meter.invocations(createInvocationReporter({ write: () => undefined })).ended({ fn: 'api', requestId: 'r', durationMs: 10, timedOut: false });
    clock.nowMs = 730 * 3_600_000;
    const priced = bill(meter.snapshot());
    expect(priced.usage.lambdaRequests).toBe(1);
    expect(priced.trafficDollarsBySource.api).toBeGreaterThan(0);
    expect(priced.totalDollars).toBeCloseTo(priced.trafficDollars.lambda + priced.trafficDollars.cloudwatch_logs + 1 + (900 * 730 * 0.4) / 1_000_000);
  });
});
