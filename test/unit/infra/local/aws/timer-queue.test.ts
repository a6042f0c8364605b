/** The local timer queue (infra/local/aws/timer-queue.ts): SQS's delayed messages and redelivery, through the SDK's own client. */
import { SendMessageBatchCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import { afterEach, beforeEach, expect, test, vi } from 'vitest';
import { createTimerQueue, type TimerQueueOptions } from '../../../../../infra/local/aws/timer-queue.js';

const QUEUE_URL = 'https://sqs.us-east-1.amazonaws.com/000000000000/timers';
let stop: AbortController;
beforeEach(() => {
  vi.useFakeTimers();
  stop = new AbortController();
});
afterEach(() => {
  stop.abort();
  vi.useRealTimers();
});

function queueWith(options: Partial<TimerQueueOptions> = {}) {
  const bodies: string[][] = [];
  const queue = createTimerQueue({
    region: 'us-east-1',
    handle: async (event) => void bodies.push((event.Records as { body: string }[]).map((record) => record.body)),
    inFlight: new Set(),
    onError: () => undefined,
    signal: stop.signal,
    batchSize: 10,
    visibilityTimeoutMs: 180_000,
    retentionMs: 3_600_000,
    ...options,
  });
  return { queue, bodies };
}

test('holds each message for its DelaySeconds, then hands it to the function', async () => {
  const { queue, bodies } = queueWith();
  await queue.client.send(new SendMessageBatchCommand({ QueueUrl: QUEUE_URL, Entries: [{ Id: '0', MessageBody: 'later', DelaySeconds: 20 }, { Id: '1', MessageBody: 'soon', DelaySeconds: 5 }] }));
  await vi.advanceTimersByTimeAsync(19_999);
  expect(bodies).toEqual([['soon']]);
  // Handed on the timers' next turn, so those due at the same moment go together.
  await vi.advanceTimersByTimeAsync(2);
  expect(bodies).toEqual([['soon'], ['later']]);
  expect(queue.pending()).toBe(0);
});

test('hands the messages visible together as one batch', async () => {
  const { queue, bodies } = queueWith();
  await queue.client.send(new SendMessageBatchCommand({ QueueUrl: QUEUE_URL, Entries: ['a', 'b', 'c'].map((body, at) => ({ Id: String(at), MessageBody: body, DelaySeconds: 3 })) }));
  await vi.advanceTimersByTimeAsync(3_001);
  expect(bodies).toEqual([['a', 'b', 'c']]);
});

test('hands a batch whose handling failed again after the visibility timeout', async () => {
  let failures = 1;
  const handled: number[] = [];
  const { queue } = queueWith({
    handle: async () => {
      handled.push(Date.now());
      if (failures-- > 0) throw new Error('the waker failed');
    },
  });
  const sentAtMs = Date.now();
  await queue.client.send(new SendMessageCommand({ QueueUrl: QUEUE_URL, MessageBody: 'again' }));
  await vi.advanceTimersByTimeAsync(180_002);
  expect(handled).toHaveLength(2);
  expect(handled[0]! - sentAtMs).toBeLessThan(10);
  expect(handled[1]! - handled[0]!).toBeGreaterThanOrEqual(180_000);
  expect(queue.pending()).toBe(0);
});

test('drops a message its retention outlived', async () => {
  const { queue, bodies } = queueWith({ handle: async () => Promise.reject(new Error('always')), retentionMs: 60_000, visibilityTimeoutMs: 30_000 });
  await queue.client.send(new SendMessageCommand({ QueueUrl: QUEUE_URL, MessageBody: 'stale' }));
  await vi.advanceTimersByTimeAsync(120_000);
  expect(bodies).toEqual([]);
  expect(queue.pending()).toBe(0);
});

test('refuses a delay past 15 minutes, as SQS does', async () => {
  const { queue } = queueWith();
  await expect(queue.client.send(new SendMessageCommand({ QueueUrl: QUEUE_URL, MessageBody: 'x', DelaySeconds: 901 }))).rejects.toThrow('DelaySeconds');
});

test('loses a message when told to, saying which, and hands one twice when told to', async () => {
  const draws = [0, 1, 0];
  const lost: string[] = [];
  const { queue, bodies } = queueWith({ lose: 0.5, onLost: (body) => void lost.push(body), duplicate: 0.5, random: () => draws.shift() ?? 1 });
  await queue.client.send(new SendMessageCommand({ QueueUrl: QUEUE_URL, MessageBody: 'lost' }));
  await queue.client.send(new SendMessageCommand({ QueueUrl: QUEUE_URL, MessageBody: 'twice' }));
  await vi.advanceTimersByTimeAsync(1);
  expect(bodies.flat()).toEqual(['twice', 'twice']);
  expect(lost).toEqual(['lost']);
});

test('hands each sender a client of its own, every one sending to the same queue', async () => {
  const { queue, bodies } = queueWith();
  const [waker, poller] = [queue.client, queue.client];
  expect(waker).not.toBe(poller);
  await waker.send(new SendMessageCommand({ QueueUrl: QUEUE_URL, MessageBody: 'from the waker' }));
  await poller.send(new SendMessageCommand({ QueueUrl: QUEUE_URL, MessageBody: 'from the poller' }));
  await vi.advanceTimersByTimeAsync(1);
  expect(bodies.flat()).toEqual(['from the waker', 'from the poller']);
});

test('a message sent once the runtime began stopping is dropped, and holds nothing in flight for stop to wait on', async () => {
  const inFlight = new Set<Promise<unknown>>();
  const { queue, bodies } = queueWith({ inFlight });
  stop.abort();
  await queue.client.send(new SendMessageCommand({ QueueUrl: QUEUE_URL, MessageBody: 'too late', DelaySeconds: 60 }));
  expect(inFlight.size).toBe(0);
  await vi.advanceTimersByTimeAsync(61_000);
  expect(bodies).toEqual([]);
});
