/**
 * The waker's timer queue, done locally as SQS and Lambda's mapping on it behave: an SQS client whose
 * SendMessage(Batch) calls are answered in process (after the IAM check the client carries), each message held
 * for its DelaySeconds, then handed to the function in a batch of those visible together (at most `batchSize`);
 * a batch whose handling fails comes back after the queue's visibility timeout, until its retention ends
 * (at-least-once). `lose` drops a share of messages and `duplicate` hands a share twice, as the fault suite asks.
 *
 * Not sqslite from the npm registry: its last release (2022) speaks SQS's query protocol only, and the SDK's
 * client-sqs has spoken the JSON protocol since 2023; no other emulator there runs without a JVM download.
 */
import { createHash, randomUUID } from 'node:crypto';
import { SQSClient, type SendMessageBatchRequestEntry } from '@aws-sdk/client-sqs';

export interface TimerQueueOptions {
  region: string;
  /** The function, with a batch of messages as Lambda's event carries them. */
  handle: (event: { Records: unknown[] }) => Promise<unknown>;
  /** Every delivery started or waiting; the runtime waits for them on stop. */
  inFlight: Set<Promise<unknown>>;
  onError: (error: unknown) => void;
  signal: AbortSignal;
  batchSize: number;
  visibilityTimeoutMs: number;
  retentionMs: number;
  lose?: number;
  /** Each message `lose` dropped, by its body: what the fault suite excuses as left to a tick. */
  onLost?: (body: string) => void;
  duplicate?: number;
  random?: () => number;
}

interface Message {
  messageId: string;
  body: string;
  sentAtMs: number;
  receiveCount: number;
}

export interface TimerQueue {
  /**
   * An SQS client whose sends land here, a new one each time it is read: each sending function wraps its own in
   * its IAM check (and the meter), where wrapping one client for several would leave it checked as the last only.
   */
  readonly client: SQSClient;
  /** Messages sent and not yet handled. */
  pending(): number;
}

/** A message as Lambda's SQS event carries it. */
const sqsRecordOf = (message: Message) => ({
  messageId: message.messageId,
  body: message.body,
  eventSource: 'aws:sqs',
  attributes: { ApproximateReceiveCount: String(message.receiveCount), SentTimestamp: String(message.sentAtMs) },
});

export function createTimerQueue(options: TimerQueueOptions): TimerQueue {
  const random = options.random ?? Math.random;
  let pending = 0;
  /** Messages visible now, handed together as one batch on the next turn. */
  let visible: Message[] = [];
  let flushing = false;

  const track = (work: Promise<unknown>): void => {
    options.inFlight.add(work);
    void work.finally(() => options.inFlight.delete(work));
  };

  const later = (ms: number, message: Message): void => {
    // Sent while the runtime stops (a poller giving its lease up as its run is cut): an abort that already happened
    // would never clear the wait, and stopping would wait for it, up to the longest delay.
    if (options.signal.aborted) return;
    track(
      new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          options.signal.removeEventListener('abort', cancel);
          becomeVisible(message);
          resolve();
        }, ms);
        const cancel = (): void => {
          clearTimeout(timer);
          resolve();
        };
        options.signal.addEventListener('abort', cancel, { once: true });
      }),
    );
  };

  const becomeVisible = (message: Message): void => {
    if (options.signal.aborted) return;
    if (Date.now() - message.sentAtMs > options.retentionMs) {
      pending--;
      return;
    }
    visible.push(message);
    if (!flushing) {
      flushing = true;
      // On the next turn of the timers: the messages due at the same moment are visible together, as one poll finds them.
      track(new Promise<void>((resolve) => setTimeout(() => void flush().finally(resolve), 0)));
    }
  };

  const flush = async (): Promise<void> => {
    flushing = false;
    const taken = visible;
    visible = [];
    for (let start = 0; start < taken.length; start += options.batchSize) {
      const batch = taken.slice(start, start + options.batchSize);
      for (const message of batch) message.receiveCount++;
      try {
        await options.handle({ Records: batch.map(sqsRecordOf) });
        pending -= batch.length;
      } catch (error) {
        options.onError(error);
        for (const message of batch) later(options.visibilityTimeoutMs, message);
      }
    }
  };

  const send = (entry: { MessageBody?: string | undefined; DelaySeconds?: number | undefined }): string => {
    const messageId = randomUUID();
    if (random() < (options.lose ?? 0)) {
      options.onLost?.(entry.MessageBody ?? '');
      return messageId;
    }
    const copies = random() < (options.duplicate ?? 0) ? 2 : 1;
    for (let copy = 0; copy < copies; copy++) {
      pending++;
      later((entry.DelaySeconds ?? 0) * 1000, { messageId, body: entry.MessageBody ?? '', sentAtMs: Date.now(), receiveCount: 0 });
    }
    return messageId;
  };

  return {
    get client() {
      return answeringClient(options.region, send);
    },
    pending: () => pending,
  };
}

/** An SQS client whose sends `send` answers, none of them reaching a network. */
function answeringClient(region: string, send: (entry: { MessageBody?: string | undefined; DelaySeconds?: number | undefined }) => string): SQSClient {
  const client = new SQSClient({ region, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
  client.middlewareStack.add(
    (_next, context) => async (args) => {
      const input = args.input as { Entries?: SendMessageBatchRequestEntry[]; MessageBody?: string; DelaySeconds?: number };
      if (context.commandName === 'SendMessageBatchCommand') {
        const entries = input.Entries ?? [];
        for (const entry of entries) checkDelay(entry.DelaySeconds);
        const successful = entries.map((entry) => ({ Id: entry.Id, MessageId: send(entry), MD5OfMessageBody: md5Of(entry.MessageBody) }));
        return { output: { Successful: successful, Failed: [], $metadata: {} }, response: {} } as never;
      }
      if (context.commandName === 'SendMessageCommand') {
        checkDelay(input.DelaySeconds);
        return { output: { MessageId: send(input), MD5OfMessageBody: md5Of(input.MessageBody), $metadata: {} }, response: {} } as never;
      }
      throw new Error(`the local timer queue answers SendMessage and SendMessageBatch only, not ${context.commandName}`);
    },
    { step: 'initialize', priority: 'low', name: 'localTimerQueue' },
  );
  return client;
}

/** SQS answers each body's MD5, which the SDK checks against what it sent. */
const md5Of = (body: string | undefined): string => createHash('md5').update(body ?? '').digest('hex');

/** SQS refuses a delay past 15 minutes. */
function checkDelay(delayS: number | undefined): void {
  if (delayS !== undefined && (!Number.isInteger(delayS) || delayS < 0 || delayS > 900)) {
    throw Object.assign(new Error(`Value ${delayS} for parameter DelaySeconds is invalid. Reason: must be between 0 and 900, if provided.`), { name: 'InvalidParameterValue' });
  }
}
