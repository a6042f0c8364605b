/**
 * The whole queue in one stack: the table, the HTTP API in front of the api
 * function, the poller and sweeper on every-minute schedules, the worker the
 * poller invokes asynchronously, the lifecycle event bus, alarms and outputs.
 * It runs the same functions/ code the local runtime runs.
 */
import { CfnOutput, Duration, RemovalPolicy, Stack, Validations, type StackProps } from 'aws-cdk-lib';
import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import { HttpApi, HttpMethod, HttpNoneAuthorizer, HttpStage, LogGroupLogDestination } from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpLambdaAuthorizer, HttpLambdaResponseType } from 'aws-cdk-lib/aws-apigatewayv2-authorizers';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import type { IAlarm } from 'aws-cdk-lib/aws-cloudwatch';
import { AttributeType, BillingMode, ProjectionType, Table } from 'aws-cdk-lib/aws-dynamodb';
import { EventBus, Rule, RuleTargetInput, Schedule } from 'aws-cdk-lib/aws-events';
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets';
import { SqsDestination } from 'aws-cdk-lib/aws-lambda-destinations';
import { LogGroup } from 'aws-cdk-lib/aws-logs';
import { Secret } from 'aws-cdk-lib/aws-secretsmanager';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import { DASHBOARD_PATHS } from '../functions/shared/public-paths.js';
import { API_TIMEOUT_S, AUTHORIZER_TIMEOUT_S, WORKER_TIMEOUT_S } from '../lib/domain/limits.js';
import { FAILURE_DESTINATION_MAX_BYTES } from '../lib/queue/batcher.js';
import { TABLE_SCHEMA } from '../lib/store/table.js';
import { createQueueAlarms } from './alarms.js';
import { AUTHORIZED_ROUTES, KEY_AUTHORIZER_CACHE_TTL_S } from './api-gateway.js';
import { QueueFunction, type QueueFunctionName, type QueueFunctionProps } from './queue-function.js';
import { TABLE_GRANTS } from './table-grants.js';
import { shardsOfPartition, type StackSettings } from './settings.js';
import type { QueueSettings } from '../lib/queue/context.js';

export interface QueueStackProps extends StackProps {
  settings: StackSettings;
}

/** Lambda's async invoke queue keeps a poller event no longer than this: a late poller would only overlap the next. */
const SCHEDULED_EVENT_MAX_AGE = Duration.minutes(1);

/**
 * Each function's Lambda timeout in seconds, as the stack sets it; the local runtime cuts its invocations at the
 * same. Pollers and sweepers loop for POLLER_RUN_MS; their timeout leaves them room to finish the last poll.
 */
export function functionTimeoutsS(queue: Pick<QueueSettings, 'pollerRunMs'>): Record<QueueFunctionName, number> {
  const loopS = Math.ceil((queue.pollerRunMs + 15_000) / 1000);
  return { api: API_TIMEOUT_S, authorizer: AUTHORIZER_TIMEOUT_S, worker: WORKER_TIMEOUT_S, poller: loopS, sweeper: loopS };
}

/** What sets one function apart; the stack gives every function the same log retention and metrics namespace. */
type FunctionSpec = Omit<QueueFunctionProps, 'entry' | 'logRetention' | 'metricsNamespace'>;

type QueueFunctions = Record<QueueFunctionName, QueueFunction>;

export class QueueStack extends Stack {
  readonly table: Table;
  readonly eventBus: EventBus;
  readonly deadLetterQueue: Queue;
  readonly httpApi: HttpApi;
  readonly functions: QueueFunctions;
  readonly alarms: IAlarm[];

  constructor(scope: Construct, id: string, props: QueueStackProps) {
    super(scope, id, props);
    const { settings } = props;

    this.table = this.createTable(settings);
    this.eventBus = new EventBus(this, 'LifecycleEvents', { description: 'Job lifecycle events of the delayed job queue' });
    this.deadLetterQueue = this.createDeadLetterQueue();
    // Named after the stack, so two deployments in one account (dev and prod, say) keep their metrics apart.
    const metricsNamespace = this.stackName;
    const callbackTokenSecret = this.createCallbackTokenSecret();
    const functions = this.createFunctions(settings, metricsNamespace, callbackTokenSecret);
    const { httpApi, stage } = this.createHttpApi(settings, functions);
    this.httpApi = httpApi;

    // The API base URL of the callback URLs http targets receive.
    functions.worker.function.addEnvironment('PUBLIC_API_URL', this.httpApi.apiEndpoint);
    this.functions = functions;
    this.alarms = createQueueAlarms(this, {
      settings,
      table: this.table,
      worker: functions.worker.function,
      deadLetterQueue: this.deadLetterQueue,
      metricsNamespace,
    });

    new CfnOutput(this, 'ApiUrl', { value: stage.url, description: 'Base URL of the HTTP API' });
    new CfnOutput(this, 'TableName', { value: this.table.tableName });
    new CfnOutput(this, 'EventBusName', { value: this.eventBus.eventBusName });
    new CfnOutput(this, 'DeadLetterQueueUrl', { value: this.deadLetterQueue.queueUrl });
    new CfnOutput(this, 'CallbackTokenSecretArn', { value: callbackTokenSecret.secretArn, description: 'Rotate by putting a new value (see README)' });
  }

  private createTable(settings: StackSettings): Table {
    const { partitionKey, sortKey, dueIndex, ttlAttribute } = TABLE_SCHEMA;
    const table = new Table(this, 'Jobs', {
      partitionKey: { name: partitionKey, type: AttributeType.STRING },
      sortKey: { name: sortKey, type: AttributeType.STRING },
      billingMode: BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      timeToLiveAttribute: ttlAttribute,
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
      // Set, not left to SQS's default (256 KiB before it became 1 MiB): a failed batch's record must fit (lib/queue/batcher.ts).
      maxMessageSizeBytes: FAILURE_DESTINATION_MAX_BYTES,
    });
    Validations.of(queue).acknowledge({
      id: 'AwsSolutions::AwsSolutions-SQS3',
      reason: "This queue is the worker's on-failure destination, a dead-letter queue itself; a queue behind it would only move the same messages again.",
    });
    return queue;
  }

  /** Signs the callback tokens http targets receive (worker) and verifies them (authorizer). */
  private createCallbackTokenSecret(): Secret {
    const secret = new Secret(this, 'CallbackTokenSecret', {
      description: 'Signs the per-job callback tokens of the delayed job queue',
      generateSecretString: { passwordLength: 48, excludePunctuation: true },
    });
    Validations.of(secret).acknowledge({
      id: 'AwsSolutions::AwsSolutions-SMG4',
      reason:
        'Rotated by putting a new value (see README): the worker and the authorizer re-read it within minutes and the authorizer accepts the previous value too, so no token in flight is refused; a rotation Lambda would add a function for a key only these two read.',
    });
    return secret;
  }

  private createFunctions(settings: StackSettings, metricsNamespace: string, callbackTokenSecret: Secret): QueueFunctions {
    const queueFunction = (id: string, entry: QueueFunctionName, spec: FunctionSpec): QueueFunction =>
      new QueueFunction(this, id, { ...spec, entry, logRetention: settings.logRetention, metricsNamespace }).allowTable(this.table, TABLE_GRANTS[entry]);
    // Every function may end attempts or expire jobs, so every one publishes lifecycle events.
    const queueEnvironment = { ...settings.queueEnvironment, TABLE_NAME: this.table.tableName, EVENT_BUS_NAME: this.eventBus.eventBusName };
    // Functions get where the secret is, never its value: configuration is readable more widely than the secret.
    const withCallbackTokenSecret = { ...queueEnvironment, CALLBACK_TOKEN_SECRET_ARN: callbackTokenSecret.secretArn };
    // The worker refuses the addresses it may not send to, and the api refuses them when a type is defined.
    const targetAddresses = { HTTP_TARGET_PRIVATE_ADDRESSES: settings.httpTargetPrivateAddresses };
    const timeoutsS = functionTimeoutsS(settings.queue);

    const worker = queueFunction('Worker', 'worker', {
      description: 'Runs a batch of claimed jobs and records each outcome',
      environment: { ...withCallbackTokenSecret, ...targetAddresses },
      // Lambda's limit; job types are held to what fits in it (MAX_WORKER_ATTEMPT_S).
      timeout: Duration.seconds(timeoutsS.worker),
      memorySizeMb: 1024,
      // Without a reservation the account's other functions can take all its concurrency, and the worker's batches
      // wait in Lambda's async queue; a batch that waits past its claims costs its jobs no attempt, only time.
      ...(settings.reservedConcurrency ? { reservedConcurrentExecutions: settings.workerReservedConcurrency } : {}),
    })
      .allowReadSecret(callbackTokenSecret)
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
      memorySizeMb: 512,
      // Each partition's poller may overlap its successor by a moment, never more: a slow minute cannot pile up.
      ...(settings.reservedConcurrency ? { reservedConcurrentExecutions: 2 * settings.pollerPartitions } : {}),
    })
      .allowInvoke(worker.function)
      .allowPutEvents(this.eventBus);
    this.schedulePoller(poller, settings);

    const sweeper = queueFunction('Sweeper', 'sweeper', {
      description: 'Ends lapsed claims and requeues jobs left behind a cursor',
      environment: queueEnvironment,
      timeout: Duration.seconds(timeoutsS.sweeper),
      memorySizeMb: 256,
      ...(settings.reservedConcurrency ? { reservedConcurrentExecutions: 2 } : {}),
    }).allowPutEvents(this.eventBus);
    this.scheduleSweeper(sweeper);

    const api = queueFunction('Api', 'api', {
      description: 'The HTTP API of the delayed job queue',
      environment: { ...queueEnvironment, ...targetAddresses },
      timeout: Duration.seconds(timeoutsS.api),
      memorySizeMb: 512,
    }).allowPutEvents(this.eventBus);

    // The same authorizer code the local runtime runs in front of the api: API keys from the table.
    const authorizer = queueFunction('Authorizer', 'authorizer', {
      description: 'Admits requests that carry a valid API key or callback token',
      environment: withCallbackTokenSecret,
      timeout: Duration.seconds(timeoutsS.authorizer),
      memorySizeMb: 256,
    }).allowReadSecret(callbackTokenSecret);
    return { api, authorizer, poller, worker, sweeper };
  }

  private schedulePoller(poller: QueueFunction, settings: StackSettings): void {
    poller.function.configureAsyncInvoke({ retryAttempts: 0, maxEventAge: SCHEDULED_EVENT_MAX_AGE });
    for (let partition = 0; partition < settings.pollerPartitions; partition++) {
      new Rule(this, `PollerSchedule${partition}`, {
        description: `Starts poller partition ${partition} of ${settings.pollerPartitions} every minute`,
        schedule: Schedule.rate(Duration.minutes(1)),
        targets: [
          new LambdaFunction(poller.function, {
            event: RuleTargetInput.fromObject({ shards: shardsOfPartition(partition, settings.pollerPartitions, settings.queue.shards) }),
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

  private createHttpApi(settings: StackSettings, functions: QueueFunctions): { httpApi: HttpApi; stage: HttpStage } {
    const authorizer = new HttpLambdaAuthorizer('ApiKeyAuthorizer', functions.authorizer.function, {
      responseTypes: [HttpLambdaResponseType.SIMPLE],
      identitySource: ['$request.header.Authorization'],
      // A revoked key stops working within this; the api also checks each key's expiry itself.
      resultsCacheTtl: Duration.seconds(KEY_AUTHORIZER_CACHE_TTL_S),
    });

    const integration = new HttpLambdaIntegration('ApiIntegration', functions.api.function);
    // Every request reaches the api function, as locally, so an unknown path gets the API's own 404 body.
    const httpApi = new HttpApi(this, 'HttpApi', {
      description: 'Delayed job queue',
      createDefaultStage: false,
      defaultIntegration: integration,
      defaultAuthorizer: authorizer,
    });
    // The same authorizer without an identity source, so uncached and invoked even without a header.
    const callbackAuthorizer = new HttpLambdaAuthorizer('CallbackTokenAuthorizer', functions.authorizer.function, {
      responseTypes: [HttpLambdaResponseType.SIMPLE],
      identitySource: [],
      resultsCacheTtl: Duration.seconds(0),
    });
    const authorizers = { key: authorizer, callback: callbackAuthorizer };
    for (const route of AUTHORIZED_ROUTES) {
      httpApi.addRoutes({ path: route.path, methods: [HttpMethod[route.method]], integration, authorizer: authorizers[route.authorizer] });
    }
    addPublicRoutes(httpApi, integration);
    return { httpApi, stage: this.createStage(settings, httpApi) };
  }

  private createStage(settings: StackSettings, httpApi: HttpApi): HttpStage {
    const accessLogs = new LogGroup(this, 'ApiAccessLogs', { retention: settings.logRetention, removalPolicy: RemovalPolicy.DESTROY });
    return new HttpStage(this, 'DefaultStage', {
      httpApi,
      stageName: '$default',
      autoDeploy: true,
      throttle: { rateLimit: settings.apiRateLimit, burstLimit: settings.apiBurstLimit },
      accessLogSettings: {
        destination: new LogGroupLogDestination(accessLogs),
        format: AccessLogFormat.custom(
          JSON.stringify({
            requestId: '$context.requestId',
            ip: '$context.identity.sourceIp',
            requestTime: '$context.requestTime',
            method: '$context.httpMethod',
            path: '$context.path',
            routeKey: '$context.routeKey',
            status: '$context.status',
            responseLength: '$context.responseLength',
            latencyMs: '$context.responseLatency',
            integrationError: '$context.integrationErrorMessage',
          }),
        ),
      },
    });
  }
}

/** The routes that need no key, each acknowledged as public by design. */
function addPublicRoutes(httpApi: HttpApi, integration: HttpLambdaIntegration): void {
  const addPublic = (path: string, reason: string): void => {
    for (const route of httpApi.addRoutes({ path, methods: [HttpMethod.GET], integration, authorizer: new HttpNoneAuthorizer() })) {
      Validations.of(route).acknowledge({ id: 'AwsSolutions::AwsSolutions-APIG4', reason });
    }
  };
  // Its own route, public by design: a load balancer or uptime check needs no key.
  addPublic('/health', 'GET /health is public by design: it says only that the API answers, so uptime checks need no key.');
  addPublic('/openapi.json', 'GET /openapi.json is public by design: it describes the routes and their schemas, which the README publishes anyway, and holds no data.');
  // The dashboard's page and assets: public like /health, since a browser cannot send a key for a page it
  // navigates to. The page asks for a key and sends it with every API call, which go through the authorizer.
  for (const path of Object.values(DASHBOARD_PATHS)) {
    addPublic(path, 'The dashboard page and its script and styles are static and hold no data; the page asks for an API key and sends it with every API call.');
  }
}
