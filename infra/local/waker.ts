/**
 * The waker function and what starts it as the stack does: the table's stream, through its event source mapping's
 * filters, and its timers, through a queue (./aws/table-stream.ts, ./aws/timer-queue.ts). Its reads of the stream and
 * its sends of timers meet its role. The local runtime runs it so, and the fault suite with faulty clients.
 */
import { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import { createWakerHandler } from '../../functions/waker/app.js';
import { log } from '../../functions/shared/log.js';
import { createSqsWakeTimers, type SQSClient } from '../../lib/aws/sqs.js';
import type { WakeTimers } from '../../lib/domain/invocations.js';
import type { QueueFunctionName } from '../queue-function.js';
import type { QueueContext } from '../../lib/queue/context.js';
import { createDynamoClients, dynamoClientConfig, type DynamoClientOptions } from '../../lib/store/client.js';
import { WAKER_MAPPINGS, WAKER_STREAM_FILTERS } from '../waker.js';
import type { LocalIam } from './aws/iam/local-iam.js';
import { streamReadRequests } from './aws/iam/requests.js';
import { startTableStream, type TableStream, type TableStreamOptions } from './aws/table-stream.js';
import { createTimerQueue, type TimerQueueOptions } from './aws/timer-queue.js';

export interface LocalWakerOptions {
  iam: LocalIam;
  /** The waker's queue context: its own role's clients, and what wakes the poller and the sweeper. */
  ctx: QueueContext;
  clientOptions: DynamoClientOptions;
  tableName: string;
  inFlight: Set<Promise<unknown>>;
  signal: AbortSignal;
  /** One invocation of the waker with a batch (the runtime's: its timeout and REPORT line). */
  invoke: (run: () => Promise<void>, source: 'stream' | 'timers', records: number) => Promise<unknown>;
  /** A read or a batch that failed, to be read or handed again; logged when not given. */
  onError?: (error: unknown, during: 'stream read' | 'stream batch' | 'timers batch') => void;
  /**
   * How the stream's mapping misbehaves (LOCAL_STREAM_DELAY_MS, the fault suite): records handed later than
   * DynamoDB Local's stream has them, batches handed twice; prompt and once by default.
   */
  stream?: Pick<TableStreamOptions, 'delayMs' | 'duplicate' | 'random' | 'onExpired'>;
  /** How the timer queue misbehaves (the fault suite): messages lost, or handed twice; none by default. */
  timers?: Pick<TimerQueueOptions, 'lose' | 'onLost' | 'duplicate' | 'random'>;
}

export interface LocalWaker {
  /** Timers sent by `fn` (the poller, the sweeper), under its role, to the waker's queue. */
  timersFor: (fn: QueueFunctionName) => WakeTimers;
  /** The stream's mapping: paused, it hands nothing until resumed, then what waited, past those too old. */
  stream: Pick<TableStream, 'pause' | 'resume'>;
  stop: () => Promise<void>;
}

/** Starts both sources; resolves once the stream is read from its latest record. */
export async function startLocalWaker(options: LocalWakerOptions): Promise<LocalWaker> {
  const { iam, signal } = options;
  const { policies } = iam.check;
  const onError = options.onError ?? ((error, during) => log('error', `waker: a ${during} failed; it is read or handed again`, { error }));
  const run = (source: 'stream' | 'timers') => (event: { Records: unknown[] }) => options.invoke(() => handler(event), source, event.Records.length);
  const timerQueue = createTimerQueue({
    region: policies.account.region,
    handle: run('timers'),
    inFlight: options.inFlight,
    signal,
    batchSize: WAKER_MAPPINGS.timers.batchSize,
    visibilityTimeoutMs: WAKER_MAPPINGS.timers.visibilityTimeoutS * 1000,
    retentionMs: WAKER_MAPPINGS.timers.retentionS * 1000,
    onError: (error) => onError(error, 'timers batch'),
    ...options.timers,
  });
  const senders: SQSClient[] = [];
  const timersFor = (fn: QueueFunctionName): WakeTimers => {
    const sender = iam.sdkClientFor(fn, timerQueue.client, 'SQS');
    senders.push(sender);
    return createSqsWakeTimers(sender, policies.wakeTimerQueueUrl);
  };
  const handler = createWakerHandler({ ctx: options.ctx, timers: timersFor('waker') });
  const tables = createDynamoClients(options.clientOptions).base;
  const streams = new DynamoDBStreamsClient(dynamoClientConfig(options.clientOptions));
  const stream = startTableStream({
    tables,
    streams,
    tableName: options.tableName,
    filters: WAKER_STREAM_FILTERS,
    ...WAKER_MAPPINGS.stream,
    authorize: () => iam.check.forFunction('waker').authorize(streamReadRequests(policies.arns.tableStream)),
    handle: run('stream'),
    onError: (error, during) => onError(error, during === 'read' ? 'stream read' : 'stream batch'),
    signal,
    ...options.stream,
  });
  await stream.ready;
  return {
    timersFor,
    stream,
    stop: async () => {
      await stream.stopped;
      for (const client of [tables, streams, ...senders]) client.destroy();
    },
  };
}
