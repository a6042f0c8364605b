/**
 * CloudWatch's evaluation of an alarm, as the local runtime does it (infra/local/aws/alarm-evaluation.ts): a period's
 * statistic, the comparison with the threshold, M of N datapoints, and what each treatment of missing data makes
 * of the periods without one. A range is written oldest first, `_` for a missing period.
 */
import { describe, expect, test } from 'vitest';
import { datapointOf, evaluateAlarm, type AlarmRule } from '../../../../../infra/local/aws/alarm-evaluation.js';

const _ = undefined;
/** Breaching is above 10; 99 breaches, 1 does not. */
const X = 99;
const O = 1;

const rule = (overrides: Partial<AlarmRule> = {}): AlarmRule => ({
  comparison: 'GreaterThanThreshold',
  threshold: 10,
  evaluationPeriods: 3,
  datapointsToAlarm: 2,
  treatMissingData: 'missing',
  ...overrides,
});

const stateOf = (alarm: AlarmRule, range: (number | undefined)[], current: 'OK' | 'ALARM' | 'INSUFFICIENT_DATA' = 'OK') => evaluateAlarm(alarm, range, current).state;

describe("a period's datapoint", () => {
  test("is the alarm's statistic of the values the period received", () => {
    const values = [4, 1, 7];
    expect([datapointOf('Maximum', values), datapointOf('Minimum', values), datapointOf('Sum', values), datapointOf('Average', values), datapointOf('SampleCount', values)]).toEqual([7, 1, 12, 4, 3]);
  });

  test('is missing when the period received no value, whatever the statistic', () => {
    expect([datapointOf('Sum', []), datapointOf('SampleCount', [])]).toEqual([undefined, undefined]);
  });
});

test('a datapoint breaches when its comparison with the threshold holds; one equal to it only for the or-equal comparisons', () => {
  const breaches = (comparison: AlarmRule['comparison'], value: number) => stateOf(rule({ comparison, evaluationPeriods: 1, datapointsToAlarm: 1 }), [value]);
  expect([breaches('GreaterThanThreshold', 11), breaches('GreaterThanThreshold', 10), breaches('GreaterThanOrEqualToThreshold', 10)]).toEqual(['ALARM', 'OK', 'ALARM']);
  expect([breaches('LessThanThreshold', 9), breaches('LessThanThreshold', 10), breaches('LessThanOrEqualToThreshold', 10)]).toEqual(['ALARM', 'OK', 'ALARM']);
});

describe('M of N, with N real datapoints in the range', () => {
  test('M breaching datapoints among the last N put the alarm in ALARM, in a row or not', () => {
    expect(stateOf(rule(), [_, _, X, O, X])).toBe('ALARM');
  });

  test('fewer than M breaching among the last N is OK', () => {
    expect(stateOf(rule(), [_, _, O, O, X], 'ALARM')).toBe('OK');
  });

  test('only the most recent N count: breaching datapoints older than those in the range do not', () => {
    expect(stateOf(rule(), [X, X, O, O, O], 'ALARM')).toBe('OK');
  });

  test('missing periods between them are skipped and their treatment plays no part', () => {
    expect(stateOf(rule({ treatMissingData: 'breaching' }), [O, _, O, _, X])).toBe('OK');
    expect(stateOf(rule({ treatMissingData: 'notBreaching' }), [X, _, X, _, O])).toBe('ALARM');
  });

  test('the reason counts the breaching datapoints and names the threshold', () => {
    expect(evaluateAlarm(rule(), [_, _, X, O, X], 'OK').reason).toBe('2 of the last 3 datapoints greater than the threshold (10)');
  });
});

describe('missing data, with fewer than N real datapoints in the range', () => {
  /** One breaching datapoint of the three needed: filled as breaching the alarm is in ALARM, filled as not it is OK. */
  const oneBreaching = [_, _, _, X, _];

  test('breaching counts the missing periods as breaching datapoints', () => {
    expect(stateOf(rule({ treatMissingData: 'breaching' }), oneBreaching)).toBe('ALARM');
  });

  test('notBreaching counts them as datapoints within the threshold', () => {
    expect(stateOf(rule({ treatMissingData: 'notBreaching' }), oneBreaching, 'ALARM')).toBe('OK');
  });

  test('ignore keeps the state the alarm is in', () => {
    expect(stateOf(rule({ treatMissingData: 'ignore' }), oneBreaching, 'OK')).toBe('OK');
    expect(stateOf(rule({ treatMissingData: 'ignore' }), oneBreaching, 'ALARM')).toBe('ALARM');
  });

  test('ignore keeps a new alarm INSUFFICIENT_DATA while no datapoint has come', () => {
    expect(stateOf(rule({ treatMissingData: 'ignore' }), [_, _, _, _, _], 'INSUFFICIENT_DATA')).toBe('INSUFFICIENT_DATA');
  });

  test('missing decides on the real datapoints alone: all of them breaching, when fewer than M, is ALARM', () => {
    expect(stateOf(rule({ treatMissingData: 'missing' }), oneBreaching)).toBe('ALARM');
    expect(stateOf(rule({ treatMissingData: 'missing' }), [_, _, _, O, _], 'ALARM')).toBe('OK');
  });

  test('missing with no datapoint in the whole range is INSUFFICIENT_DATA', () => {
    expect(evaluateAlarm(rule({ treatMissingData: 'missing' }), [_, _, _, _, _], 'OK')).toEqual({ state: 'INSUFFICIENT_DATA', reason: 'no datapoint in the last 5 periods' });
  });

  test('no datapoint at all is ALARM when missing ones breach and OK when they do not', () => {
    expect(stateOf(rule({ treatMissingData: 'breaching' }), [_, _, _, _, _])).toBe('ALARM');
    expect(stateOf(rule({ treatMissingData: 'notBreaching' }), [_, _, _, _, _], 'ALARM')).toBe('OK');
  });

  test('real datapoints from further back in the range count first, and only the rest are filled: 3 of 3 stays OK though the last 3 periods are missing', () => {
    expect(stateOf(rule({ datapointsToAlarm: 3, treatMissingData: 'breaching' }), [O, O, _, _, _], 'ALARM')).toBe('OK');
  });

  test('where filling them either way gives the same state, the treatment plays no part: ignore too leaves ALARM', () => {
    expect(stateOf(rule({ datapointsToAlarm: 3, treatMissingData: 'ignore' }), [_, _, _, _, O], 'ALARM')).toBe('OK');
  });

  test('the reason says how many periods were missing and how they were taken', () => {
    expect(evaluateAlarm(rule({ treatMissingData: 'breaching' }), oneBreaching, 'OK').reason).toBe(
      '1 of the last 1 datapoints greater than the threshold (10); 2 of the last 3 periods without a datapoint, treated as breaching',
    );
  });
});
