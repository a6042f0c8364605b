/**
 * The stack's three alarms (infra/alarm-definitions.ts) as the local CloudWatch evaluates them: each condition the
 * queue alarms on turns its alarm to ALARM, and a queue where nothing happens, its poller reporting a lag of 0
 * every minute, leaves every alarm OK.
 */
import { describe, expect, test } from 'vitest';
import { alarmedMetrics, queueAlarmDefinitions, type MetricRef } from '../../../infra/alarm-definitions.js';
import { deployStackSettings } from '../../../infra/cdk-context.js';
import { createLocalCloudWatch, EVALUATION_INTERVAL_MS } from '../../../infra/local/aws/cloudwatch.js';
import { manualClock } from '../../support/queue.js';

const settings = deployStackSettings({});
const resources = { metricsNamespace: 'Jobs', workerFunctionName: 'worker', tableName: 'jobs' };
const metrics = alarmedMetrics(resources);

type Puts = [MetricRef, number][];

/** The alarms on a fresh CloudWatch; `minute(puts)` sends the poller's lag of 0 (unless told not to) and `puts`, lets a minute pass and says each alarm's state. */
function stackAlarms() {
  const clock = manualClock();
  const cloudWatch = createLocalCloudWatch({ alarms: queueAlarmDefinitions(settings, resources), nowMs: clock.nowMs });
  const minute = (puts: Puts = [], options: { lagReported?: boolean } = {}): Record<string, string> => {
    if (options.lagReported ?? true) cloudWatch.put(metrics.oldestDueLag, 0);
    for (const [metric, value] of puts) cloudWatch.put(metric, value);
    clock.advance(EVALUATION_INTERVAL_MS);
    return Object.fromEntries(cloudWatch.alarmStates().map(({ name, state }) => [name, state]));
  };
  return { minute };
}

const ALL_OK = { DueLagAlarm: 'OK', WorkerAlarm: 'OK', DynamoDbThrottlesAlarm: 'OK' };

test('three alarms, and on an idle queue every one is OK at each evaluation over ten minutes, the first included', () => {
  const { minute } = stackAlarms();
  expect(Array.from({ length: 10 }, () => minute())).toEqual(Array.from({ length: 10 }, () => ALL_OK));
});

describe('DueLagAlarm', () => {
  test('is ALARM after two minutes of a lag over DUE_LAG_ALARM_MS, not after one', () => {
    const { minute } = stackAlarms();
    const over: Puts = [[metrics.oldestDueLag, settings.dueLagAlarmMs + 1]];
    minute();
    expect(minute(over).DueLagAlarm).toBe('OK');
    expect(minute(over).DueLagAlarm).toBe('ALARM');
  });

  test('is ALARM once no poller reported its lag in the range it reads, at the end of the fourth minute without a report', () => {
    const { minute } = stackAlarms();
    minute();
    const silent = Array.from({ length: 5 }, () => minute([], { lagReported: false }).DueLagAlarm);
    expect(silent).toEqual(['OK', 'OK', 'OK', 'ALARM', 'ALARM']);
  });
});

describe('WorkerAlarm', () => {
  test.each([
    ['a failed invocation', [[metrics.workerErrors, 1]]],
    ['a throttled invoke', [[metrics.workerThrottles, 1]]],
    ['a batch that waited over WORKER_EVENT_AGE_ALARM_MS', [[metrics.workerAsyncEventAge, settings.workerEventAgeAlarmMs + 1]]],
  ] as [string, Puts][])('is ALARM after %s, and OK again five minutes on', (_condition, puts) => {
    const { minute } = stackAlarms();
    minute();
    expect(minute(puts)).toEqual({ ...ALL_OK, WorkerAlarm: 'ALARM' });
    const after = Array.from({ length: 7 }, () => minute().WorkerAlarm);
    expect(after.at(-1)).toBe('OK');
  });

  test('stays OK for batches that waited less than WORKER_EVENT_AGE_ALARM_MS, however many', () => {
    const { minute } = stackAlarms();
    const prompt: Puts = Array.from({ length: 20 }, () => [metrics.workerAsyncEventAge, settings.workerEventAgeAlarmMs]);
    expect([minute(prompt), minute(prompt)]).toEqual([ALL_OK, ALL_OK]);
  });
});

describe('DynamoDbThrottlesAlarm', () => {
  test.each(Object.entries(metrics.dynamoDbThrottles))('is ALARM after two minutes with %s throttled, not after one', (_name, metric) => {
    const { minute } = stackAlarms();
    expect(minute([[metric, 1]]).DynamoDbThrottlesAlarm).toBe('OK');
    expect(minute([[metric, 1]])).toEqual({ ...ALL_OK, DynamoDbThrottlesAlarm: 'ALARM' });
  });
});
