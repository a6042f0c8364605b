/**
 * CloudWatch, done locally for the stack's alarms: it reads the functions' EMF lines as CloudWatch Logs extracts
 * metrics from them, takes the datapoints the runtime emulates of the AWS services' own metrics (Lambda's, SQS's),
 * and evaluates every alarm once a minute as CloudWatch does (./alarm-evaluation.ts).
 *
 * Time is its clock's. Periods are counted from its creation, the runtime's start, rather than from the clock's
 * whole minutes, so the poller's report of the minute tick that comes at start falls in the first period. Each
 * alarm starts INSUFFICIENT_DATA, as a new one does, and is evaluated a minute after, then every minute, on the
 * periods ended by then. A datapoint counts at the time it arrives (an EMF line's own Timestamp says when it was
 * written, a moment before). Only the metrics an alarm reads are kept, and only as long as an evaluation reads them.
 */
import type { AlarmStatus } from '../../../lib/domain/alarms.js';
import { ownEntry } from '../../../lib/domain/own.js';
import { metricsOf, type AlarmDefinition, type MetricRef } from '../../alarm-definitions.js';
import { datapointOf, evaluateAlarm, evaluationRangePeriods } from './alarm-evaluation.js';

/** CloudWatch evaluates each alarm once a minute. */
export const EVALUATION_INTERVAL_MS = 60_000;

export interface LocalCloudWatch {
  /** The metrics of one EMF line, as CloudWatch Logs extracts them from a function's log. */
  putEmf(line: string): void;
  /** A datapoint of a metric an AWS service publishes itself. */
  put(metric: MetricRef, value: number): void;
  /** Every alarm's state now: each minute since the last evaluation is evaluated first, in turn. */
  alarmStates(): AlarmStatus[];
}

export interface LocalCloudWatchOptions {
  alarms: readonly AlarmDefinition[];
  nowMs: () => number;
  /** Hears each change of an alarm's state, as the alarm's actions would. */
  onStateChange?: (status: AlarmStatus) => void;
}

interface Datapoint {
  atMs: number;
  value: number;
}

/** One key per metric: namespace, name and dimensions, whatever order the dimensions come in. */
export function metricKey(metric: MetricRef): string {
  const dimensions = Object.entries(metric.dimensions).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return JSON.stringify([metric.namespace, metric.name, dimensions]);
}

export function createLocalCloudWatch(options: LocalCloudWatchOptions): LocalCloudWatch {
  const { alarms, nowMs } = options;
  const originMs = nowMs();
  const series = new Map(alarms.flatMap(metricsOf).map((metric) => [metricKey(metric), [] as Datapoint[]]));
  const created = (alarm: AlarmDefinition): AlarmStatus => ({ name: alarm.id, state: 'INSUFFICIENT_DATA', reason: 'not evaluated yet', changedAtMs: originMs });
  const statuses = new Map(alarms.map((alarm) => [alarm.id, created(alarm)]));
  const keptMs = Math.max(0, ...alarms.map((alarm) => evaluationRangePeriods(alarm.evaluationPeriods) * alarm.periodS * 1000));
  let evaluatedAtMs = originMs;

  const put = (metric: MetricRef, value: number): void => void series.get(metricKey(metric))?.push({ atMs: nowMs(), value });

  /** The alarm's datapoint of period `index` (0: the first after the origin). */
  function datapoint(alarm: AlarmDefinition, index: number): number | undefined {
    const startMs = originMs + index * alarm.periodS * 1000;
    const endMs = startMs + alarm.periodS * 1000;
    const of = (metric: MetricRef, statistic = alarm.statistic): number | undefined => {
      const values = (series.get(metricKey(metric)) ?? []).filter(({ atMs }) => atMs >= startMs && atMs < endMs).map(({ value }) => value);
      return datapointOf(statistic, values);
    };
    if (!('terms' in alarm.metric)) return of(alarm.metric);
    const terms = Object.values(alarm.metric.terms).map((term) => ({ term, value: of(term.metric, term.statistic) }));
    // A period none of them has a value in stays missing; FILL(m, 0) fills each one's gaps.
    if (terms.every(({ value }) => value === undefined)) return undefined;
    return terms.reduce((sum, { term, value = 0 }) => sum + (term.above === undefined ? value : value > term.above ? 1 : 0), 0);
  }

  function evaluate(atMs: number): void {
    for (const alarm of alarms) {
      const lastEnded = Math.floor((atMs - originMs) / (alarm.periodS * 1000)) - 1;
      const periods = evaluationRangePeriods(alarm.evaluationPeriods);
      const range = Array.from({ length: periods }, (_, at) => datapoint(alarm, lastEnded - periods + 1 + at));
      const status = statuses.get(alarm.id)!;
      const { state, reason } = evaluateAlarm(alarm, range, status.state);
      if (state === status.state) continue;
      Object.assign(status, { state, reason, changedAtMs: atMs });
      options.onStateChange?.({ ...status });
    }
  }

  return {
    putEmf: (line) => {
      for (const { metric, values } of emfMetrics(line)) for (const value of values) put(metric, value);
    },
    put,
    alarmStates: () => {
      for (const atMs = nowMs(); evaluatedAtMs + EVALUATION_INTERVAL_MS <= atMs; ) {
        evaluatedAtMs += EVALUATION_INTERVAL_MS;
        evaluate(evaluatedAtMs);
      }
      for (const [key, datapoints] of series) series.set(key, datapoints.filter(({ atMs }) => atMs >= evaluatedAtMs - keptMs));
      return [...statuses.values()].map((status) => ({ ...status }));
    },
  };
}

/** The metrics of an EMF line: each metric of each directive, once per dimension set, with its values. */
export function emfMetrics(line: string): { metric: MetricRef; values: number[] }[] {
  const record: unknown = JSON.parse(line);
  const fields = isObject(record) ? record : {};
  const directives = isObject(fields._aws) ? fields._aws.CloudWatchMetrics : undefined;
  if (!Array.isArray(directives)) throw new Error(`not an EMF line (no _aws.CloudWatchMetrics): ${line.slice(0, 200)}`);
  return directives.flatMap((directive: unknown) => {
    if (!isDirective(directive)) throw new Error(`not an EMF metric directive: ${JSON.stringify(directive)}`);
    // A directive without dimension sets publishes its metrics without dimensions.
    const dimensionSets = directive.Dimensions.length > 0 ? directive.Dimensions : [[]];
    return dimensionSets.flatMap((names) => {
      const dimensions = Object.fromEntries(names.map((name) => [name, dimensionValue(fields, name)]));
      return directive.Metrics.map(({ Name }) => {
        const value = ownEntry(fields, Name);
        const values = (Array.isArray(value) ? value : [value]).filter((entry): entry is number => typeof entry === 'number');
        return { metric: { namespace: directive.Namespace, name: Name, dimensions }, values };
      });
    });
  });
}

function dimensionValue(fields: Readonly<Record<string, unknown>>, name: string): string {
  const value = ownEntry(fields, name);
  if (typeof value !== 'string') throw new Error(`EMF dimension ${name} has no string value in its line: ${JSON.stringify(value)}`);
  return value;
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

interface EmfDirective {
  Namespace: string;
  Dimensions: string[][];
  Metrics: { Name: string }[];
}

function isDirective(value: unknown): value is EmfDirective {
  if (!isObject(value)) return false;
  const { Namespace, Dimensions, Metrics } = value;
  return (
    typeof Namespace === 'string' &&
    Array.isArray(Dimensions) &&
    Dimensions.every((set) => Array.isArray(set) && set.every((name) => typeof name === 'string')) &&
    Array.isArray(Metrics) &&
    Metrics.every((metric) => isObject(metric) && typeof metric.Name === 'string')
  );
}
