/**
 * Cancelling a job that has started (queue/attempt/cancel.ts cancelJob, queue/attempt/cancel.ts requestCancel): a running job's
 * worker sees the cancel on its batch's start record and aborts the attempt; a job awaiting its callback ends at
 * once; a cancel racing the job's own end has one outcome; a worker that died leaves the job to the sweeper,
 * which ends it cancelled, never queued again; slots go back once.
 */
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, test } from 'vitest';
import { fixedSecret } from '../../../../../lib/aws/secrets.js';
import { ConflictError } from '../../../../../lib/domain/errors.js';
import type { Job } from '../../../../../lib/domain/job.js';
import type { JobType } from '../../../../../lib/domain/job-type.js';
import type { WorkerInvoker } from '../../../../../lib/domain/invocations.js';
import type { WorkerBatch } from '../../../../../lib/domain/invocations.js';
import { completeFromCallback } from '../../../../../lib/queue/attempt/callbacks.js';
import { endAttempt } from '../../../../../lib/queue/attempt/end-attempt.js';
import type { QueueContext } from '../../../../../lib/queue/context.js';
import { getJob } from '../../../../../lib/queue/read-job.js';
import { cancelJob } from '../../../../../lib/queue/attempt/cancel.js';
import { sweepOnce } from '../../../../../lib/queue/sweep/sweep.js';
import { AWAIT_CALLBACK, JobCancelledError, runWorkerBatch, type BatchResult, type JobHandler, type WorkerOptions } from '../../../../../lib/queue/attempt/run-batch.js';
import { readInFlight } from '../../../../../lib/store/counters.js';
import { asFunction } from '../../../../support/queue.js';
import { defineType, DyingInvoker, enqueue, freshQueuePerTest, poll, RecordingInvoker, WORKER } from '../../../../support/lib-fixtures.js';
import { recordGetKeys } from '../../../../support/sdk-calls.js';
import { eventually } from '../../../../support/eventually.js';

const queue = freshQueuePerTest();
const KEY_ID = '3f9c0a1b2c3d4e5f';

/** Runs each batch through the real worker without waiting for it, so a test can cancel while its jobs run. */
class BackgroundInvoker implements WorkerInvoker {
  readonly runs: Promise<BatchResult>[] = [];
  constructor(
    private readonly ctx: QueueContext,
    private readonly handlers: Record<string, JobHandler>,
    private readonly options: Partial<WorkerOptions> = {},
  ) {}
  async invoke(batch: WorkerBatch): Promise<void> {
    this.runs.push(
      runWorkerBatch(asFunction(this.ctx, 'worker'), structuredClone(batch), {
        registry: { handlers: this.handlers, retryPolicies: {} },
        worker: WORKER,
        ...this.options,
      }),
    );
  }
  async results(): Promise<BatchResult[]> {
    return Promise.all(this.runs);
  }
}

/** A promise and its resolver, for a handler that tells the test it started, or waits to be let go. */
function signal<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((done) => (resolve = done));
  return { promise, resolve };
}

/** A handler that runs until its signal is aborted, recording the reason. */
function untilAborted(started: { resolve: () => void }, reasons: unknown[]): JobHandler {
  return (_data, context) =>
    new Promise((_, reject) => {
      context.signal.addEventListener('abort', () => {
        reasons.push(context.signal.reason);
        reject(context.signal.reason as Error);
      });
      started.resolve();
    });
}

const api = () => asFunction(queue().ctx, 'api');
const sweep = () => sweepOnce(asFunction(queue().ctx, 'sweeper'), { customPolicies: {} });
const job = async (type: string, id: string): Promise<Job> => (await getJob(queue().ctx, type, id))!;

async function startRunning(type: JobType, handlers: Record<string, JobHandler>, options: Partial<WorkerOptions> = {}): Promise<BackgroundInvoker> {
  const invoker = new BackgroundInvoker(queue().ctx, handlers, options);
  expect((await poll(queue().ctx, [type], invoker)).claimed).toBe(1);
  return invoker;
}

describe('a running handler job', () => {
  test('a cancel is answered at once as cancelling: the job still runs, with cancel_requested_at and who asked', async () => {
    const { ctx } = queue();
    const type = await defineType(ctx, 'reports');
    await enqueue(ctx, type, 'r-1');
    const started = signal();
    const invoker = await startRunning(type, { reports: untilAborted(started, []) });
    await started.promise;
    const answer = await cancelJob(api(), 'reports', 'r-1', KEY_ID);
    expect(answer.state).toBe('cancelling');
    expect(answer.job).toMatchObject({ status: 'running', cancelledBy: KEY_ID, cancelRequestedAtMs: ctx.nowMs() });
    await invoker.results();
  });

  test('its handler’s signal is aborted with a JobCancelledError naming who cancelled it', async () => {
    const { ctx } = queue();
    const type = await defineType(ctx, 'reports');
    await enqueue(ctx, type, 'r-1');
    const started = signal();
    const reasons: unknown[] = [];
    const invoker = await startRunning(type, { reports: untilAborted(started, reasons) });
    await started.promise;
    await cancelJob(api(), 'reports', 'r-1', KEY_ID);
    await invoker.results();
    expect(reasons).toHaveLength(1);
    expect(reasons[0]).toBeInstanceOf(JobCancelledError);
    expect(reasons[0]).toMatchObject({ by: KEY_ID, message: `job "r-1" was cancelled by ${KEY_ID}` });
  });

  test('it ends cancelled, not retried, its history saying who cancelled it', async () => {
    const { ctx } = queue();
    const type = await defineType(ctx, 'reports', { attempts: 5 });
    await enqueue(ctx, type, 'r-1');
    const started = signal();
    const invoker = await startRunning(type, { reports: untilAborted(started, []) });
    await started.promise;
    await cancelJob(api(), 'reports', 'r-1', KEY_ID);
    const [result] = await invoker.results();
    expect(result).toMatchObject({ cancelled: 1, failed: 0, retrying: 0, stale: 0 });
    const ended = await job('reports', 'r-1');
    expect(ended).toMatchObject({ status: 'cancelled', attempt: 1, cancelledBy: KEY_ID, finishedAtMs: ctx.nowMs() });
    expect(ended.cancelRequestedAtMs).toBeUndefined();
    expect(ended.claimToken).toBeUndefined();
    expect(ended.history).toEqual([
      expect.objectContaining({ attempt: 1, outcome: 'cancelled', error: { class: 'JobCancelledError', message: `cancelled by ${KEY_ID}` }, worker: WORKER }),
    ]);
    queue().clock.advance(60_000);
    expect((await poll(ctx, [type], new RecordingInvoker())).claimed).toBe(0);
  });

  test('the slots it held are given back once', async () => {
    const { ctx } = queue();
    const type = await defineType(ctx, 'limited', { concurrency: 2 });
    await enqueue(ctx, type, 'l-1', { weight: 2 });
    const started = signal();
    const invoker = await startRunning(type, { limited: untilAborted(started, []) });
    await started.promise;
    expect((await readInFlight(ctx, 'limited', [])).type).toBe(2);
    await cancelJob(api(), 'limited', 'l-1', KEY_ID);
    await invoker.results();
    expect((await readInFlight(ctx, 'limited', [])).type).toBe(0);
    await sweep();
    expect((await readInFlight(ctx, 'limited', [])).type).toBe(0);
  });

  test('a second cancel while it is being cancelled is answered cancelling again and keeps the first canceller', async () => {
    const { ctx } = queue();
    const type = await defineType(ctx, 'reports');
    await enqueue(ctx, type, 'r-1');
    const started = signal();
    const letGo = signal();
    // The watch is slowed down, so the worker does not end the job between the two cancels.
    const invoker = await startRunning(type, { reports: async () => (started.resolve(), await letGo.promise) }, { cancelWatchIntervalMs: 60_000 });
    await started.promise;
    await cancelJob(api(), 'reports', 'r-1', KEY_ID);
    const again = await cancelJob(api(), 'reports', 'r-1', 'another-key');
    expect(again.state).toBe('cancelling');
    expect(again.job.cancelledBy).toBe(KEY_ID);
    letGo.resolve();
    await invoker.results();
    expect(await job('reports', 'r-1')).toMatchObject({ status: 'cancelled', cancelledBy: KEY_ID });
  });

  test('the worker reads no start record for a batch whose jobs end within the first watch interval', async () => {
    const { ctx } = queue();
    const type = await defineType(ctx, 'reports');
    await enqueue(ctx, type, 'r-1');
    const reads = recordGetKeys(queue().clientsOf('worker').base);
    const invoker = await startRunning(type, { reports: () => 'done' });
    expect(await invoker.results()).toEqual([expect.objectContaining({ succeeded: 1 })]);
    expect(reads).toEqual([]);
  });

  test('while a job runs past the watch interval, the worker reads its batch’s start record', async () => {
    const { ctx } = queue();
    const type = await defineType(ctx, 'reports');
    await enqueue(ctx, type, 'r-1');
    const reads = recordGetKeys(queue().clientsOf('worker').base);
    const started = signal();
    const letGo = signal();
    const invoker = await startRunning(type, { reports: async () => (started.resolve(), await letGo.promise) }, { cancelWatchIntervalMs: 50 });
    await started.promise;
    await eventually(async () => reads.length, (count) => count > 0);
    letGo.resolve();
    await invoker.results();
    expect(reads.length).toBeGreaterThan(0);
    expect(new Set(reads).size).toBe(1);
    expect(reads[0]).toMatch(/"pk":"START#/);
  });
});

describe('before its attempt starts', () => {
  test('a job cancelled after its claim but before its worker took it up never runs', async () => {
    const { ctx } = queue();
    const type = await defineType(ctx, 'reports');
    await enqueue(ctx, type, 'r-1');
    const recording = new RecordingInvoker();
    await poll(ctx, [type], recording);
    expect((await cancelJob(api(), 'reports', 'r-1', KEY_ID)).state).toBe('cancelling');
    let ran = false;
    const result = await runWorkerBatch(asFunction(ctx, 'worker'), recording.batches[0]!, {
      registry: { handlers: { reports: () => (ran = true) }, retryPolicies: {} },
      worker: WORKER,
    });
    expect(ran).toBe(false);
    expect(result.cancelled).toBe(1);
    expect(await job('reports', 'r-1')).toMatchObject({ status: 'cancelled', history: [expect.objectContaining({ outcome: 'cancelled', startedAtMs: null })] });
  });

  test('an at_most_once job cancelled before it started is never started', async () => {
    const { ctx } = queue();
    const type = await defineType(ctx, 'once', { delivery_strategy: 'at_most_once' });
    await enqueue(ctx, type, 'o-1');
    const recording = new RecordingInvoker();
    await poll(ctx, [type], recording);
    await cancelJob(api(), 'once', 'o-1', KEY_ID);
    let ran = false;
    await runWorkerBatch(asFunction(ctx, 'worker'), recording.batches[0]!, {
      registry: { handlers: { once: () => (ran = true) }, retryPolicies: {} },
      worker: WORKER,
    });
    expect(ran).toBe(false);
    expect((await job('once', 'o-1')).status).toBe('cancelled');
  });
});

describe('awaiting its callback', () => {
  async function awaiting(ctx: QueueContext, type: JobType, id: string): Promise<void> {
    await enqueue(ctx, type, id);
    const invoker = new BackgroundInvoker(ctx, { [type.name]: () => AWAIT_CALLBACK });
    await poll(ctx, [type], invoker);
    await invoker.results();
    expect((await job(type.name, id)).status).toBe('awaiting_callback');
  }

  test('a cancel ends it at once: answered cancelled, the history saying who', async () => {
    const { ctx } = queue();
    const type = await defineType(ctx, 'hooks', { concurrency: 1 });
    await awaiting(ctx, type, 'h-1');
    const answer = await cancelJob(api(), 'hooks', 'h-1', KEY_ID);
    expect(answer.state).toBe('cancelled');
    expect(answer.job).toMatchObject({ status: 'cancelled', cancelledBy: KEY_ID });
    expect(answer.job.history.at(-1)).toMatchObject({ outcome: 'cancelled', error: { class: 'JobCancelledError', message: `cancelled by ${KEY_ID}` } });
    expect((await readInFlight(ctx, 'hooks', [])).type).toBe(0);
  });

  test('a late callback gets the answer a callback for a finished job gets', async () => {
    const { ctx } = queue();
    const type = await defineType(ctx, 'hooks');
    await awaiting(ctx, type, 'h-1');
    await cancelJob(api(), 'hooks', 'h-1', KEY_ID);
    const late = completeFromCallback(api(), type, 'h-1', { status: 'succeeded', attempt: 1 }, {});
    await expect(late).rejects.toThrow(ConflictError);
    await expect(late).rejects.toThrow('attempt 1 is not open: job "h-1" is cancelled at attempt 1');
    expect((await job('hooks', 'h-1')).status).toBe('cancelled');
  });
});

describe('a cancel racing the job’s own end', () => {
  test('a cancel asked before the handler’s success was recorded wins: the job ends cancelled, its result not kept', async () => {
    const { ctx } = queue();
    const type = await defineType(ctx, 'reports');
    await enqueue(ctx, type, 'r-1');
    const started = signal();
    const letGo = signal();
    const handler: JobHandler = async () => {
      started.resolve();
      await letGo.promise;
      return { rows: 10 };
    };
    // The watch is slowed down, so the handler returns before the worker sees the cancel.
    const invoker = await startRunning(type, { reports: handler }, { cancelWatchIntervalMs: 60_000 });
    await started.promise;
    expect((await cancelJob(api(), 'reports', 'r-1', KEY_ID)).state).toBe('cancelling');
    letGo.resolve();
    const [result] = await invoker.results();
    expect(result).toMatchObject({ cancelled: 1, succeeded: 0 });
    const ended = await job('reports', 'r-1');
    expect(ended.status).toBe('cancelled');
    expect(ended.result).toBeUndefined();
    expect(ended.history.map((attempt) => attempt.outcome)).toEqual(['cancelled']);
  });

  test('cancels and ends sent at the same moment each come to one outcome, which both answers agree on', async () => {
    const { ctx } = queue();
    const type = await defineType(ctx, 'reports', { concurrency: 100 });
    const ids = Array.from({ length: 20 }, (_, index) => `r-${index}`);
    for (const id of ids) await enqueue(ctx, type, id);
    const recording = new RecordingInvoker();
    await poll(ctx, [type], recording);
    const claimedJobs = recording.jobs;
    expect(claimedJobs).toHaveLength(ids.length);
    const worker = asFunction(ctx, 'worker');
    const outcomes = await Promise.all(
      claimedJobs.map(async (claimedJob) => {
        const [cancel, end] = await Promise.allSettled([
          cancelJob(api(), 'reports', claimedJob.id, KEY_ID),
          endAttempt(worker, claimedJob, { ending: { outcome: 'succeeded', result: 1 }, jobType: type, customPolicies: {} }),
        ]);
        return { id: claimedJob.id, cancel, end };
      }),
    );
    for (const { id, cancel, end } of outcomes) {
      const stored = await job('reports', id);
      expect(end.status).toBe('fulfilled');
      const ended = end.status === 'fulfilled' ? end.value : undefined;
      expect(ended?.next.status).toBe(stored.status);
      if (stored.status === 'cancelled') {
        expect(cancel).toMatchObject({ status: 'fulfilled', value: { state: 'cancelling' } });
        expect(stored.result).toBeUndefined();
      } else {
        expect(stored.status).toBe('succeeded');
        expect(cancel.status).toBe('rejected');
        expect(cancel.status === 'rejected' ? String(cancel.reason) : '').toContain(`job "${id}" is succeeded`);
      }
    }
    expect((await readInFlight(ctx, 'reports', [])).type).toBe(0);
  });

  test('a cancel after the job succeeded is a conflict naming its status, and changes nothing', async () => {
    const { ctx } = queue();
    const type = await defineType(ctx, 'reports', { list_succeeded: true });
    await enqueue(ctx, type, 'r-1');
    const invoker = await startRunning(type, { reports: () => 'done' });
    await invoker.results();
    const before = await job('reports', 'r-1');
    const cancel = cancelJob(api(), 'reports', 'r-1', KEY_ID);
    await expect(cancel).rejects.toThrow(ConflictError);
    await expect(cancel).rejects.toThrow('job "r-1" is succeeded; only a job that has not finished can be cancelled');
    expect(await job('reports', 'r-1')).toEqual(before);
  });

  test('a callback for a running job whose cancel was asked is refused, saying the job was cancelled', async () => {
    const { ctx } = queue();
    const type = await defineType(ctx, 'hooks');
    await enqueue(ctx, type, 'h-1');
    await poll(ctx, [type], new DyingInvoker(ctx));
    await cancelJob(api(), 'hooks', 'h-1', KEY_ID);
    const callback = completeFromCallback(api(), type, 'h-1', { status: 'succeeded', attempt: 1 }, {});
    await expect(callback).rejects.toThrow('job "h-1" was cancelled while attempt 1 ran; its outcome is not kept');
    expect((await job('hooks', 'h-1')).status).toBe('cancelled');
  });
});

describe('a worker that died after the cancel', () => {
  test('the sweeper ends the job cancelled once its claim lapses, never queued again, its slots given back', async () => {
    const { ctx } = queue();
    const type = await defineType(ctx, 'reports', { concurrency: 3, attempts: 5 });
    await enqueue(ctx, type, 'r-1');
    await poll(ctx, [type], new DyingInvoker(ctx));
    await cancelJob(api(), 'reports', 'r-1', KEY_ID);
    queue().clock.advance(type.visibilityTimeoutS * 1000 + 1);
    expect(await sweep()).toMatchObject({ ended: 1, requeued: 0, released: 0 });
    const ended = await job('reports', 'r-1');
    expect(ended).toMatchObject({ status: 'cancelled', cancelledBy: KEY_ID });
    expect(ended.history).toEqual([expect.objectContaining({ outcome: 'cancelled', worker: WORKER, startedAtMs: expect.any(Number) })]);
    expect((await readInFlight(ctx, 'reports', [])).type).toBe(0);
    queue().clock.advance(60_000);
    expect((await poll(ctx, [type], new RecordingInvoker())).claimed).toBe(0);
  });

  test('a claim no worker took up is ended cancelled by the sweeper, not handed back', async () => {
    const { ctx } = queue();
    const type = await defineType(ctx, 'once', { delivery_strategy: 'at_most_once' });
    await enqueue(ctx, type, 'o-1');
    await poll(ctx, [type], new RecordingInvoker());
    await cancelJob(api(), 'once', 'o-1', KEY_ID);
    queue().clock.advance(type.visibilityTimeoutS * 1000 + 1);
    expect(await sweep()).toMatchObject({ ended: 1, released: 0 });
    expect(await job('once', 'o-1')).toMatchObject({ status: 'cancelled', history: [expect.objectContaining({ startedAtMs: null })] });
  });
});

describe('an http target', () => {
  let downstream: Server | undefined;
  afterEach(async () => {
    downstream?.closeAllConnections();
    if (downstream) await new Promise((resolve) => downstream!.close(resolve));
    downstream = undefined;
  });

  test('its request is aborted, and the job ends cancelled', async () => {
    const { ctx } = queue();
    const received = signal();
    const closed = signal();
    downstream = createServer((request) => {
      request.resume();
      // Never answers: the request stays open until the worker gives it up.
      request.socket.on('close', () => closed.resolve());
      received.resolve();
    });
    downstream.listen(0, '127.0.0.1');
    await once(downstream, 'listening');
    const url = `http://127.0.0.1:${(downstream.address() as AddressInfo).port}/jobs`;
    const type = await defineType(ctx, 'remote', { target: { kind: 'http', url, request_timeout_s: 300 }, timeout_s: 300 });
    await enqueue(ctx, type, 'x-1');
    const invoker = await startRunning(type, {}, { targets: { http: { apiBaseUrl: 'http://127.0.0.1:1', callbackTokenSecret: fixedSecret('secret') } } });
    await received.promise;
    expect((await cancelJob(api(), 'remote', 'x-1', KEY_ID)).state).toBe('cancelling');
    await closed.promise;
    const [result] = await invoker.results();
    expect(result).toMatchObject({ cancelled: 1 });
    expect(await job('remote', 'x-1')).toMatchObject({ status: 'cancelled', cancelledBy: KEY_ID });
  });
});

test('cancelling a finished job stays a conflict', async () => {
  const { ctx } = queue();
  const type = await defineType(ctx, 'reports');
  await enqueue(ctx, type, 'r-1');
  await cancelJob(api(), 'reports', 'r-1', KEY_ID);
  const again = cancelJob(api(), 'reports', 'r-1', 'another-key');
  await expect(again).rejects.toThrow('job "r-1" is cancelled; only a job that has not finished can be cancelled');
  expect((await job('reports', 'r-1')).cancelledBy).toBe(KEY_ID);
});
