/**
 * The stack's alarms, done locally: the definitions the stack deploys (infra/alarm-definitions.ts), with the
 * thresholds the deployer's context gives them, evaluated on a CloudWatch of the runtime's own (./cloudwatch.ts)
 * from what the deployed system would publish. That is the functions' EMF metrics, and those of the AWS services'
 * metrics whose cause the runtime emulates: Lambda's Errors, Throttles and AsyncEventAge of the worker. Nothing
 * publishes DynamoDB's throttle events (DynamoDB Local does not throttle), so locally that alarm stays OK.
 */
import { log } from '../../../functions/shared/log.js';
import { createEmfMetrics, type QueueMetrics } from '../../../functions/shared/metrics.js';
import type { AlarmStatus } from '../../../lib/domain/alarms.js';
import { alarmedMetrics, queueAlarmDefinitions, type AlarmedResources, type AlarmSettings } from '../../alarm-definitions.js';
import { DEFAULT_STACK_NAME } from '../../queue-app.js';
import { createLocalCloudWatch, EVALUATION_INTERVAL_MS } from './cloudwatch.js';
import type { QueueFunctionName } from './iam/stack-policies.js';
import { outsideInvocation } from './lambda-timeout.js';
import type { AsyncInvokeMetrics } from './limits.js';

export interface LocalMonitoring {
  /** Function `fn`'s EMF metrics as the stack configures them (namespace, `service`), read by this CloudWatch. */
  metricsFor(fn: QueueFunctionName): QueueMetrics;
  /** Lambda's metrics of the worker's async invokes. */
  workerInvokes: AsyncInvokeMetrics;
  /** Every alarm's state now. */
  alarmStates(): AlarmStatus[];
  /** A minute passed: the alarms are evaluated, as CloudWatch does every minute. */
  minute(): void;
}

export interface LocalMonitoringOptions {
  /** The stack's settings, as `cdk deploy` would read them (infra/cdk-context.ts). */
  stack: AlarmSettings;
  tableName: string;
  nowMs: () => number;
  onStateChange?: (status: AlarmStatus) => void;
  /** Hears each EMF line function `fn` writes, which deployed goes to its log. */
  onEmfLine?: (fn: QueueFunctionName, line: string) => void;
}

/** The local runtime's names for what the alarms watch: the namespace the stack would use, and names of its own. */
export function localAlarmedResources(tableName: string): AlarmedResources {
  return { metricsNamespace: DEFAULT_STACK_NAME, workerFunctionName: 'worker', tableName };
}

export function createLocalMonitoring(options: LocalMonitoringOptions): LocalMonitoring {
  const resources = localAlarmedResources(options.tableName);
  const metrics = alarmedMetrics(resources);
  const cloudWatch = createLocalCloudWatch({
    alarms: queueAlarmDefinitions(options.stack, resources),
    nowMs: options.nowMs,
    ...(options.onStateChange ? { onStateChange: options.onStateChange } : {}),
  });
  return {
    metricsFor: (fn) =>
      createEmfMetrics({ POWERTOOLS_METRICS_NAMESPACE: resources.metricsNamespace, POWERTOOLS_SERVICE_NAME: fn }, (line) => {
        options.onEmfLine?.(fn, line);
        cloudWatch.putEmf(line);
      }),
    workerInvokes: {
      throttled: () => cloudWatch.put(metrics.workerThrottles, 1),
      delivered: (ageMs) => cloudWatch.put(metrics.workerAsyncEventAge, ageMs),
      failed: () => cloudWatch.put(metrics.workerErrors, 1),
    },
    alarmStates: cloudWatch.alarmStates,
    minute: () => void cloudWatch.alarmStates(),
  };
}

/** The runtime's: on the real clock, each change of state logged as it comes, until `signal` aborts. */
export function startLocalMonitoring(options: Pick<LocalMonitoringOptions, 'stack' | 'tableName' | 'onEmfLine'>, signal: AbortSignal): LocalMonitoring {
  const monitoring = createLocalMonitoring({ ...options, nowMs: Date.now, onStateChange: logStateChange });
  // Never what keeps the process alive: a runtime that failed to start has no one to abort it.
  const timer = setInterval(monitoring.minute, EVALUATION_INTERVAL_MS).unref();
  signal.addEventListener('abort', () => clearInterval(timer), { once: true });
  return monitoring;
}

/**
 * Where the stack's alarm actions would notify ALARM_TOPIC_ARN, `npm start` says it in its log: its own line, not
 * that of the api invocation whose stats request evaluated the alarms.
 */
function logStateChange({ name, state, reason }: AlarmStatus): void {
  outsideInvocation(() => log(state === 'ALARM' ? 'warn' : 'info', `alarm ${name} is ${state}`, { reason }));
}
