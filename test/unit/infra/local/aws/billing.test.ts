/** The billing rules the meter counts by, each on numbers worked out by hand from the pricing pages' rules. */
import { describe, expect, test } from 'vitest';
import {
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
  sumOf,
} from '../../../../../infra/local/aws/billing.js';
import { queueAlarmDefinitions, type AlarmDefinition, type MetricRef } from '../../../../../infra/alarm-definitions.js';
import { deployStackSettings } from '../../../../../infra/cdk-context.js';

const KB = 1024;

describe('API Gateway', () => {
  test('an HTTP API request of 600 KB, request and response together, bills 2 requests', () => {
    expect(httpApiRequestsBilled(600 * KB)).toBe(2);
  });

  test('one of exactly 512 KB bills 1, and one byte more 2', () => {
    expect(httpApiRequestsBilled(512 * KB)).toBe(1);
    expect(httpApiRequestsBilled(512 * KB + 1)).toBe(2);
  });

  test('an empty request still bills 1', () => {
    expect(httpApiRequestsBilled(0)).toBe(1);
  });
});

describe('EventBridge', () => {
  test('an entry of 65 KB bills 2 events, one of 64 KB 1', () => {
    expect(eventBridgeEventsBilled(65 * KB)).toBe(2);
    expect(eventBridgeEventsBilled(64 * KB)).toBe(1);
  });
});

describe('SQS', () => {
  test('a send bills one request per 64 KB started of its payload', () => {
    expect(sqsRequestsBilled(200)).toBe(1);
    expect(sqsRequestsBilled(64 * KB + 1)).toBe(2);
    expect(sqsRequestsBilled(256 * KB)).toBe(4);
  });
});

describe('Lambda', () => {
  test('billed GB-seconds of 1 000.2 ms at 128 MB are 1 001 ms times an eighth of a GB', () => {
    expect(billedGbSeconds(1_000.2, 128)).toBeCloseTo(0.125125, 9);
  });

  test('an invocation shorter than a millisecond bills one', () => {
    expect(billedGbSeconds(0.3, 1_024)).toBeCloseTo(0.001, 9);
  });

  test('an asynchronous invoke bills one request up to 256 KB of payload and one per 64 KB started beyond', () => {
    expect(lambdaAsyncRequestsBilled(256 * KB)).toBe(1);
    expect(lambdaAsyncRequestsBilled(256 * KB + 1)).toBe(2);
    expect(lambdaAsyncRequestsBilled(1_024 * KB)).toBe(13);
  });

  test("Lambda's START, END and REPORT lines of an invocation come to about 250 bytes", () => {
    const lines = lambdaPlatformLogLines({ requestId: '6f1c3a52-8d0e-4f5b-9a41-2b7e0c9d1f38', durationMs: 12.345, memorySizeMb: 512 });
    const bytes = lines.reduce((total, line) => total + Buffer.byteLength(line), 0);
    expect(lines[2]).toContain('Duration: 12.35 ms\tBilled Duration: 13 ms\tMemory Size: 512 MB');
    expect(bytes).toBeGreaterThan(230);
    expect(bytes).toBeLessThan(280);
  });
});

describe('CloudWatch alarms', () => {
  const metric = (name: string): MetricRef => ({ namespace: 'Queue', name, dimensions: {} });
  const alarm = (id: string, watched: AlarmDefinition['metric']): AlarmDefinition => ({
    id,
    description: id,
    metric: watched,
    statistic: 'Sum',
    periodS: 60,
    comparison: 'GreaterThanThreshold',
    threshold: 0,
    evaluationPeriods: 1,
    datapointsToAlarm: 1,
    treatMissingData: 'notBreaching',
  });

  test('an alarm on one metric bills one alarm metric, one on an expression of three bills three', () => {
    const terms = { a: { metric: metric('a') }, b: { metric: metric('b') }, c: { metric: metric('c'), statistic: 'Maximum' as const, above: 5 } };
    const alarms = [alarm('One', metric('a')), alarm('Math', { label: 'all', terms })];
    expect(alarmMetricsBilled(alarms)).toBe(4);
  });

  test("the stack's alarms bill eight alarm metrics", () => {
    const resources = { metricsNamespace: 'Jobs', workerFunctionName: 'worker', tableName: 'jobs' };
    expect(alarmMetricsBilled(queueAlarmDefinitions(deployStackSettings({}), resources))).toBe(8);
  });
});

describe('dollars', () => {
  const stack = { parameters: 1, alarmMetrics: 10, timerQueueIdleReceivesPerHour: 900, logRetentionDays: 30 };

  test('a million write units cost the on-demand price, and a failed conditional write is priced as a write', () => {
    expect(dollarsOf({ ...noUsage(), dynamoDbWriteUnits: 600_000, dynamoDbFailedConditionalWriteUnits: 400_000 }, stack).dynamodb).toBeCloseTo(0.625);
  });

  test('read units DynamoDB Local did not report are priced as the reads AWS bills them as', () => {
    expect(dollarsOf({ ...noUsage(), dynamoDbReadUnits: 500_000, dynamoDbUnreportedReadUnits: 500_000 }, stack).dynamodb).toBeCloseTo(0.125);
  });

  test('Lambda is its requests and its GB-seconds at the arm64 rate', () => {
    expect(dollarsOf({ ...noUsage(), lambdaRequests: 1_000_000, lambdaGbSeconds: 1_000_000 }, stack).lambda).toBeCloseTo(0.2 + 13.3334);
  });

  test('a custom metric sent in every hour of a month costs a metric-month', () => {
    expect(dollarsOf({ ...noUsage(), customMetricHours: 730 }, stack).cloudwatch_metrics).toBeCloseTo(0.3);
  });

  test('a GB of logs costs its ingestion and its storage for the retention', () => {
    const thirtyDaysInMonths = (30 * 24) / 730;
    expect(dollarsOf({ ...noUsage(), logBytes: 2 ** 30 }, stack).cloudwatch_logs).toBeCloseTo(0.5 + 0.03 * thirtyDaysInMonths);
  });

  test('no usage costs nothing', () => {
    expect(sumOf(dollarsOf(noUsage(), stack))).toBe(0);
  });

  test('Parameter Store calls at the standard throughput cost nothing', () => {
    expect(dollarsOf({ ...noUsage(), ssmCalls: 1_000_000 }, stack).ssm).toBe(0);
  });

  test('what the stack holds costs its alarm metrics and the timer queue polling a month; its standard parameter, nothing', () => {
    const fixed = fixedDollarsPerMonth(stack);
    expect(fixed.ssm).toBe(0);
    expect(fixed.cloudwatch_alarms).toBeCloseTo(1);
    expect(fixed.sqs).toBeCloseTo((900 * 730 * 0.4) / 1_000_000);
  });
});
