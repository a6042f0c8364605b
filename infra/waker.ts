/**
 * The waker in the stack: its timer queue, and what starts it, an event source mapping on the table's stream
 * filtered to lane entries written, and one on its timer queue (lib/queue/wake/wake-on-write.ts says what it does).
 */
import { Duration, Validations } from 'aws-cdk-lib';
import type { Table } from 'aws-cdk-lib/aws-dynamodb';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { FilterCriteria, StartingPosition } from 'aws-cdk-lib/aws-lambda';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import { WAKING_PARTITION_PREFIXES, WAKING_PARTITIONS } from '../lib/store/keys.js';
import { TABLE_SCHEMA } from '../lib/store/table.js';
import type { QueueFunction } from './queue-function.js';

/**
 * The waker's timeout: a wake item's read and hold, an asynchronous invoke and a timer's send, each bounded to a few
 * seconds (ASYNC_DELIVERY_CALL_LIMITS), with room; a batch that runs out is delivered again.
 */
export const WAKER_TIMEOUT_S = 30;

/** How the waker's mappings hand it records, here and in the local runtime (infra/local/waker.ts). */
export const WAKER_MAPPINGS = {
  /**
   * Stream records older than maxRecordAgeS are dropped, retried or not: by then a minute tick has found their
   * entries. Lambda's least.
   */
  stream: { batchSize: 100, retryAttempts: 5, maxRecordAgeS: 60 },
  /** Kept an hour at most: a timer is worth nothing once a minute tick has passed its due time. */
  timers: { batchSize: 10, retentionS: 3_600, visibilityTimeoutS: 6 * WAKER_TIMEOUT_S },
} as const;

/**
 * The waker's stream filter: due-index entries someone acts on (lane entries, schedules, running bulk operations)
 * put or changed, never removed ones, nor any other item. The local runtime applies the same
 * (infra/local/aws/table-stream.ts).
 */
export const WAKER_STREAM_FILTERS: Record<string, unknown>[] = [
  {
    eventName: ['INSERT', 'MODIFY'],
    dynamodb: { NewImage: { [TABLE_SCHEMA.dueIndex.partitionKey]: { S: [...WAKING_PARTITION_PREFIXES.map((prefix) => ({ prefix })), ...WAKING_PARTITIONS] } } },
  },
];

/** The waker's timers. Its visibility timeout outlasts the waker's, as Lambda asks of a queue it reads. */
export function createWakeTimerQueue(scope: Construct): Queue {
  const queue = new Queue(scope, 'WakeTimers', {
    encryption: QueueEncryption.SQS_MANAGED,
    enforceSSL: true,
    retentionPeriod: Duration.seconds(WAKER_MAPPINGS.timers.retentionS),
    visibilityTimeout: Duration.seconds(WAKER_MAPPINGS.timers.visibilityTimeoutS),
  });
  Validations.of(queue).acknowledge({
    id: 'AwsSolutions::AwsSolutions-SQS3',
    reason: 'A timer the waker cannot handle is only a wake that comes late: the minute tick finds the same work, so no message is worth keeping in a dead-letter queue.',
  });
  return queue;
}

/**
 * Starts `waker` from the table's stream and from its timer queue, which it and `timerSenders` (the poller and the
 * sweeper, arming a timer for the work they leave as they sleep) alone may send to.
 */
export function startWakerFrom(waker: QueueFunction, sources: { table: Table; timerQueue: Queue; timerSenders: QueueFunction[] }): void {
  const { table, timerQueue } = sources;
  for (const sender of [waker, ...sources.timerSenders]) {
    sender.function.addEnvironment('WAKE_TIMER_QUEUE_URL', timerQueue.queueUrl);
    timerQueue.grantSendMessages(sender.function);
  }
  // The mapping reads the stream with the waker's role: granted on this table's stream only (DynamoEventSource would
  // grant ListStreams on every resource).
  waker.role.addToPolicy(
    new PolicyStatement({
      actions: ['dynamodb:DescribeStream', 'dynamodb:GetRecords', 'dynamodb:GetShardIterator', 'dynamodb:ListStreams'],
      resources: [table.tableStreamArn!],
    }),
  );
  waker.function.addEventSourceMapping('TableStream', {
    eventSourceArn: table.tableStreamArn!,
    startingPosition: StartingPosition.LATEST,
    batchSize: WAKER_MAPPINGS.stream.batchSize,
    // A failing batch holds its shard back: split it to pass what can be handled, and drop what ticks will find.
    bisectBatchOnError: true,
    retryAttempts: WAKER_MAPPINGS.stream.retryAttempts,
    maxRecordAge: Duration.seconds(WAKER_MAPPINGS.stream.maxRecordAgeS),
    filters: WAKER_STREAM_FILTERS.map((pattern) => FilterCriteria.filter(pattern)),
  });
  waker.function.addEventSource(new SqsEventSource(timerQueue, { batchSize: WAKER_MAPPINGS.timers.batchSize }));
}
