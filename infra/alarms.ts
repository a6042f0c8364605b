/**
 * The queue's alarms: a due job waiting too long (or a poller silent), failed worker invocations, dead letters,
 * DynamoDB throttling, and worker batches Lambda throttled, held back or could not hand to the dead-letter queue.
 */
import { Duration } from 'aws-cdk-lib';
import { Alarm, ComparisonOperator, MathExpression, Metric, TreatMissingData, type IAlarm } from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import type { Table } from 'aws-cdk-lib/aws-dynamodb';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { Topic } from 'aws-cdk-lib/aws-sns';
import type { Queue } from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import { TABLE_SCHEMA } from '../lib/store/table.js';
import type { StackSettings } from './settings.js';

export interface QueueAlarmsProps {
  settings: StackSettings;
  table: Table;
  worker: IFunction;
  deadLetterQueue: Queue;
  /** Where the functions' EMF metrics are (the poller's OldestDueLagMs). */
  metricsNamespace: string;
}

/** The alarms, created in `scope` (the stack, so their logical ids stay its own), each notifying the alarm topic when there is one. */
export function createQueueAlarms(scope: Construct, props: QueueAlarmsProps): IAlarm[] {
  const { settings } = props;
  const alarms = [dueLagAlarm(scope, props), workerErrorsAlarm(scope, props.worker), deadLettersAlarm(scope, props.deadLetterQueue), throttlesAlarm(scope, props.table)];
  alarms.push(...workerDeliveryAlarms(scope, props));
  if (settings.alarmTopicArn) {
    const action = new SnsAction(Topic.fromTopicArn(scope, 'AlarmTopic', settings.alarmTopicArn));
    for (const alarm of alarms) alarm.addAlarmAction(action);
  }
  return alarms;
}

const oneMinute = Duration.minutes(1);

function dueLagAlarm(scope: Construct, { settings, metricsNamespace }: QueueAlarmsProps): Alarm {
  return new Alarm(scope, 'DueLagAlarm', {
    alarmDescription: `The oldest due job waited longer than ${settings.dueLagAlarmMs} ms to be claimed, or the poller stopped reporting`,
    metric: new Metric({
      namespace: metricsNamespace,
      metricName: 'OldestDueLagMs',
      dimensionsMap: { service: 'poller' },
      statistic: 'Maximum',
      period: oneMinute,
    }),
    threshold: settings.dueLagAlarmMs,
    comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
    evaluationPeriods: 3,
    datapointsToAlarm: 2,
    // Every poller run reports its lag every METRICS_REPORT_INTERVAL_MS, idle or not: a minute without it is a
    // poller that stopped, or runs stuck or killed before they report, and its due jobs wait all the same.
    treatMissingData: TreatMissingData.BREACHING,
  });
}

function workerErrorsAlarm(scope: Construct, worker: IFunction): Alarm {
  return new Alarm(scope, 'WorkerErrorsAlarm', {
    alarmDescription: 'Worker invocations failed (crash or Lambda timeout); their jobs come back through the sweeper',
    metric: worker.metricErrors({ period: Duration.minutes(5), statistic: 'Sum' }),
    threshold: 0,
    comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
    evaluationPeriods: 1,
    treatMissingData: TreatMissingData.NOT_BREACHING,
  });
}

function deadLettersAlarm(scope: Construct, deadLetterQueue: Queue): Alarm {
  return new Alarm(scope, 'DeadLettersAlarm', {
    alarmDescription: 'Worker batches landed in the dead-letter queue',
    metric: deadLetterQueue.metricApproximateNumberOfMessagesVisible({ period: oneMinute, statistic: 'Maximum' }),
    threshold: 0,
    comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
    evaluationPeriods: 1,
    treatMissingData: TreatMissingData.NOT_BREACHING,
  });
}

function throttlesAlarm(scope: Construct, table: Table): Alarm {
  const throttleMetric = (metricName: string, dimensionsMap: Record<string, string>): Metric =>
    new Metric({ namespace: 'AWS/DynamoDB', metricName, dimensionsMap, statistic: 'Sum', period: oneMinute });
  const tableDimensions = { TableName: table.tableName };
  const indexDimensions = { ...tableDimensions, GlobalSecondaryIndexName: TABLE_SCHEMA.dueIndex.name };
  return new Alarm(scope, 'DynamoDbThrottlesAlarm', {
    alarmDescription: 'DynamoDB throttled reads or writes on the table or its due index',
    metric: new MathExpression({
      expression: 'FILL(tableReads, 0) + FILL(tableWrites, 0) + FILL(indexReads, 0) + FILL(indexWrites, 0)',
      usingMetrics: {
        tableReads: throttleMetric('ReadThrottleEvents', tableDimensions),
        tableWrites: throttleMetric('WriteThrottleEvents', tableDimensions),
        indexReads: throttleMetric('ReadThrottleEvents', indexDimensions),
        indexWrites: throttleMetric('WriteThrottleEvents', indexDimensions),
      },
      period: oneMinute,
      label: 'DynamoDB throttle events',
    }),
    threshold: 0,
    comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
    evaluationPeriods: 5,
    datapointsToAlarm: 2,
    treatMissingData: TreatMissingData.NOT_BREACHING,
  });
}

// Worker delivery: what Lambda's async queue does to worker batches. A batch that waits past its claims costs its
// jobs no attempt (the sweeper hands back claims never started), but they run that much later; and a batch Lambda
// cannot put into the dead-letter queue is gone without a trace.

function workerDeliveryAlarms(scope: Construct, { settings, worker }: QueueAlarmsProps): Alarm[] {
  const workerMetric = (metricName: string, statistic: string): Metric =>
    new Metric({ namespace: 'AWS/Lambda', metricName, dimensionsMap: { FunctionName: worker.functionName }, statistic, period: oneMinute });
  const anyInFiveMinutes = { threshold: 0, comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD, evaluationPeriods: 5, datapointsToAlarm: 1 };
  return [
    new Alarm(scope, 'WorkerThrottlesAlarm', {
      alarmDescription: `Lambda throttled worker invocations: its reserved concurrency (WORKER_RESERVED_CONCURRENCY, ${settings.reservedConcurrency ? settings.workerReservedConcurrency : 'none'}) or the account's is used up, and batches wait in the async queue`,
      metric: workerMetric('Throttles', 'Sum'),
      ...anyInFiveMinutes,
      treatMissingData: TreatMissingData.NOT_BREACHING,
    }),
    new Alarm(scope, 'WorkerEventAgeAlarm', {
      alarmDescription: `A worker batch waited over ${settings.workerEventAgeAlarmMs} ms in Lambda's async queue before it ran: its jobs start late, or lose their claims and wait for the sweeper`,
      metric: workerMetric('AsyncEventAge', 'Maximum'),
      threshold: settings.workerEventAgeAlarmMs,
      comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: 3,
      datapointsToAlarm: 2,
      treatMissingData: TreatMissingData.NOT_BREACHING,
    }),
    new Alarm(scope, 'WorkerDestinationFailuresAlarm', {
      alarmDescription: 'Lambda could not put a failed or expired worker batch into the dead-letter queue: the batch is gone (its jobs still come back through the sweeper)',
      metric: workerMetric('DestinationDeliveryFailures', 'Sum'),
      ...anyInFiveMinutes,
      treatMissingData: TreatMissingData.NOT_BREACHING,
    }),
  ];
}
