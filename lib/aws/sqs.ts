/** SQS: where the waker sends its timers, delayed messages that come back to it when work falls due (lib/queue/wake/wake-on-write.ts). */
import { SendMessageBatchCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { WakeTimers } from '../domain/invocations.js';

export type { SQSClient };

/** SendMessageBatch takes at most this many messages. */
const BATCH_MAX_MESSAGES = 10;

export function createSqsWakeTimers(client: SQSClient, queueUrl: string): WakeTimers {
  return {
    async arm(timers) {
      for (let start = 0; start < timers.length; start += BATCH_MAX_MESSAGES) {
        const chunk = timers.slice(start, start + BATCH_MAX_MESSAGES);
        const { Failed } = await client.send(
          new SendMessageBatchCommand({
            QueueUrl: queueUrl,
            Entries: chunk.map(({ timer, delayS }, at) => ({ Id: String(at), MessageBody: JSON.stringify(timer), DelaySeconds: delayS })),
          }),
        );
        if (Failed && Failed.length > 0) throw new Error(`${Failed.length} wake timers refused: ${Failed.map((failure) => failure.Code).join(', ')}`);
      }
    },
  };
}
