/**
 * What AWS does at its limits, done locally to the calls the in-process runtime makes, so code that would fail
 * or misbehave where it is deployed does so here first (as ./dynamodb-rules.ts does for DynamoDB):
 *
 * - Lambda's asynchronous invoke refuses a payload over 1 MB (1 048 576 bytes) with `RequestTooLargeException`.
 * - Lambda accepts a payload whose on-failure record would not fit the worker's dead-letter queue, and the
 *   record of its failure is then lost (lib/queue/poll/worker-batches.ts): refused here, loudly, since it is a sizing bug.
 * - EventBridge refuses a PutEvents request whose entries come to 256 KB (262 144 bytes) or more, counted as it
 *   counts them (Time 14 bytes; Source, DetailType, Detail and each of Resources as UTF-8).
 * - Lambda's async queue hands an event over late (its function throttled: its reserved concurrency or the
 *   account's used up) and now and then twice. Off unless asked for (`WorkerDelivery`): the fault suite and
 *   tests switch it on, as may `npm start` (LOCAL_WORKER_* settings).
 * - The poller and the sweeper, when the stack reserves concurrency for them, run no more invocations at once
 *   than it reserves: an event (a minute tick, a wake) beyond that is throttled and retried later, as Lambda's
 *   async queue does.
 */
import { EventBridgeServiceException, type PutEventsRequestEntry } from '@aws-sdk/client-eventbridge';
import { PUT_EVENTS_MAX_BYTES, putEventsEntryBytes } from '../../../lib/aws/eventbridge.js';
import { RequestTooLargeException } from '@aws-sdk/client-lambda';
import { FAILURE_DESTINATION_MAX_BYTES, maxFailureRecordBytes } from '../../../lib/queue/poll/worker-batches.js';
import type { WorkerInvoker, WorkerBatch } from '../../../lib/domain/invocations.js';
import { integerSetting, type Env } from '../../../lib/queue/settings.js';
import { ConfigError } from '../../../lib/domain/errors.js';
import type { SdkClient } from './iam/iam-check.js';

/** Lambda's limit on an asynchronous invoke's payload (InvocationType Event). */
export const LAMBDA_ASYNC_PAYLOAD_BYTES = 1_048_576;

/** How Lambda's async queue hands worker batches over; every field off by default. */
export interface WorkerDelivery {
  /** Every batch reaches the worker this long after the invoke was accepted. */
  delayMs: number;
  /** Every batch is delivered twice, both copies at once. */
  duplicate: boolean;
  /** The share of invokes (0-100 %) throttled: each is delivered `throttleDelayMs` later still, as Lambda's retries would. */
  throttledPercent: number;
  throttleDelayMs: number;
}

export const PROMPT_DELIVERY: WorkerDelivery = { delayMs: 0, duplicate: false, throttledPercent: 0, throttleDelayMs: 0 };

/** LOCAL_WORKER_DELIVERY_DELAY_MS, LOCAL_WORKER_DUPLICATE_DELIVERY, LOCAL_WORKER_THROTTLED_PERCENT, LOCAL_WORKER_THROTTLE_DELAY_MS. */
export function workerDeliveryFrom(env: Env): WorkerDelivery {
  const duplicate = env.LOCAL_WORKER_DUPLICATE_DELIVERY;
  if (duplicate !== undefined && duplicate !== '' && duplicate !== 'true' && duplicate !== 'false') {
    throw new ConfigError(`LOCAL_WORKER_DUPLICATE_DELIVERY must be true or false, got "${duplicate}"`);
  }
  return {
    delayMs: integerSetting(env, 'LOCAL_WORKER_DELIVERY_DELAY_MS', 0, 0, 3_600_000),
    duplicate: duplicate === 'true',
    throttledPercent: integerSetting(env, 'LOCAL_WORKER_THROTTLED_PERCENT', 0, 0, 100),
    throttleDelayMs: integerSetting(env, 'LOCAL_WORKER_THROTTLE_DELAY_MS', 60_000, 0, 3_600_000),
  };
}

/** What Lambda publishes about a function's asynchronous invokes (its Throttles, AsyncEventAge and Errors metrics). */
export interface AsyncInvokeMetrics {
  /** An invoke Lambda could not run at once for want of concurrency, and retries. */
  throttled(): void;
  /** A batch handed to the function, `ageMs` after the invoke was accepted. */
  delivered(ageMs: number): void;
  /** An invocation that failed: its function threw or ran into its timeout. */
  failed(): void;
}

export interface LocalAsyncInvokerOptions {
  delivery?: WorkerDelivery;
  metrics?: AsyncInvokeMetrics;
  /** Every delivery still to come or running; the runtime waits for them on stop. */
  inFlight: Set<Promise<unknown>>;
  /** Pending deliveries are dropped once aborted, as a stopped runtime's would be. */
  signal?: AbortSignal;
  /** A batch whose delivery or worker invocation failed. */
  onError: (error: unknown, batch: WorkerBatch) => void;
  random?: () => number;
}

/** Waits of `ms` that all end at once when `signal` aborts: one listener for every wait, rather than one each on a signal they share. */
function abortableWaits(signal: AbortSignal | undefined): (ms: number) => Promise<void> {
  const waiting = new Set<() => void>();
  signal?.addEventListener('abort', () => [...waiting].forEach((end) => end()), { once: true });
  return (ms) =>
    new Promise((resolve) => {
      const end = (): void => {
        clearTimeout(timer);
        waiting.delete(end);
        resolve();
      };
      const timer = setTimeout(end, ms);
      waiting.add(end);
    });
}

/**
 * Invokes the worker in-process the way Lambda's async invoke does: the payload is serialised and refused over
 * Lambda's limit, the call returns before the worker runs, and the batch reaches it as `delivery` says.
 */
export function createLocalAsyncInvoker(runBatch: (batch: WorkerBatch) => Promise<unknown>, options: LocalAsyncInvokerOptions): WorkerInvoker {
  const delivery = options.delivery ?? PROMPT_DELIVERY;
  const random = options.random ?? Math.random;
  const wait = abortableWaits(options.signal);
  const deliver = (payload: string, delayMs: number): void => {
    // A copy of its own for each delivery, parsed from the JSON Lambda would carry.
    const batch = JSON.parse(payload) as WorkerBatch;
    const acceptedAtMs = Date.now();
    const run = (async () => {
      if (delayMs > 0) {
        await wait(delayMs);
        if (options.signal?.aborted) return;
      }
      options.metrics?.delivered(Date.now() - acceptedAtMs);
      await runBatch(batch).catch((error: unknown) => {
        options.metrics?.failed();
        throw error;
      });
    })().catch((error: unknown) => options.onError(error, batch));
    options.inFlight.add(run);
    void run.finally(() => options.inFlight.delete(run));
  };
  return {
    async invoke(batch) {
      const payload = JSON.stringify(batch);
      const bytes = Buffer.byteLength(payload);
      if (bytes > LAMBDA_ASYNC_PAYLOAD_BYTES) {
        throw new RequestTooLargeException({
          $metadata: { httpStatusCode: 413 },
          message: `Request must be smaller than ${LAMBDA_ASYNC_PAYLOAD_BYTES} bytes for the InvokeFunction operation (an asynchronous invoke of ${bytes} bytes)`,
          Type: 'User',
        });
      }
      if (maxFailureRecordBytes(bytes) > FAILURE_DESTINATION_MAX_BYTES) {
        const error = new Error(
          `a worker batch of ${bytes} bytes would have an on-failure record of up to ${maxFailureRecordBytes(bytes)} bytes, over the dead-letter queue's ${FAILURE_DESTINATION_MAX_BYTES}: its jobs would be lost if it failed`,
        );
        options.onError(error, batch);
        throw error;
      }
      const throttled = delivery.throttledPercent > 0 && random() * 100 < delivery.throttledPercent;
      if (throttled) options.metrics?.throttled();
      const delayMs = delivery.delayMs + (throttled ? delivery.throttleDelayMs : 0);
      deliver(payload, delayMs);
      if (delivery.duplicate) deliver(payload, delayMs);
    },
  };
}

/** Lambda retries a throttled asynchronous event 1 s after the first attempt, then at doubling intervals of at most 5 minutes. */
export const THROTTLE_RETRY_FIRST_MS = 1_000;
export const THROTTLE_RETRY_MAX_MS = 300_000;

export interface LocalAsyncStartsOptions<Event> {
  /** The executions the stack reserves for the function: an event beyond them is throttled. Infinity without a reservation. */
  concurrency: number;
  /** Every invocation started or still to start; the runtime waits for them on stop. */
  inFlight: Set<Promise<unknown>>;
  /** Events still waiting are dropped once aborted, as a stopped runtime's would be. */
  signal?: AbortSignal;
  /** An invocation that failed or ran into its timeout. */
  onError: (error: unknown, event: Event) => void;
}

export interface LocalAsyncStarts<Event> {
  /** Queues an invocation with `event` and returns once it is queued, before it runs, as Lambda answers 202. */
  start(event: Event): void;
}

/**
 * Starts invocations of one function the way Lambda's asynchronous invoke does (an EventBridge rule's target,
 * a wake): each event is a copy of its own, as the JSON Lambda would carry, and runs as soon as the function has
 * a free execution of its `concurrency`; while it has none, the event is throttled and retried later, never dropped.
 */
export function createLocalAsyncStarts<Event>(run: (event: Event) => Promise<unknown>, options: LocalAsyncStartsOptions<Event>): LocalAsyncStarts<Event> {
  const wait = abortableWaits(options.signal);
  let running = 0;
  const invoke = async (event: Event): Promise<void> => {
    running++;
    try {
      await run(event);
    } catch (error) {
      options.onError(error, event);
    } finally {
      running--;
    }
  };
  const deliver = async (event: Event): Promise<void> => {
    // Accepted now, run later: the caller goes on before the function starts, as after Lambda's 202.
    await Promise.resolve();
    if (options.signal?.aborted) return;
    for (let retryMs = THROTTLE_RETRY_FIRST_MS; running >= options.concurrency; retryMs = Math.min(2 * retryMs, THROTTLE_RETRY_MAX_MS)) {
      await wait(retryMs);
      if (options.signal?.aborted) return;
    }
    await invoke(event);
  };
  return {
    start(event) {
      if (options.signal?.aborted) return;
      const delivery = deliver(JSON.parse(JSON.stringify(event)) as Event);
      options.inFlight.add(delivery);
      void delivery.finally(() => options.inFlight.delete(delivery));
    },
  };
}

/** Refuses, as EventBridge does, a PutEvents request over its size limit, before it leaves the process. */
export function enforceEventBridgeLimits<Client extends SdkClient>(client: Client): Client {
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const entries = (args.input as { Entries?: PutEventsRequestEntry[] }).Entries;
      if (context.commandName === 'PutEventsCommand' && entries) {
        const bytes = entries.reduce((sum, entry) => sum + putEventsEntryBytes(entry), 0);
        if (bytes >= PUT_EVENTS_MAX_BYTES) {
          throw new EventBridgeServiceException({
            name: 'ValidationException',
            $fault: 'client',
            $metadata: { httpStatusCode: 400 },
            message: `Total size of the entries in the request is over the limit: ${bytes} bytes, and EventBridge takes less than ${PUT_EVENTS_MAX_BYTES}`,
          });
        }
      }
      return next(args);
    },
    { step: 'initialize', priority: 'high', name: 'localEventBridgeLimits', override: true },
  );
  return client;
}
