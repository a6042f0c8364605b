/** Cold-start wiring for the Lambda entry points: settings validated once, clients created once. */
import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { LambdaClient } from '@aws-sdk/client-lambda';
import { SSMClient } from '@aws-sdk/client-ssm';
import { SQSClient } from '@aws-sdk/client-sqs';
import { createQueueContext, type QueueContext } from '../../lib/queue/context.js';
import { readQueueSettings, requiredSetting } from '../../lib/queue/settings.js';
import { createDynamoClients } from '../../lib/store/client.js';
import { ASYNC_DELIVERY_CALL_LIMITS, SECRET_READ_CALL_LIMITS, TARGET_LAMBDA_CALL_LIMITS, type DynamoCallLimits } from '../../lib/domain/limits.js';
import { createEventBridgePublisher } from '../../lib/aws/eventbridge.js';
import { createLambdaWaker } from '../../lib/aws/lambda.js';
import type { WakeInvoker, WakeTimers } from '../../lib/domain/invocations.js';
import { createSqsWakeTimers } from '../../lib/aws/sqs.js';
import { lifecycleEventDetail } from '../../lib/wire/lifecycle-events.js';
import type { LifecycleEvent, LifecyclePublisher } from '../../lib/domain/lifecycle-events.js';
import type { WorkerIdentity } from '../../lib/domain/job.js';
import { fixedSecret, parameterStoreSecret, type SecretSource } from '../../lib/aws/secrets.js';
import type { TargetClients } from '../../lib/targets/index.js';
import { PRIVATE_ADDRESS_CHOICES, type TargetAddressPolicy } from '../../lib/targets/addresses.js';
import { ConfigError } from '../../lib/domain/errors.js';
import { log } from './log.js';

let eventBridge: EventBridgeClient | undefined;
/** Lifecycle events and `eventbridge` targets: PutEvents answers at once, so each call is bounded (limits.ts). */
const eventBridgeClient = (): EventBridgeClient => (eventBridge ??= new EventBridgeClient(ASYNC_DELIVERY_CALL_LIMITS));
let lambda: LambdaClient | undefined;
/**
 * Asynchronous invokes, of the worker or of a woken poller or sweeper: Lambda answers 202 at once, so each call is
 * bounded (ASYNC_DELIVERY_CALL_LIMITS), and a hung connection never holds the writer that asked.
 */
export const lambdaClient = (): LambdaClient => (lambda ??= new LambdaClient(ASYNC_DELIVERY_CALL_LIMITS));
let targetLambda: LambdaClient | undefined;
/**
 * `lambda` targets, invoked and waited for: their attempt's timeout aborts the call, and the request timeout only
 * backstops the longest attempt; tried once, so a target never runs twice in one attempt (TARGET_LAMBDA_CALL_LIMITS).
 */
const targetLambdaClient = (): LambdaClient => (targetLambda ??= new LambdaClient(TARGET_LAMBDA_CALL_LIMITS));

export const logLifecycleEvent = (event: LifecycleEvent): void => log('info', event.name, lifecycleEventDetail(event));

/** Lifecycle events go to the bus EVENT_BUS_NAME names; without one they are only written to the log. */
export function lifecyclePublisherFromEnvironment(env: NodeJS.ProcessEnv = process.env): LifecyclePublisher {
  const busName = env.EVENT_BUS_NAME;
  if (!busName) return { publish: async (events) => events.forEach(logLifecycleEvent) };
  return createEventBridgePublisher(eventBridgeClient(), {
    busName,
    onUndelivered: (events, reason) =>
      log('error', 'lifecycle events not delivered', { reason, events: events.map((event) => ({ name: event.name, type: event.type, id: event.id, attempt: event.attempt })) }),
  });
}

export interface QueueEnvironmentOptions {
  /** The api and the authorizer answer requests, and pass REQUEST_PATH_DYNAMODB_CALL_LIMITS. */
  callLimits?: DynamoCallLimits;
  /** The functions that write what a sleeping poller or sweeper must act on pass `wakerFromEnvironment()`. */
  waker?: WakeInvoker;
  /** The poller and the sweeper, which arm a timer for the work they leave when they sleep, pass `wakeTimersFromEnvironment()`. */
  wakeTimers?: WakeTimers;
}

export function queueFromEnvironment(env: NodeJS.ProcessEnv = process.env, options: QueueEnvironmentOptions = {}): QueueContext {
  const settings = readQueueSettings(env);
  const { db } = createDynamoClients({
    ...(env.DYNAMODB_ENDPOINT ? { endpoint: env.DYNAMODB_ENDPOINT } : {}),
    ...(options.callLimits ? { callLimits: options.callLimits } : {}),
  });
  return createQueueContext(db, settings, {
    events: lifecyclePublisherFromEnvironment(env),
    ...(options.waker ? { waker: options.waker } : {}),
    ...(options.wakeTimers ? { wakeTimers: options.wakeTimers } : {}),
  });
}

/** Wakes the poller and the sweeper the stack names in POLLER_FUNCTION_NAME and SWEEPER_FUNCTION_NAME, read once at cold start. */
export function wakerFromEnvironment(env: NodeJS.ProcessEnv = process.env): WakeInvoker {
  return createLambdaWaker(lambdaClient(), {
    pollerFunctionName: requiredSetting(env, 'POLLER_FUNCTION_NAME'),
    sweeperFunctionName: requiredSetting(env, 'SWEEPER_FUNCTION_NAME'),
  });
}

let sqs: SQSClient | undefined;
/**
 * Wake timers: SQS answers at once. The waker's batch that fails is delivered again; a poller or sweeper whose
 * timer fails leaves that work to the next minute tick.
 */
const sqsClient = (): SQSClient => (sqs ??= new SQSClient(ASYNC_DELIVERY_CALL_LIMITS));

/** Wake timers, sent to the queue WAKE_TIMER_QUEUE_URL names, read once at cold start. */
export function wakeTimersFromEnvironment(env: NodeJS.ProcessEnv = process.env): WakeTimers {
  return createSqsWakeTimers(sqsClient(), requiredSetting(env, 'WAKE_TIMER_QUEUE_URL'));
}

/**
 * The addresses http targets may reach from a Lambda function: never loopback (127.0.0.1:9001 is the
 * function's own runtime API), and private ones unless HTTP_TARGET_PRIVATE_ADDRESSES is `refuse`.
 */
export function targetAddressPolicyFromEnvironment(env: NodeJS.ProcessEnv = process.env): TargetAddressPolicy {
  const given = env.HTTP_TARGET_PRIVATE_ADDRESSES || PRIVATE_ADDRESS_CHOICES[0];
  const choice = PRIVATE_ADDRESS_CHOICES.find((candidate) => candidate === given);
  if (choice === undefined) throw new ConfigError(`HTTP_TARGET_PRIVATE_ADDRESSES must be ${PRIVATE_ADDRESS_CHOICES.join(' or ')}, got "${given}"`);
  return { allowLoopback: false, allowPrivate: choice === 'allow' };
}

/**
 * The clients the worker's targets use. http targets need PUBLIC_API_URL (for the callback URL) and the
 * callback token secret (the authorizer verifies the same tokens); without both, their jobs fail saying so.
 */
export function targetClientsFromEnvironment(env: NodeJS.ProcessEnv = process.env): TargetClients {
  const apiBaseUrl = env.PUBLIC_API_URL;
  const callbackTokenSecret = callbackTokenSecretFromEnvironment(env, 'signer');
  const addressPolicy = targetAddressPolicyFromEnvironment(env);
  return {
    ...(apiBaseUrl && callbackTokenSecret ? { http: { apiBaseUrl, callbackTokenSecret, addressPolicy } } : {}),
    lambda: targetLambdaClient(),
    eventBridge: eventBridgeClient(),
  };
}

let ssm: SSMClient | undefined;
/** The callback token secret, read by the authorizer within its timeout, so each read is bounded (SECRET_READ_CALL_LIMITS). */
const ssmClient = (): SSMClient => (ssm ??= new SSMClient(SECRET_READ_CALL_LIMITS));

/**
 * The secret callback tokens are signed with: read from Parameter Store at run time when the stack names its
 * parameter (CALLBACK_TOKEN_PARAMETER), or taken as given (CALLBACK_TOKEN_SECRET) where there is no Parameter
 * Store. The signer (the worker) creates the parameter on its first use; a verifier only reads it.
 */
export function callbackTokenSecretFromEnvironment(env: NodeJS.ProcessEnv = process.env, role: 'signer' | 'verifier' = 'verifier'): SecretSource | undefined {
  if (env.CALLBACK_TOKEN_PARAMETER) return parameterStoreSecret(ssmClient(), env.CALLBACK_TOKEN_PARAMETER, { createIfMissing: role === 'signer' });
  return env.CALLBACK_TOKEN_SECRET ? fixedSecret(env.CALLBACK_TOKEN_SECRET) : undefined;
}

/** This process on this host: who ran an attempt, as the history records it, and its entry in the roster. */
export function processIdentity(): WorkerIdentity {
  return { id: `${process.pid}-${randomUUID().slice(0, 8)}`, host: hostname() };
}
