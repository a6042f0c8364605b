/**
 * The local CloudWatch (infra/local/aws/cloudwatch.ts): metrics from EMF lines and from put, each counted in the
 * period it arrives in on the clock, and alarms evaluated once a minute from its creation.
 */
import { describe, expect, test } from 'vitest';
import type { AlarmDefinition, MetricRef } from '../../../../../infra/alarm-definitions.js';
import { createLocalCloudWatch, EVALUATION_INTERVAL_MS } from '../../../../../infra/local/aws/cloudwatch.js';
import type { AlarmStatus } from '../../../../../lib/domain/alarms.js';
import { manualClock } from '../../../../support/queue.js';

const lag: MetricRef = { namespace: 'Queue', name: 'OldestDueLagMs', dimensions: { service: 'poller' } };

/** Any lag over 100 in one minute alarms; a minute without one is fine. */
const lagAlarm = (overrides: Partial<AlarmDefinition> = {}): AlarmDefinition => ({
  id: 'LagAlarm',
  description: 'lag',
  metric: lag,
  statistic: 'Maximum',
  periodS: 60,
  comparison: 'GreaterThanThreshold',
  threshold: 100,
  evaluationPeriods: 1,
  datapointsToAlarm: 1,
  treatMissingData: 'notBreaching',
  ...overrides,
});

/** A line as Powertools writes it: the directive, then the dimensions' and the metrics' values. */
function emfLine(dimensionSets: string[][], fields: Record<string, string | number | number[]>): string {
  const metricNames = Object.keys(fields).filter((name) => typeof fields[name] !== 'string');
  return JSON.stringify({
    _aws: { Timestamp: 0, CloudWatchMetrics: [{ Namespace: 'Queue', Dimensions: dimensionSets, Metrics: metricNames.map((Name) => ({ Name, Unit: 'Milliseconds' })) }] },
    ...fields,
  });
}

function cloudWatchWith(alarms: AlarmDefinition[]) {
  const clock = manualClock();
  const changes: AlarmStatus[] = [];
  const cloudWatch = createLocalCloudWatch({ alarms, nowMs: clock.nowMs, onStateChange: (status) => changes.push(status) });
  const stateAfter = (ms: number): string | undefined => {
    clock.advance(ms);
    return cloudWatch.alarmStates()[0]?.state;
  };
  return { clock, cloudWatch, changes, stateAfter };
}

describe('evaluation', () => {
  test('a new alarm is INSUFFICIENT_DATA until its first evaluation, a minute after the CloudWatch starts', () => {
    const { stateAfter } = cloudWatchWith([lagAlarm()]);
    expect(stateAfter(0)).toBe('INSUFFICIENT_DATA');
    expect(stateAfter(EVALUATION_INTERVAL_MS - 1)).toBe('INSUFFICIENT_DATA');
    expect(stateAfter(1)).toBe('OK');
  });

  test('a value is evaluated with the period it arrived in, once that period has ended', () => {
    const { cloudWatch, stateAfter } = cloudWatchWith([lagAlarm()]);
    stateAfter(10_000);
    cloudWatch.put(lag, 500);
    expect(stateAfter(49_999)).toBe('INSUFFICIENT_DATA');
    expect(stateAfter(1)).toBe('ALARM');
  });

  test("a value arriving as a period ends counts in the next: periods are counted from the CloudWatch's start", () => {
    const { cloudWatch, stateAfter } = cloudWatchWith([lagAlarm()]);
    stateAfter(EVALUATION_INTERVAL_MS);
    cloudWatch.put(lag, 500);
    expect(stateAfter(0)).toBe('OK');
    expect(stateAfter(EVALUATION_INTERVAL_MS)).toBe('ALARM');
  });

  test('every minute since the last read is evaluated in turn: an alarm that went to ALARM and back is heard both times', () => {
    const { clock, cloudWatch, changes } = cloudWatchWith([lagAlarm()]);
    const startMs = clock.nowMs();
    clock.advance(70_000);
    cloudWatch.put(lag, 500);
    clock.advance(230_000);
    expect(cloudWatch.alarmStates().map(({ state }) => state)).toEqual(['OK']);
    // The breach stays the most recent datapoint of the range (3 periods) until it leaves it.
    expect(changes.map(({ state, changedAtMs }) => [state, changedAtMs - startMs])).toEqual([
      ['OK', 60_000],
      ['ALARM', 120_000],
      ['OK', 300_000],
    ]);
  });

  test('a change of state comes with its reason, which stays until the next change', () => {
    const { cloudWatch, stateAfter } = cloudWatchWith([lagAlarm()]);
    cloudWatch.put(lag, 500);
    stateAfter(EVALUATION_INTERVAL_MS);
    expect(cloudWatch.alarmStates()[0]).toMatchObject({ name: 'LagAlarm', state: 'ALARM', reason: '1 of the last 1 datapoints greater than the threshold (100)' });
  });
});

describe('EMF lines', () => {
  test('a metric counts under each dimension set of its line, and an alarm reads the one of exactly its dimensions', () => {
    const { cloudWatch, stateAfter } = cloudWatchWith([lagAlarm()]);
    cloudWatch.putEmf(emfLine([['service', 'type']], { service: 'poller', type: 'emails', OldestDueLagMs: 500 }));
    expect(stateAfter(EVALUATION_INTERVAL_MS)).toBe('OK');
    cloudWatch.putEmf(emfLine([['service', 'type'], ['service']], { service: 'poller', type: 'emails', OldestDueLagMs: 500 }));
    expect(stateAfter(EVALUATION_INTERVAL_MS)).toBe('ALARM');
  });

  test('each value of a metric written as a list counts', () => {
    const { cloudWatch, stateAfter } = cloudWatchWith([lagAlarm()]);
    cloudWatch.putEmf(emfLine([['service']], { service: 'poller', OldestDueLagMs: [5, 500, 7] }));
    expect(stateAfter(EVALUATION_INTERVAL_MS)).toBe('ALARM');
  });

  test('a line that is not EMF, or names a dimension it has no value for, is refused: the functions print nothing else there', () => {
    const { cloudWatch } = cloudWatchWith([lagAlarm()]);
    expect(() => cloudWatch.putEmf(JSON.stringify({ OldestDueLagMs: 500 }))).toThrow(/not an EMF line/);
    expect(() => cloudWatch.putEmf(emfLine([['service', 'type']], { service: 'poller', OldestDueLagMs: 500 }))).toThrow(/EMF dimension type has no string value/);
  });
});

describe('metric math', () => {
  const reads: MetricRef = { namespace: 'AWS/DynamoDB', name: 'ReadThrottleEvents', dimensions: { TableName: 'jobs' } };
  const writes: MetricRef = { ...reads, name: 'WriteThrottleEvents' };
  const throttles = (treatMissingData: AlarmDefinition['treatMissingData']) =>
    lagAlarm({ metric: { terms: { reads: { metric: reads }, writes: { metric: writes } }, label: 'throttles' }, statistic: 'Sum', threshold: 5, treatMissingData });

  test('adds up every metric, a missing one taken as 0', () => {
    const { cloudWatch, stateAfter } = cloudWatchWith([throttles('notBreaching')]);
    cloudWatch.put(reads, 3);
    expect(stateAfter(EVALUATION_INTERVAL_MS)).toBe('OK');
    cloudWatch.put(reads, 3);
    cloudWatch.put(writes, 4);
    expect(stateAfter(EVALUATION_INTERVAL_MS)).toBe('ALARM');
  });

  test('is missing in a period none of them has a value in', () => {
    const { stateAfter } = cloudWatchWith([throttles('breaching')]);
    expect(stateAfter(EVALUATION_INTERVAL_MS)).toBe('ALARM');
  });

  test('a term compared with its own threshold counts 1 over it and 0 otherwise, on its own statistic', () => {
    const age: MetricRef = { namespace: 'AWS/Lambda', name: 'AsyncEventAge', dimensions: { FunctionName: 'worker' } };
    const late = lagAlarm({
      metric: { terms: { reads: { metric: reads }, late: { metric: age, statistic: 'Maximum', above: 1_000 } }, label: 'reads and late' },
      statistic: 'Sum',
      threshold: 1,
    });
    const { cloudWatch, stateAfter } = cloudWatchWith([late]);
    // 900 + 800 is over 1 000 as a sum, not as a maximum; with a read it is 0 + 1, not over 1.
    cloudWatch.put(age, 900);
    cloudWatch.put(age, 800);
    cloudWatch.put(reads, 1);
    expect(stateAfter(EVALUATION_INTERVAL_MS)).toBe('OK');
    // Over it once: 1 + 1.
    cloudWatch.put(age, 5_000);
    cloudWatch.put(reads, 1);
    expect(stateAfter(EVALUATION_INTERVAL_MS)).toBe('ALARM');
  });
});
