/**
 * The queue's alarms as data: the stack creates them in CloudWatch from these (./alarms.ts) and the local runtime
 * evaluates the same ones on the metrics its functions emit (./local/aws/cloudwatch.ts), so what `npm start` shows
 * is what a deploy would alarm on. A due job waiting too long (or a poller silent), failed worker invocations,
 * dead letters, DynamoDB throttling, and worker batches Lambda throttled, held back or could not hand to the
 * dead-letter queue.
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

/** Several metrics added up, each period's missing value taken as 0: CloudWatch's `FILL(m, 0) + ...`. */
export interface MetricSum {
  sumOf: Readonly<Record<string, MetricRef>>;
  label: string;
}

export interface AlarmDefinition {
  /** Its construct id in the stack; the name the local runtime and the dashboard show it by. */
  id: string;
  description: string;
  metric: MetricRef | MetricSum;
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
  deadLetterQueueName: string;
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
    workerDestinationDeliveryFailures: worker('DestinationDeliveryFailures'),
    deadLettersVisible: { namespace: 'AWS/SQS', name: 'ApproximateNumberOfMessagesVisible', dimensions: { QueueName: resources.deadLetterQueueName } },
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

/** Any occurrence in a period breaches. */
const anyAtAll = { comparison: 'GreaterThanThreshold', threshold: 0 } as const;

export function queueAlarmDefinitions(settings: AlarmSettings, resources: AlarmedResources): AlarmDefinition[] {
  const metrics = alarmedMetrics(resources);
  // A batch that waits past its claims costs its jobs no attempt (the sweeper hands back claims never started),
  // but they run that much later; and a batch Lambda cannot put into the dead-letter queue is gone without a trace.
  const anyInFiveMinutes = { ...anyAtAll, periodS: 60, evaluationPeriods: 5, datapointsToAlarm: 1, treatMissingData: 'notBreaching' } as const;
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
      // minute without it is a poller that stopped, or runs stuck or killed before they report, and its due jobs wait all the same.
      treatMissingData: 'breaching',
    },
    {
      id: 'WorkerErrorsAlarm',
      description: 'Worker invocations failed (crash or Lambda timeout); their jobs come back through the sweeper',
      metric: metrics.workerErrors,
      statistic: 'Sum',
      periodS: 300,
      ...anyAtAll,
      evaluationPeriods: 1,
      datapointsToAlarm: 1,
      treatMissingData: 'notBreaching',
    },
    {
      id: 'DeadLettersAlarm',
      description: 'Worker batches landed in the dead-letter queue',
      metric: metrics.deadLettersVisible,
      statistic: 'Maximum',
      periodS: 60,
      ...anyAtAll,
      evaluationPeriods: 1,
      datapointsToAlarm: 1,
      treatMissingData: 'notBreaching',
    },
    {
      id: 'DynamoDbThrottlesAlarm',
      description: 'DynamoDB throttled reads or writes on the table or its due index',
      metric: { sumOf: metrics.dynamoDbThrottles, label: 'DynamoDB throttle events' },
      statistic: 'Sum',
      periodS: 60,
      ...anyAtAll,
      evaluationPeriods: 5,
      datapointsToAlarm: 2,
      treatMissingData: 'notBreaching',
    },
    {
      id: 'WorkerThrottlesAlarm',
      description: `Lambda throttled worker invocations: its reserved concurrency (WORKER_RESERVED_CONCURRENCY, ${settings.reservedConcurrency ? settings.workerReservedConcurrency : 'none'}) or the account's is used up, and batches wait in the async queue`,
      metric: metrics.workerThrottles,
      statistic: 'Sum',
      ...anyInFiveMinutes,
    },
    {
      id: 'WorkerEventAgeAlarm',
      description: `A worker batch waited over ${settings.workerEventAgeAlarmMs} ms in Lambda's async queue before it ran: its jobs start late, or lose their claims and wait for the sweeper`,
      metric: metrics.workerAsyncEventAge,
      statistic: 'Maximum',
      periodS: 60,
      comparison: 'GreaterThanThreshold',
      threshold: settings.workerEventAgeAlarmMs,
      evaluationPeriods: 3,
      datapointsToAlarm: 2,
      treatMissingData: 'notBreaching',
    },
    {
      id: 'WorkerDestinationFailuresAlarm',
      description: 'Lambda could not put a failed or expired worker batch into the dead-letter queue: the batch is gone (its jobs still come back through the sweeper)',
      metric: metrics.workerDestinationDeliveryFailures,
      statistic: 'Sum',
      ...anyInFiveMinutes,
    },
  ];
}
