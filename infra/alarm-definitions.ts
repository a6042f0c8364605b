/**
 * The queue's alarms as data: the stack creates them in CloudWatch from these (./alarms.ts) and the local runtime
 * evaluates the same ones on the metrics its functions emit (./local/aws/cloudwatch.ts), so what `npm start` shows
 * is what a deploy would alarm on. Three alarms, one per concern: a due job waiting too long (or a poller
 * silent); worker batches that failed, were throttled or waited in Lambda's async queue; DynamoDB throttling.
 *
 * CloudWatch bills an alarm per metric it reads, a metric-math alarm for each metric of its expression, so
 * combining alarms saves nothing by itself; what the alarms cost is the metrics they read, 8. The worker's
 * dead-letter queue depth and its DestinationDeliveryFailures are not among them: with Lambda's retries off, every
 * batch that lands in the queue, or that Lambda fails to put there, is an invocation that failed (Errors) or an
 * event that expired after waiting past its claims (AsyncEventAge, Throttles), which the worker alarm reads.
 */
import { TABLE_SCHEMA } from '../lib/store/table.js';
import type { StackSettings } from './settings.js';

/** A CloudWatch metric: its namespace, its name and exactly these dimensions. */
export interface MetricRef {
  namespace: string;
  name: string;
  dimensions: Readonly<Record<string, string>>;
}

/** CloudWatch's statistics of a period's datapoints. */
export type AlarmStatistic = 'Maximum' | 'Minimum' | 'Sum' | 'Average' | 'SampleCount';

/** CloudWatch's comparisons of a period's statistic with a static threshold: true is breaching. */
export type AlarmComparison = 'GreaterThanThreshold' | 'GreaterThanOrEqualToThreshold' | 'LessThanThreshold' | 'LessThanOrEqualToThreshold';

/** What a period without a datapoint counts as (CloudWatch's TreatMissingData). */
export type TreatMissingData = 'breaching' | 'notBreaching' | 'ignore' | 'missing';

/**
 * One metric of a metric-math expression: its statistic of the period, a missing value taken as 0 (`FILL(m, 0)`);
 * with `above`, 1 when that is over `above` and 0 otherwise (`IF(FILL(m, 0) > above, 1, 0)`).
 */
export interface MathTerm {
  metric: MetricRef;
  /** @default the alarm's statistic */
  statistic?: AlarmStatistic;
  above?: number;
}

/** Several metrics' terms added up, CloudWatch's `FILL(a, 0) + IF(FILL(b, 0) > 5, 1, 0) + ...`; a period none of them has a value in is missing. */
export interface MetricMath {
  terms: Readonly<Record<string, MathTerm>>;
  label: string;
}

export interface AlarmDefinition {
  /** Its construct id in the stack; the name the local runtime and the dashboard show it by. */
  id: string;
  description: string;
  metric: MetricRef | MetricMath;
  statistic: AlarmStatistic;
  periodS: number;
  comparison: AlarmComparison;
  threshold: number;
  /** N of "M of N": the most recent periods evaluated. */
  evaluationPeriods: number;
  /** M of "M of N": breaching periods among them that put the alarm in ALARM. */
  datapointsToAlarm: number;
  treatMissingData: TreatMissingData;
}

/** Where the alarms' metrics are: the deployed resources' names (tokens at synth), or the local runtime's own. */
export interface AlarmedResources {
  /** The functions' EMF namespace (the stack's name unless the construct is given one). */
  metricsNamespace: string;
  workerFunctionName: string;
  tableName: string;
}

/** The metrics the alarms read, by what they tell; the local runtime emulates the AWS services' ones it can. */
export function alarmedMetrics(resources: AlarmedResources) {
  const worker = (name: string): MetricRef => ({ namespace: 'AWS/Lambda', name, dimensions: { FunctionName: resources.workerFunctionName } });
  const table = { TableName: resources.tableName };
  const dueIndex = { ...table, GlobalSecondaryIndexName: TABLE_SCHEMA.dueIndex.name };
  const dynamoDb = (name: string, dimensions: Record<string, string>): MetricRef => ({ namespace: 'AWS/DynamoDB', name, dimensions });
  return {
    // The poller's own EMF metric, dimension `service` = its POWERTOOLS_SERVICE_NAME (functions/poller/app.ts).
    oldestDueLag: { namespace: resources.metricsNamespace, name: 'OldestDueLagMs', dimensions: { service: 'poller' } },
    workerErrors: worker('Errors'),
    workerThrottles: worker('Throttles'),
    workerAsyncEventAge: worker('AsyncEventAge'),
    dynamoDbThrottles: {
      tableReads: dynamoDb('ReadThrottleEvents', table),
      tableWrites: dynamoDb('WriteThrottleEvents', table),
      indexReads: dynamoDb('ReadThrottleEvents', dueIndex),
      indexWrites: dynamoDb('WriteThrottleEvents', dueIndex),
    },
  } as const satisfies Record<string, MetricRef | Record<string, MetricRef>>;
}

/** The settings the alarms' thresholds and descriptions come from. */
export type AlarmSettings = Pick<StackSettings, 'dueLagAlarmMs' | 'workerEventAgeAlarmMs' | 'reservedConcurrency' | 'workerReservedConcurrency'>;

/** The terms of a sum of metrics, each its own. */
const termsOf = (metrics: Readonly<Record<string, MetricRef>>): Record<string, MathTerm> =>
  Object.fromEntries(Object.entries(metrics).map(([id, metric]) => [id, { metric }]));

/** The metrics an alarm reads: its one, or each of its expression's. */
export function metricsOf(alarm: Pick<AlarmDefinition, 'metric'>): MetricRef[] {
  return 'terms' in alarm.metric ? Object.values(alarm.metric.terms).map((term) => term.metric) : [alarm.metric];
}

export function queueAlarmDefinitions(settings: AlarmSettings, resources: AlarmedResources): AlarmDefinition[] {
  const metrics = alarmedMetrics(resources);
  return [
    {
      id: 'DueLagAlarm',
      description: `The oldest due job waited longer than ${settings.dueLagAlarmMs} ms to be claimed, or the poller stopped reporting`,
      metric: metrics.oldestDueLag,
      statistic: 'Maximum',
      periodS: 60,
      comparison: 'GreaterThanThreshold',
      threshold: settings.dueLagAlarmMs,
      // Two minutes in a row. With a minute not yet reported counting as a breach, 2 of 3 put a queue in ALARM at
      // its start, its first report evaluated with two missing minutes before it; 2 of 2 is OK from that report on.
      evaluationPeriods: 2,
      datapointsToAlarm: 2,
      // Every poller run reports its lag every METRICS_REPORT_INTERVAL_MS, and a tick that sleeps reports 0: a
      // minute without it is a poller that stopped, or runs stuck or killed before they report, and its due jobs
      // wait all the same. This treatment of missing minutes is why the lag has an alarm of its own.
      treatMissingData: 'breaching',
    },
    {
      id: 'WorkerAlarm',
      description:
        `Worker batches failed (a crash or the Lambda timeout: the batch is in the dead-letter queue, its jobs come back through the sweeper), ` +
        `Lambda throttled them (its reserved concurrency, WORKER_RESERVED_CONCURRENCY ${settings.reservedConcurrency ? settings.workerReservedConcurrency : 'none'}, or the account's is used up), ` +
        `or one waited over ${settings.workerEventAgeAlarmMs} ms in Lambda's async queue (its jobs start late, or lose their claims and wait for the sweeper)`,
      metric: {
        terms: {
          errors: { metric: metrics.workerErrors },
          throttles: { metric: metrics.workerThrottles },
          late: { metric: metrics.workerAsyncEventAge, statistic: 'Maximum', above: settings.workerEventAgeAlarmMs },
        },
        label: 'Worker errors, throttles and batches that waited too long',
      },
      statistic: 'Sum',
      periodS: 60,
      comparison: 'GreaterThanThreshold',
      threshold: 0,
      // Any of them in the last five minutes: each is rare, and a failed batch is gone from the metrics once its minute passed.
      evaluationPeriods: 5,
      datapointsToAlarm: 1,
      treatMissingData: 'notBreaching',
    },
    {
      id: 'DynamoDbThrottlesAlarm',
      description: 'DynamoDB throttled reads or writes on the table or its due index',
      // The table's throttle events leave out its index's, which have metrics of their own.
      metric: { terms: termsOf(metrics.dynamoDbThrottles), label: 'DynamoDB throttle events' },
      statistic: 'Sum',
      periodS: 60,
      comparison: 'GreaterThanThreshold',
      threshold: 0,
      evaluationPeriods: 5,
      datapointsToAlarm: 2,
      treatMissingData: 'notBreaching',
    },
  ];
}
