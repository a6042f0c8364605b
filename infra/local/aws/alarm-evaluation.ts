/**
 * How CloudWatch decides a metric alarm's state from its datapoints, done locally
 * (https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/alarms-and-missing-data.html):
 *
 * - A period's datapoint is the alarm's statistic of the values the period received; a period without any is
 *   missing. A datapoint breaches when its comparison with the threshold holds.
 * - CloudWatch reads more periods than Evaluation Periods (N), its evaluation range. The documentation's example
 *   shows 5 for N = 3 and gives no rule; the local runtime reads N + 2 for every alarm.
 * - With at least N real datapoints in the range, the most recent N decide, missing periods between them skipped:
 *   ALARM when at least Datapoints to Alarm (M) of them breach, OK otherwise, whatever the treatment of missing data.
 * - With fewer, as few missing ones as make up N are filled as the treatment says: `breaching` and
 *   `notBreaching` count them so; `ignore` keeps the alarm's state; `missing` decides on the real datapoints
 *   alone (M of them breaching, or all when fewer than M), and with none at all the alarm is INSUFFICIENT_DATA.
 *   Where filling them either way gives the same state, the treatment plays no part.
 */
import type { AlarmState } from '../../../lib/domain/alarms.js';
import type { AlarmComparison, AlarmDefinition, AlarmStatistic } from '../../alarm-definitions.js';

/** Periods read beyond N: the documentation's example reads 5 for N = 3. */
const EXTRA_RANGE_PERIODS = 2;

/** How many periods CloudWatch reads to evaluate an alarm of `evaluationPeriods`. */
export function evaluationRangePeriods(evaluationPeriods: number): number {
  return evaluationPeriods + EXTRA_RANGE_PERIODS;
}

const STATISTICS: Readonly<Record<AlarmStatistic, (values: readonly number[]) => number>> = {
  Maximum: (values) => values.reduce((max, value) => Math.max(max, value), -Infinity),
  Minimum: (values) => values.reduce((min, value) => Math.min(min, value), Infinity),
  Sum: (values) => values.reduce((sum, value) => sum + value, 0),
  Average: (values) => values.reduce((sum, value) => sum + value, 0) / values.length,
  SampleCount: (values) => values.length,
};

/** A period's datapoint: `statistic` of the values it received, undefined (missing) when it received none. */
export function datapointOf(statistic: AlarmStatistic, values: readonly number[]): number | undefined {
  return values.length === 0 ? undefined : STATISTICS[statistic](values);
}

const COMPARISONS: Readonly<Record<AlarmComparison, { breaches: (value: number, threshold: number) => boolean; reads: string }>> = {
  GreaterThanThreshold: { breaches: (value, threshold) => value > threshold, reads: 'greater than' },
  GreaterThanOrEqualToThreshold: { breaches: (value, threshold) => value >= threshold, reads: 'greater than or equal to' },
  LessThanThreshold: { breaches: (value, threshold) => value < threshold, reads: 'less than' },
  LessThanOrEqualToThreshold: { breaches: (value, threshold) => value <= threshold, reads: 'less than or equal to' },
};

export type AlarmRule = Pick<AlarmDefinition, 'comparison' | 'threshold' | 'evaluationPeriods' | 'datapointsToAlarm' | 'treatMissingData'>;

export interface Evaluation {
  state: AlarmState;
  reason: string;
}

/**
 * The state `range` puts an alarm of `rule` in: `range` is its evaluation range's datapoints, oldest first,
 * undefined where missing; `current` is the alarm's state before, which `ignore` may keep.
 */
export function evaluateAlarm(rule: AlarmRule, range: readonly (number | undefined)[], current: AlarmState): Evaluation {
  const { evaluationPeriods, datapointsToAlarm, threshold } = rule;
  const comparison = COMPARISONS[rule.comparison];
  const recent = range.filter((value): value is number => value !== undefined).slice(-evaluationPeriods);
  const breaching = recent.filter((value) => comparison.breaches(value, threshold)).length;
  const counted = `${breaching} of the last ${recent.length} datapoints ${comparison.reads} the threshold (${threshold})`;
  const verdict = (alarm: boolean, reason: string): Evaluation => ({ state: alarm ? 'ALARM' : 'OK', reason });
  if (recent.length === evaluationPeriods) return verdict(breaching >= datapointsToAlarm, counted);
  const filled = evaluationPeriods - recent.length;
  const alarmIfFilledBreaching = breaching + filled >= datapointsToAlarm;
  const alarmIfFilledNot = breaching >= datapointsToAlarm;
  const missing = `${filled} of the last ${evaluationPeriods} periods without a datapoint`;
  if (alarmIfFilledBreaching === alarmIfFilledNot) return verdict(alarmIfFilledNot, `${counted}; ${missing}, which could not change it`);
  switch (rule.treatMissingData) {
    case 'breaching':
      return verdict(true, `${counted}; ${missing}, treated as breaching`);
    case 'notBreaching':
      return verdict(false, `${counted}; ${missing}, treated as not breaching`);
    case 'ignore':
      return { state: current, reason: `${missing}: the state is kept` };
    case 'missing':
      if (recent.length === 0) return { state: 'INSUFFICIENT_DATA', reason: `no datapoint in the last ${range.length} periods` };
      return verdict(breaching >= Math.min(datapointsToAlarm, recent.length), `${counted}; ${missing}, left out`);
  }
}
