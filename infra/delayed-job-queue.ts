/**
 * The whole queue as one construct, to add to a CDK app: the table, the HTTP API in front of the api
 * function, the poller and sweeper on every-minute schedules and woken by the waker, which reads the table's
 * stream, the worker the poller invokes asynchronously, the lifecycle event bus, the callback token
 * parameter's grants, alarms and outputs, each function granted only the calls its code makes. It runs the same
 * functions/ code the local runtime runs, with the handler module given bundled into the worker (and into
 * the api and the sweeper, for its names and retry policies).
 *
 * ```ts
 * const app = new App();
 * new DelayedJobQueue(new Stack(app, 'Jobs'), 'Queue', { handlers: './handlers.ts' });
 * ```
 */
import { existsSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { ArnFormat, CfnOutput, Duration, RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import type { HttpApi } from 'aws-cdk-lib/aws-apigatewayv2';
import type { IAlarm } from 'aws-cdk-lib/aws-cloudwatch';
import { AttributeType, BillingMode, ProjectionType, StreamViewType, Table } from 'aws-cdk-lib/aws-dynamodb';
import { EventBus, Rule, RuleTargetInput, Schedule } from 'aws-cdk-lib/aws-events';
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets';
import { SqsDestination } from 'aws-cdk-lib/aws-lambda-destinations';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { ConfigError } from '../lib/domain/errors.js';
import { API_TIMEOUT_S, AUTHORIZER_TIMEOUT_S, WORKER_TIMEOUT_S } from '../lib/domain/limits.js';
import { FAILURE_DESTINATION_MAX_BYTES } from '../lib/queue/poll/worker-batches.js';
import type { QueueSettings } from '../lib/queue/settings.js';
import { TABLE_SCHEMA } from '../lib/store/table.js';
import { createQueueAlarms } from './alarms.js';
import { checkFixedSettings, SETTINGS_RECORD_FILE } from './fixed-settings.js';
import { createQueueHttpApi } from './http-api.js';
import { QueueFunction, type LiteralFunctionName, type QueueFunctionName, type QueueFunctionProps } from './queue-function.js';
import { settingsFromProps, shardsOfPartition, type DelayedJobQueueSettings, type StackSettings } from './settings.js';
import { TABLE_GRANTS } from './table-grants.js';
import { createWakeTimerQueue, startWakerFrom, WAKER_TIMEOUT_S } from './waker.js';

export type { DelayedJobQueueSettings } from './settings.js';

export interface DelayedJobQueueProps {
  /**
   * The handler module, a path absolute or relative to the directory the CDK app runs in (cdk.json's). It
   * exports `handlers`, an object of handler functions by name, and optionally `retryPolicies`; its types
   * come from the package's `handlers` export.
   * @default - the built-in handlers: echo, sleep, fail and await_callback
   */
  handlers?: string;
  /** @default - every setting's own default */
  settings?: DelayedJobQueueSettings;
  /**
   * The CloudWatch namespace of the functions' metrics, which the alarms and the dashboard read.
   * @default - the stack's name
   */
  metricsNamespace?: string;
  /**
   * The file that records the settings the queued jobs depend on (BUCKET_MS, SHARDS) under this construct's
   * path, so that changing them is refused at synth; commit it with the app. A relative path is taken from
   * the directory the CDK app runs in. `false` records and checks nothing (a stack synthesized only in tests).
   * @default 'djq-settings.json'
   */
  settingsRecord?: string | false;
}

/** The handler module's absolute path, refused at synth when there is no such file. */
function handlerModulePath(handlers: string): string {
  const path = isAbsolute(handlers) ? handlers : resolve(handlers);
  if (!existsSync(path)) throw new ConfigError(`DelayedJobQueue handlers: no file ${path} (a relative path is taken from ${process.cwd()})`);
  return path;
}

/** Lambda's async invoke queue keeps a poller event no longer than this: a late poller would only overlap the next. */
const SCHEDULED_EVENT_MAX_AGE = Duration.minutes(1);

/**
 * Each function's Lambda timeout in seconds, as the stack sets it; the local runtime cuts its invocations at the
 * same. Pollers and sweepers loop for POLLER_RUN_MS; their timeout leaves them room to finish the last poll.
 */
export function functionTimeoutsS(queue: Pick<QueueSettings, 'pollerRunMs'>): Record<QueueFunctionName, number> {
  const loopS = Math.ceil((queue.pollerRunMs + 15_000) / 1000);
  return { api: API_TIMEOUT_S, authorizer: AUTHORIZER_TIMEOUT_S, worker: WORKER_TIMEOUT_S, poller: loopS, sweeper: loopS, waker: WAKER_TIMEOUT_S };
}

/**
 * The executions the stack reserves for each function, none unless RESERVED_CONCURRENCY: for the poller, each
 * partition's and its successor's, so a slow minute cannot pile up; 2 for the sweeper; and the worker's setting.
 * The lease on the wake item, not these, keeps one poller working per partition. The local runtime throttles the
 * poller and the sweeper at the same, and only then.
 */
export function reservedConcurrency(
  settings: Pick<StackSettings, 'reservedConcurrency' | 'workerReservedConcurrency'>,
  queue: Pick<QueueSettings, 'pollerPartitions'>,
): Partial<Record<'poller' | 'sweeper' | 'worker', number>> {
  if (!settings.reservedConcurrency) return {};
  return { poller: 2 * queue.pollerPartitions, sweeper: 2, worker: settings.workerReservedConcurrency };
}

/** Each function's configured memory in MB, as the stack sets it; the local runtime's report lines name the same. */
export const FUNCTION_MEMORY_SIZES_MB: Record<QueueFunctionName, number> = { api: 512, authorizer: 256, worker: 1024, poller: 512, sweeper: 256, waker: 256 };

/**
 * The functions that wake a sleeping poller or sweeper are told their names and may invoke them
 * (lib/queue/wake/wake-requests.ts): the waker, and the poller and the sweeper themselves (a handover). No writer
 * is: the waker reads what they write on the table's stream. Both are named by their
 * literal names, never through a reference, which would make the functions depend on each other.
 */
function allowWakes(wakers: QueueFunction[], woken: { poller: QueueFunction; sweeper: QueueFunction }): void {
  const literalName = (fn: QueueFunction): LiteralFunctionName => {
    if (!fn.literalName) throw new Error(`the ${fn.node.id} function is woken by name, so it must be created \`named\``);
    return fn.literalName;
  };
  const poller = literalName(woken.poller);
  const sweeper = literalName(woken.sweeper);
  for (const waker of wakers) {
    waker.function.addEnvironment('POLLER_FUNCTION_NAME', poller.name).addEnvironment('SWEEPER_FUNCTION_NAME', sweeper.name);
    waker.allowInvoke(poller.arn, sweeper.arn);
  }
}

/** What sets one function apart; the construct gives every function the same log retention, metrics namespace and handler module. */
type FunctionSpec = Omit<QueueFunctionProps, 'entry' | 'logRetention' | 'metricsNamespace' | 'handlerModule'>;

type QueueFunctions = Record<QueueFunctionName, QueueFunction>;

export class DelayedJobQueue extends Construct {
  /** The jobs table: jobs, job types, keys, schedules and the `due` index. */
  readonly table: Table;
  /** The bus lifecycle events go to (`job.succeeded`, `job.failed`, ...); add rules to it. */
  readonly eventBus: EventBus;
  /** Where a worker batch whose invocation failed lands (the worker's on-failure destination). */
  readonly deadLetterQueue: Queue;
  /** The waker's timers: delayed messages that come back to it as work falls due. */
  readonly wakeTimerQueue: Queue;
  readonly httpApi: HttpApi;
  /** Base URL of the HTTP API (its `$default` stage). */
  readonly apiUrl: string;
  /** The functions, each with its role and log group, by name. */
  readonly functions: QueueFunctions;
  /**
   * The SecureString parameter of Parameter Store whose value signs the callback tokens http targets receive; the
   * worker creates it on its first use. Rotate by putting a new value.
   */
  readonly callbackTokenParameter: { name: string; arn: string };
  readonly alarms: IAlarm[];
  /** The settings as validated, defaults filled in. */
  readonly settings: StackSettings;

  constructor(scope: Construct, id: string, props: DelayedJobQueueProps = {}) {
    super(scope, id);
    const settings = (this.settings = settingsFromProps(props.settings ?? {}));
    const handlerModule = props.handlers === undefined ? undefined : handlerModulePath(props.handlers);
    const settingsRecord = props.settingsRecord ?? SETTINGS_RECORD_FILE;
    if (settingsRecord !== false) checkFixedSettings(resolve(settingsRecord), this.node.path, settings.queue);

    this.table = this.createTable(settings);
    this.eventBus = new EventBus(this, 'LifecycleEvents', { description: 'Job lifecycle events of the delayed job queue' });
    this.deadLetterQueue = this.createDeadLetterQueue();
    this.wakeTimerQueue = createWakeTimerQueue(this);
    // Named after the stack unless given, so two deployments in one account (dev and prod, say) keep their metrics apart.
    const metricsNamespace = props.metricsNamespace ?? Stack.of(this).stackName;
    const callbackTokenParameter = (this.callbackTokenParameter = this.callbackTokenParameterOf());
    const functions = this.createFunctions(settings, { metricsNamespace, ...(handlerModule ? { handlerModule } : {}) }, callbackTokenParameter);
    const { httpApi, stage } = createQueueHttpApi(this, settings, functions);
    this.httpApi = httpApi;
    this.apiUrl = stage.url;

    // The API base URL of the callback URLs http targets receive.
    functions.worker.function.addEnvironment('PUBLIC_API_URL', this.httpApi.apiEndpoint);
    this.functions = functions;
    this.alarms = createQueueAlarms(this, {
      settings,
      table: this.table,
      worker: functions.worker.function,
      metricsNamespace,
    });

    new CfnOutput(this, 'ApiUrl', { value: stage.url, description: 'Base URL of the HTTP API' });
    new CfnOutput(this, 'TableName', { value: this.table.tableName });
    new CfnOutput(this, 'EventBusName', { value: this.eventBus.eventBusName });
    new CfnOutput(this, 'DeadLetterQueueUrl', { value: this.deadLetterQueue.queueUrl });
    new CfnOutput(this, 'CallbackTokenParameterName', {
      value: callbackTokenParameter.name,
      description: 'Rotate by putting a new value (see docs/operations/deploying.md#rotating-the-callback-token-secret)',
    });
  }

  private createTable(settings: StackSettings): Table {
    const { partitionKey, sortKey, dueIndex, ttlAttribute } = TABLE_SCHEMA;
    const table = new Table(this, 'Jobs', {
      partitionKey: { name: partitionKey, type: AttributeType.STRING },
      sortKey: { name: sortKey, type: AttributeType.STRING },
      billingMode: BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      timeToLiveAttribute: ttlAttribute,
      stream: StreamViewType[TABLE_SCHEMA.streamViewType],
      deletionProtection: settings.deletionProtection,
      removalPolicy: settings.deletionProtection ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY,
    });
    table.addGlobalSecondaryIndex({
      indexName: dueIndex.name,
      partitionKey: { name: dueIndex.partitionKey, type: AttributeType.STRING },
      sortKey: { name: dueIndex.sortKey, type: AttributeType.STRING },
      projectionType: ProjectionType.INCLUDE,
      nonKeyAttributes: [...dueIndex.projectedAttributes],
    });
    return table;
  }

  private createDeadLetterQueue(): Queue {
    const queue = new Queue(this, 'WorkerDeadLetters', {
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.days(14),
      // Set, not left to SQS's default (256 KiB before it became 1 MiB): a failed batch's record must fit (lib/queue/poll/worker-batches.ts).
      maxMessageSizeBytes: FAILURE_DESTINATION_MAX_BYTES,
    });
    Validations.of(queue).acknowledge({
      id: 'AwsSolutions::AwsSolutions-SQS3',
      reason: "This queue is the worker's on-failure destination, a dead-letter queue itself; a queue behind it would only move the same messages again.",
    });
    return queue;
  }

  /**
   * Where the key that signs the callback tokens http targets receive (worker) and verifies them (authorizer) is
   * kept: a SecureString parameter of Parameter Store's standard tier, free where a Secrets Manager secret is billed
   * by the month. CloudFormation makes no SecureString parameter, and one made by a custom resource would carry its
   * value through the stack's events; so the stack only names it, and the worker creates it with a random value the
   * first time it signs a token (lib/aws/secrets.ts). Deleting the stack leaves it.
   */
  private callbackTokenParameterOf(): { name: string; arn: string } {
    const stack = Stack.of(this);
    const pathInStack = this.node.path.slice(stack.node.path.length + 1).replace(/[^\w.\-/]/g, '-');
    // Under a prefix of its own: Parameter Store refuses a name whose first level starts with "aws" or "ssm", as a stack's may.
    const name = `/delayed-job-queue/${stack.stackName}/${pathInStack}/callback-token-secret`;
    const arn = stack.formatArn({ service: 'ssm', resource: 'parameter', resourceName: name.slice(1), arnFormat: ArnFormat.SLASH_RESOURCE_NAME });
    return { name, arn };
  }

  private createFunctions(
    settings: StackSettings,
    shared: Pick<QueueFunctionProps, 'metricsNamespace' | 'handlerModule'>,
    callbackTokenParameter: { name: string; arn: string },
  ): QueueFunctions {
    const queueFunction = (id: string, entry: QueueFunctionName, spec: FunctionSpec): QueueFunction =>
      new QueueFunction(this, id, { ...spec, ...shared, entry, logRetention: settings.logRetention }).allowTable(this.table, TABLE_GRANTS[entry]);
    // Every function may end attempts or expire jobs, so every one publishes lifecycle events.
    const queueEnvironment = { ...settings.queueEnvironment, TABLE_NAME: this.table.tableName, EVENT_BUS_NAME: this.eventBus.eventBusName };
    // Functions get where the secret is, never its value: configuration is readable more widely than the secret.
    const withCallbackTokenSecret = { ...queueEnvironment, CALLBACK_TOKEN_PARAMETER: callbackTokenParameter.name };
    // The worker refuses the addresses it may not send to, and the api refuses them when a type is defined.
    const targetAddresses = { HTTP_TARGET_PRIVATE_ADDRESSES: settings.httpTargetPrivateAddresses };
    const timeoutsS = functionTimeoutsS(settings.queue);
    const reserved = reservedConcurrency(settings, settings.queue);

    const worker = queueFunction('Worker', 'worker', {
      description: 'Runs a batch of claimed jobs and records each outcome',
      environment: { ...withCallbackTokenSecret, ...targetAddresses },
      // Lambda's limit; job types are held to what fits in it (MAX_WORKER_ATTEMPT_S).
      timeout: Duration.seconds(timeoutsS.worker),
      memorySizeMb: FUNCTION_MEMORY_SIZES_MB.worker,
      // Without a reservation the account's other functions can take all its concurrency, and the worker's batches
      // wait in Lambda's async queue; a batch that waits past its claims costs its jobs no attempt, only time.
      reservedConcurrentExecutions: reserved.worker,
    })
      .allowCallbackTokenParameter(callbackTokenParameter.arn, { create: true })
      .allowPutEvents(this.eventBus, ...settings.targetEventBusArns)
      .allowInvoke(...settings.targetFunctionArns);
    worker.function.configureAsyncInvoke({
      // The queue's retry policy decides about another attempt; a Lambda retry would run the batch again
      // behind its back (and at_most_once relies on a single delivery plus its start record).
      retryAttempts: 0,
      // A batch this late has lost its claims (the sweeper handed them back uncounted, since the worker never
      // recorded a start); it only lands in the dead-letter queue. A later one finds its claims gone and runs nothing.
      maxEventAge: Duration.hours(1),
      onFailure: new SqsDestination(this.deadLetterQueue),
    });

    const poller = queueFunction('Poller', 'poller', {
      description: 'Claims due jobs for about a minute and hands them to workers',
      environment: { ...queueEnvironment, WORKER_FUNCTION_NAME: worker.function.functionName },
      timeout: Duration.seconds(timeoutsS.poller),
      memorySizeMb: FUNCTION_MEMORY_SIZES_MB.poller,
      named: true,
      reservedConcurrentExecutions: reserved.poller,
    })
      .allowInvoke(worker.function)
      .allowPutEvents(this.eventBus);
    this.schedulePoller(poller, settings);

    const sweeper = queueFunction('Sweeper', 'sweeper', {
      description: 'Ends lapsed claims and requeues jobs left behind a cursor',
      environment: queueEnvironment,
      timeout: Duration.seconds(timeoutsS.sweeper),
      memorySizeMb: FUNCTION_MEMORY_SIZES_MB.sweeper,
      named: true,
      reservedConcurrentExecutions: reserved.sweeper,
    }).allowPutEvents(this.eventBus);
    this.scheduleSweeper(sweeper);

    const api = queueFunction('Api', 'api', {
      description: 'The HTTP API of the delayed job queue',
      environment: { ...queueEnvironment, ...targetAddresses },
      timeout: Duration.seconds(timeoutsS.api),
      memorySizeMb: FUNCTION_MEMORY_SIZES_MB.api,
    }).allowPutEvents(this.eventBus);

    // The same authorizer code the local runtime runs in front of the api: API keys from the table.
    const authorizer = queueFunction('Authorizer', 'authorizer', {
      description: 'Admits requests that carry a valid API key or callback token',
      environment: withCallbackTokenSecret,
      timeout: Duration.seconds(timeoutsS.authorizer),
      memorySizeMb: FUNCTION_MEMORY_SIZES_MB.authorizer,
    }).allowCallbackTokenParameter(callbackTokenParameter.arn, { create: false });
    const waker = queueFunction('Waker', 'waker', {
      description: 'Wakes the poller or the sweeper for lane entries written, at once or by a timer',
      environment: queueEnvironment,
      timeout: Duration.seconds(timeoutsS.waker),
      memorySizeMb: FUNCTION_MEMORY_SIZES_MB.waker,
    });
    startWakerFrom(waker, { table: this.table, timerQueue: this.wakeTimerQueue, timerSenders: [poller, sweeper] });
    allowWakes([poller, sweeper, waker], { poller, sweeper });
    return { api, authorizer, poller, worker, sweeper, waker };
  }

  private schedulePoller(poller: QueueFunction, settings: StackSettings): void {
    poller.function.configureAsyncInvoke({ retryAttempts: 0, maxEventAge: SCHEDULED_EVENT_MAX_AGE });
    for (let partition = 0; partition < settings.queue.pollerPartitions; partition++) {
      new Rule(this, `PollerSchedule${partition}`, {
        description: `Starts poller partition ${partition} of ${settings.queue.pollerPartitions} every minute`,
        schedule: Schedule.rate(Duration.minutes(1)),
        targets: [
          new LambdaFunction(poller.function, {
            event: RuleTargetInput.fromObject({ shards: shardsOfPartition(partition, settings.queue.pollerPartitions, settings.queue.shards) }),
            maxEventAge: SCHEDULED_EVENT_MAX_AGE,
          }),
        ],
      });
    }
  }

  private scheduleSweeper(sweeper: QueueFunction): void {
    sweeper.function.configureAsyncInvoke({ retryAttempts: 0, maxEventAge: SCHEDULED_EVENT_MAX_AGE });
    new Rule(this, 'SweeperSchedule', {
      description: 'Starts the sweeper every minute',
      schedule: Schedule.rate(Duration.minutes(1)),
      targets: [new LambdaFunction(sweeper.function, { maxEventAge: SCHEDULED_EVENT_MAX_AGE })],
    });
  }
}
