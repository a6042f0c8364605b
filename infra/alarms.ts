/**
 * The queue's alarms in CloudWatch, made from their definitions (./alarm-definitions.ts), which the local runtime
 * evaluates too.
 */
import { Duration } from 'aws-cdk-lib';
import { Alarm, ComparisonOperator, MathExpression, Metric, TreatMissingData, type IAlarm, type IMetric } from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import type { Table } from 'aws-cdk-lib/aws-dynamodb';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { Topic } from 'aws-cdk-lib/aws-sns';
import type { Construct } from 'constructs';
import { queueAlarmDefinitions, type AlarmComparison, type AlarmDefinition, type AlarmStatistic, type MetricMath, type MetricRef, type TreatMissingData as MissingData } from './alarm-definitions.js';
import type { StackSettings } from './settings.js';

export interface QueueAlarmsProps {
  settings: StackSettings;
  table: Table;
  worker: IFunction;
  /** Where the functions' EMF metrics are (the poller's OldestDueLagMs). */
  metricsNamespace: string;
}

/** The alarms, created in `scope` (the stack, so their logical ids stay its own), each notifying the alarm topic when there is one. */
export function createQueueAlarms(scope: Construct, props: QueueAlarmsProps): IAlarm[] {
  const { settings } = props;
  const definitions = queueAlarmDefinitions(settings, {
    metricsNamespace: props.metricsNamespace,
    workerFunctionName: props.worker.functionName,
    tableName: props.table.tableName,
  });
  const alarms = definitions.map((definition) => alarmOf(scope, definition));
  if (settings.alarmTopicArn) {
    const action = new SnsAction(Topic.fromTopicArn(scope, 'AlarmTopic', settings.alarmTopicArn));
    for (const alarm of alarms) alarm.addAlarmAction(action);
  }
  return alarms;
}

const COMPARISONS: Readonly<Record<AlarmComparison, ComparisonOperator>> = {
  GreaterThanThreshold: ComparisonOperator.GREATER_THAN_THRESHOLD,
  GreaterThanOrEqualToThreshold: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
  LessThanThreshold: ComparisonOperator.LESS_THAN_THRESHOLD,
  LessThanOrEqualToThreshold: ComparisonOperator.LESS_THAN_OR_EQUAL_TO_THRESHOLD,
};

const MISSING_DATA: Readonly<Record<MissingData, TreatMissingData>> = {
  breaching: TreatMissingData.BREACHING,
  notBreaching: TreatMissingData.NOT_BREACHING,
  ignore: TreatMissingData.IGNORE,
  missing: TreatMissingData.MISSING,
};

function alarmOf(scope: Construct, definition: AlarmDefinition): Alarm {
  return new Alarm(scope, definition.id, {
    alarmDescription: definition.description,
    metric: metricOf(definition),
    threshold: definition.threshold,
    comparisonOperator: COMPARISONS[definition.comparison],
    evaluationPeriods: definition.evaluationPeriods,
    datapointsToAlarm: definition.datapointsToAlarm,
    treatMissingData: MISSING_DATA[definition.treatMissingData],
  });
}

function metricOf({ metric, statistic, periodS }: AlarmDefinition): IMetric {
  const period = Duration.seconds(periodS);
  const cdkMetric = (ref: MetricRef, of: AlarmStatistic): Metric =>
    new Metric({ namespace: ref.namespace, metricName: ref.name, dimensionsMap: { ...ref.dimensions }, statistic: of, period });
  if (!('terms' in metric)) return cdkMetric(metric, statistic);
  return new MathExpression({
    expression: mathExpressionOf(metric),
    usingMetrics: Object.fromEntries(Object.entries(metric.terms).map(([id, term]) => [id, cdkMetric(term.metric, term.statistic ?? statistic)])),
    period,
    label: metric.label,
  });
}

/** CloudWatch's expression of `math`: each term's missing values filled with 0, compared where it says, added up. */
export function mathExpressionOf(math: MetricMath): string {
  return Object.entries(math.terms)
    .map(([id, term]) => (term.above === undefined ? `FILL(${id}, 0)` : `IF(FILL(${id}, 0) > ${term.above}, 1, 0)`))
    .join(' + ');
}
