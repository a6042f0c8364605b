/** AWS's limits and async delivery, as the local runtime enforces and imitates them (infra/local/aws/limits.ts). */
import { EventBridgeClient, PutEventsCommand } from '@aws-sdk/client-eventbridge';
import { describe, expect, test, vi } from 'vitest';
import {
  createLocalAsyncInvoker,
  createLocalAsyncStarts,
  enforceEventBridgeLimits,
  LAMBDA_ASYNC_PAYLOAD_BYTES,
  workerDeliveryFrom,
  type WorkerDelivery,
} from '../../../../../infra/local/aws/limits.js';
import { PUT_EVENTS_MAX_BYTES, putEventsEntryBytes } from '../../../../../lib/aws/eventbridge.js';
import { FAILURE_DESTINATION_MAX_BYTES, FAILURE_RECORD_ENVELOPE_BYTES, MAX_WORKER_ERROR_RESPONSE_BYTES } from '../../../../../lib/queue/poll/worker-batches.js';
import { type WorkerBatch } from '../../../../../lib/domain/invocations.js';
import { runningJob } from '../../../../support/jobs.js';

const batchOfBytes = (bytes: number): WorkerBatch => {
  const empty: WorkerBatch = { jobs: [runningJob({ data: '' })], jobTypes: {} };
  return { ...empty, jobs: [runningJob({ data: 'x'.repeat(bytes - Buffer.byteLength(JSON.stringify(empty))) })] };
};

/** The worker's dead-letter queue takes the record of a failed batch up to this payload. */
const LARGEST_RECORDABLE_BATCH_BYTES = FAILURE_DESTINATION_MAX_BYTES - MAX_WORKER_ERROR_RESPONSE_BYTES - FAILURE_RECORD_ENVELOPE_BYTES;

function invokerWith(delivery: Partial<WorkerDelivery> = {}, random = () => 0.5, onError: (error: unknown) => void = () => undefined) {
  const runs: WorkerBatch[] = [];
  const inFlight = new Set<Promise<unknown>>();
  const stop = new AbortController();
  const invoker = createLocalAsyncInvoker(
    async (batch) => {
      runs.push(batch);
    },
    { delivery: { delayMs: 0, duplicate: false, throttledPercent: 0, throttleDelayMs: 0, ...delivery }, inFlight, signal: stop.signal, onError, random },
  );
  return { invoker, runs, inFlight, stop };
}

/** A function reserving `concurrency` executions, whose invocations run until the test ends them. */
function startsWith(concurrency: number) {
  const running = new Map<string, () => void>();
  const started: string[] = [];
  const inFlight = new Set<Promise<unknown>>();
  const stop = new AbortController();
  const starts = createLocalAsyncStarts<{ id: string }>(
    (event) => {
      started.push(event.id);
      return new Promise<void>((resolve) => running.set(event.id, resolve));
    },
    { concurrency, inFlight, signal: stop.signal, onError: () => undefined },
  );
  const end = (id: string): void => running.get(id)!();
  return { starts, started, end, inFlight, stop };
}

describe("Lambda's asynchronous invoke of a function with reserved concurrency (the poller, the sweeper)", () => {
  test('a start returns before the invocation runs, which then gets a copy of the event', async () => {
    const event = { id: 'tick' };
    let received: unknown;
    const inFlight = new Set<Promise<unknown>>();
    const starts = createLocalAsyncStarts(async (copy: { id: string }) => void (received = copy), { concurrency: 1, inFlight, onError: () => undefined });
    starts.start(event);
    expect(received).toBeUndefined();
    await Promise.all([...inFlight]);
    expect(received).toEqual(event);
    expect(received).not.toBe(event);
  });

  test('events within the reserved concurrency run at once, whether or not the earlier ones still run', async () => {
    const { starts, started } = startsWith(2);
    starts.start({ id: 'a' });
    starts.start({ id: 'b' });
    await new Promise(setImmediate);
    expect(started).toEqual(['a', 'b']);
  });

  test('an event beyond the reserved concurrency is throttled, and retried a second later once an execution is free', async () => {
    vi.useFakeTimers();
    try {
      const { starts, started, end } = startsWith(1);
      starts.start({ id: 'a' });
      starts.start({ id: 'throttled' });
      await vi.advanceTimersByTimeAsync(500);
      end('a');
      await vi.advanceTimersByTimeAsync(499);
      expect(started).toEqual(['a']);
      await vi.advanceTimersByTimeAsync(1);
      expect(started).toEqual(['a', 'throttled']);
    } finally {
      vi.useRealTimers();
    }
  });

  test('a throttled event is never dropped: it is retried at doubling intervals, at most 5 minutes apart, until it runs', async () => {
    vi.useFakeTimers();
    try {
      const { starts, started, end } = startsWith(1);
      starts.start({ id: 'a' });
      starts.start({ id: 'throttled' });
      // Retried 1, 3, 7, ..., 511 s after the start, then every 5 minutes: at 3 511 s, and next at 3 811 s.
      await vi.advanceTimersByTimeAsync(3_600_000);
      expect(started).toEqual(['a']);
      end('a');
      await vi.advanceTimersByTimeAsync(210_999);
      expect(started).toEqual(['a']);
      await vi.advanceTimersByTimeAsync(1);
      expect(started).toEqual(['a', 'throttled']);
    } finally {
      vi.useRealTimers();
    }
  });

  test('an event still throttled when the runtime stops is dropped, and nothing starts after', async () => {
    const { starts, started, end, inFlight, stop } = startsWith(1);
    starts.start({ id: 'a' });
    starts.start({ id: 'throttled' });
    await new Promise(setImmediate);
    stop.abort();
    starts.start({ id: 'late' });
    end('a');
    await Promise.all([...inFlight]);
    expect(started).toEqual(['a']);
    expect(inFlight.size).toBe(0);
  });
});

describe("Lambda's asynchronous invoke", () => {
  test('the largest batch whose on-failure record fits the dead-letter queue is accepted', async () => {
    const { invoker, runs, inFlight } = invokerWith();
    await invoker.invoke(batchOfBytes(LARGEST_RECORDABLE_BATCH_BYTES));
    await Promise.all([...inFlight]);
    expect(runs).toHaveLength(1);
  });

  test('a batch under 1 MB whose on-failure record would not fit the dead-letter queue is refused, reported and never runs', async () => {
    const errors: unknown[] = [];
    const { invoker, runs, inFlight } = invokerWith({}, () => 0.5, (error) => errors.push(error));
    const invoked = invoker.invoke(batchOfBytes(LARGEST_RECORDABLE_BATCH_BYTES + 1));
    await expect(invoked).rejects.toThrow(/on-failure record of up to 1048577 bytes, over the dead-letter queue's 1048576/);
    await Promise.all([...inFlight]);
    expect(runs).toEqual([]);
    expect(errors).toHaveLength(1);
  });

  test('a payload over 1 MB is refused with RequestTooLargeException naming the limit, and never runs', async () => {
    const { invoker, runs, inFlight } = invokerWith();
    await expect(invoker.invoke(batchOfBytes(LAMBDA_ASYNC_PAYLOAD_BYTES + 1))).rejects.toMatchObject({
      name: 'RequestTooLargeException',
      message: expect.stringContaining('smaller than 1048576 bytes'),
      $metadata: { httpStatusCode: 413 },
    });
    await Promise.all([...inFlight]);
    expect(runs).toEqual([]);
  });

  test('the worker gets a copy of the batch as it survives serialisation', async () => {
    const { invoker, runs, inFlight } = invokerWith();
    const batch: WorkerBatch = { jobs: [runningJob()], jobTypes: {} };
    await invoker.invoke(batch);
    await Promise.all([...inFlight]);
    expect(runs).toEqual([JSON.parse(JSON.stringify(batch))]);
    expect(runs[0]).not.toBe(batch);
  });
});

describe('late, throttled and duplicated delivery', () => {
  test('with a delivery delay the batch reaches the worker that much later', async () => {
    vi.useFakeTimers();
    try {
      const { invoker, runs } = invokerWith({ delayMs: 5_000 });
      await invoker.invoke({ jobs: [runningJob()], jobTypes: {} });
      await vi.advanceTimersByTimeAsync(4_999);
      expect(runs).toHaveLength(0);
      await vi.advanceTimersByTimeAsync(1);
      expect(runs).toHaveLength(1);
    } finally {
      vi.useRealTimers();
    }
  });

  test('a throttled invoke is delivered after the throttle delay on top, the others on time', async () => {
    vi.useFakeTimers();
    try {
      const draws = [0.1, 0.9];
      const { invoker, runs } = invokerWith({ throttledPercent: 50, throttleDelayMs: 60_000 }, () => draws.shift()!);
      await invoker.invoke({ jobs: [runningJob({ id: 'throttled' })], jobTypes: {} });
      await invoker.invoke({ jobs: [runningJob({ id: 'on-time' })], jobTypes: {} });
      await vi.advanceTimersByTimeAsync(0);
      expect(runs.map((batch) => batch.jobs[0]?.id)).toEqual(['on-time']);
      await vi.advanceTimersByTimeAsync(60_000);
      expect(runs.map((batch) => batch.jobs[0]?.id)).toEqual(['on-time', 'throttled']);
    } finally {
      vi.useRealTimers();
    }
  });

  test('with duplicate delivery every batch reaches the worker twice', async () => {
    const { invoker, runs, inFlight } = invokerWith({ duplicate: true });
    await invoker.invoke({ jobs: [runningJob()], jobTypes: {} });
    await Promise.all([...inFlight]);
    expect(runs).toHaveLength(2);
    expect(runs[0]).toEqual(runs[1]);
  });

  test('a delivery still waiting when the runtime stops is dropped', async () => {
    const { invoker, runs, inFlight, stop } = invokerWith({ delayMs: 60_000 });
    await invoker.invoke({ jobs: [runningJob()], jobTypes: {} });
    stop.abort();
    await Promise.all([...inFlight]);
    expect(runs).toEqual([]);
  });

  test('the LOCAL_WORKER_* settings switch each on; unset, delivery is prompt and single', () => {
    expect(workerDeliveryFrom({})).toMatchObject({ delayMs: 0, duplicate: false, throttledPercent: 0 });
    expect(
      workerDeliveryFrom({
        LOCAL_WORKER_DELIVERY_DELAY_MS: '1500',
        LOCAL_WORKER_DUPLICATE_DELIVERY: 'true',
        LOCAL_WORKER_THROTTLED_PERCENT: '20',
        LOCAL_WORKER_THROTTLE_DELAY_MS: '90000',
      }),
    ).toEqual({ delayMs: 1500, duplicate: true, throttledPercent: 20, throttleDelayMs: 90_000 });
    expect(() => workerDeliveryFrom({ LOCAL_WORKER_DUPLICATE_DELIVERY: 'yes' })).toThrow(/LOCAL_WORKER_DUPLICATE_DELIVERY must be true or false, got "yes"/);
    expect(() => workerDeliveryFrom({ LOCAL_WORKER_THROTTLED_PERCENT: '150' })).toThrow(/LOCAL_WORKER_THROTTLED_PERCENT must be an integer from 0 to 100/);
  });
});

describe("what Lambda publishes about the worker's invokes", () => {
  /** An invoker whose worker throws when `fails`, recording what Lambda would publish. */
  function measuredInvoker(delivery: Partial<WorkerDelivery>, fails = false) {
    const published: string[] = [];
    const errors: unknown[] = [];
    const inFlight = new Set<Promise<unknown>>();
    const invoker = createLocalAsyncInvoker(
      async () => {
        if (fails) throw new Error('worker crashed');
      },
      {
        delivery: { delayMs: 0, duplicate: false, throttledPercent: 0, throttleDelayMs: 0, ...delivery },
        inFlight,
        onError: (error) => errors.push(error),
        metrics: { throttled: () => published.push('throttled'), delivered: (ageMs) => published.push(`delivered after ${ageMs} ms`), failed: () => published.push('failed') },
      },
    );
    return { invoker, published, errors, inFlight };
  }

  test("each delivery's age is the time from the invoke's acceptance to the worker's start", async () => {
    vi.useFakeTimers();
    try {
      const { invoker, published } = measuredInvoker({ delayMs: 2_000 });
      await invoker.invoke(batchOfBytes(1_000));
      await vi.advanceTimersByTimeAsync(2_000);
      expect(published).toEqual(['delivered after 2000 ms']);
    } finally {
      vi.useRealTimers();
    }
  });

  test('a throttled invoke counts as a throttle when invoked, and its delivery is older by the throttle delay', async () => {
    vi.useFakeTimers();
    try {
      const { invoker, published } = measuredInvoker({ throttledPercent: 100, throttleDelayMs: 5_000 });
      await invoker.invoke(batchOfBytes(1_000));
      expect(published).toEqual(['throttled']);
      await vi.advanceTimersByTimeAsync(5_000);
      expect(published).toEqual(['throttled', 'delivered after 5000 ms']);
    } finally {
      vi.useRealTimers();
    }
  });

  test('an invocation that throws counts as failed, and is reported as before', async () => {
    const { invoker, published, errors, inFlight } = measuredInvoker({}, true);
    await invoker.invoke(batchOfBytes(1_000));
    await Promise.all([...inFlight]);
    expect(published.filter((what) => !what.startsWith('delivered'))).toEqual(['failed']);
    expect(errors).toEqual([new Error('worker crashed')]);
  });
});

describe("EventBridge's PutEvents limit", () => {
  const client = () =>
    enforceEventBridgeLimits(new EventBridgeClient({ region: 'us-east-1', endpoint: 'http://127.0.0.1:9', credentials: { accessKeyId: 'local', secretAccessKey: 'local' }, maxAttempts: 1 }));
  const entryOfBytes = (bytes: number) => {
    const base = { Source: 'jobs', DetailType: 'job.due', Time: new Date(0) };
    return { ...base, Detail: 'x'.repeat(bytes - putEventsEntryBytes(base)) };
  };

  test('an entry is counted as EventBridge counts it: Time 14 bytes, the rest as UTF-8', () => {
    expect(putEventsEntryBytes({ Source: 'jobs', DetailType: 'é', Detail: '{}', Resources: ['arn'], Time: new Date(0) })).toBe(14 + 4 + 2 + 2 + 3);
  });

  test('a request of 256 KB or more is refused with ValidationException naming the limit, before it leaves the process', async () => {
    const refused = client().send(new PutEventsCommand({ Entries: [entryOfBytes(PUT_EVENTS_MAX_BYTES)] }));
    await expect(refused).rejects.toMatchObject({ name: 'ValidationException', message: expect.stringContaining(`less than ${PUT_EVENTS_MAX_BYTES}`) });
  });

  test('a request just under the limit goes on to EventBridge', async () => {
    // Nothing listens on the endpoint: getting as far as a connection error means the limit let it through.
    const sent = client().send(new PutEventsCommand({ Entries: [entryOfBytes(PUT_EVENTS_MAX_BYTES - 1)] }));
    await expect(sent).rejects.not.toMatchObject({ name: 'ValidationException' });
  });
});
