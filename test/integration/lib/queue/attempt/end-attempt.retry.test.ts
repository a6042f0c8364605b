/** Retries against DynamoDB Local (invariants 1 and 2): policy delays, attempt limits, non-retryable failures, history. */
import { describe, expect, test, vi } from 'vitest';
import type { QueueContext } from '../../../../../lib/queue/context.js';
import { NonRetryableError, RetryAfterError } from '../../../../../lib/domain/errors.js';
import { MAX_WORKER_ATTEMPT_S } from '../../../../../lib/domain/limits.js';
import { getJob } from '../../../../../lib/queue/read-job.js';
import type { JobType } from '../../../../../lib/domain/job-type.js';
import type { WorkerIdentity } from '../../../../../lib/domain/job.js';
import type { CustomRetryPolicies } from '../../../../../lib/domain/retry.js';
import type { JobHandler } from '../../../../../lib/queue/attempt/run-batch.js';
import { RunningInvoker, T0, defineType, enqueue, freshQueuePerTest, poll } from '../../../../support/lib-fixtures.js';

const queue = freshQueuePerTest();

/** One poll that runs whatever is due through the real worker, as `worker`. */
async function runDue(
  ctx: QueueContext,
  jobType: JobType,
  handler: JobHandler,
  options: { worker?: WorkerIdentity; retryPolicies?: CustomRetryPolicies } = {},
): Promise<number> {
  const invoker = new RunningInvoker(ctx, { [jobType.name]: handler }, options.retryPolicies ?? {}, options.worker);
  const result = await poll(ctx, [jobType], invoker);
  expect(invoker.errors).toEqual([]);
  return result.claimed;
}

const failing: JobHandler = (_data, context) => {
  throw new Error(`boom on attempt ${context.job.attempt}`);
};

describe('retry until attempts are used up', () => {
  test('a failing handler is retried after the fixed delay until attempts are used up, then the job is failed', async () => {
    const { ctx, clock } = queue();
    const emails = await defineType(ctx, 'emails', { attempts: 3, retry: { kind: 'fixed', delay_s: 10 } });
    await enqueue(ctx, emails, 'e-1');
    const handler = vi.fn(failing);

    expect(await runDue(ctx, emails, handler, { worker: { id: 'w-1', host: 'host-1' } })).toBe(1);
    expect(await getJob(ctx, 'emails', 'e-1')).toMatchObject({ status: 'queued', attempt: 1, runAfterMs: T0 + 10_000 });

    clock.set(T0 + 9_999);
    expect(await runDue(ctx, emails, handler)).toBe(0);

    clock.set(T0 + 10_000);
    expect(await runDue(ctx, emails, handler, { worker: { id: 'w-2', host: 'host-2' } })).toBe(1);
    expect(await getJob(ctx, 'emails', 'e-1')).toMatchObject({ status: 'queued', attempt: 2, runAfterMs: T0 + 20_000 });

    clock.set(T0 + 20_000);
    expect(await runDue(ctx, emails, handler, { worker: { id: 'w-3', host: 'host-3' } })).toBe(1);
    const job = await getJob(ctx, 'emails', 'e-1');
    expect(job).toMatchObject({ status: 'failed', attempt: 3, finishedAtMs: T0 + 20_000 });
    expect(handler).toHaveBeenCalledTimes(3);

    clock.set(T0 + 10 * 60_000);
    expect(await runDue(ctx, emails, handler)).toBe(0);
    expect(handler).toHaveBeenCalledTimes(3);
  });

  test('the history explains every attempt: when, what failed, and which worker on which host', async () => {
    const { ctx, clock } = queue();
    const emails = await defineType(ctx, 'emails', { attempts: 3, retry: { kind: 'fixed', delay_s: 10 } });
    await enqueue(ctx, emails, 'e-1');
    for (const n of [1, 2, 3]) {
      clock.set(T0 + (n - 1) * 10_000);
      await runDue(ctx, emails, failing, { worker: { id: `w-${n}`, host: `host-${n}` } });
    }

    const job = await getJob(ctx, 'emails', 'e-1');
    expect(job?.historyDropped).toBe(0);
    expect(job?.history).toHaveLength(3);
    job?.history.forEach((record, index) => {
      const n = index + 1;
      const at = T0 + index * 10_000;
      expect(record).toMatchObject({
        attempt: n,
        claimedAtMs: at,
        startedAtMs: at,
        endedAtMs: at,
        outcome: 'failed',
        error: { class: 'Error', message: `boom on attempt ${n}` },
        worker: { id: `w-${n}`, host: `host-${n}` },
      });
      expect(record.error?.trace).toContain(`boom on attempt ${n}`);
    });
  });

  test('a job with more attempts than the history holds keeps the last 25 and counts the dropped ones', async () => {
    const { ctx } = queue();
    const emails = await defineType(ctx, 'emails', { attempts: 30, retry: { kind: 'fixed', delay_s: 0 } });
    await enqueue(ctx, emails, 'e-1');
    for (let attempt = 1; attempt <= 30; attempt++) expect(await runDue(ctx, emails, failing)).toBe(1);
    const job = await getJob(ctx, 'emails', 'e-1');
    expect(job).toMatchObject({ status: 'failed', attempt: 30, historyDropped: 5 });
    expect(job?.history.map((record) => record.attempt)).toEqual(Array.from({ length: 25 }, (_, i) => i + 6));
  });

  test('exponential retry moves run_after forward by base * factor^(attempt - 1)', async () => {
    const { ctx, clock } = queue();
    const emails = await defineType(ctx, 'emails', {
      attempts: 4,
      retry: { kind: 'exponential', base_s: 2, factor: 3, max_s: 3_600 },
    });
    await enqueue(ctx, emails, 'e-1');
    const delays: number[] = [];
    for (let attempt = 1; attempt <= 3; attempt++) {
      const ranAt = clock.nowMs();
      expect(await runDue(ctx, emails, failing)).toBe(1);
      const job = await getJob(ctx, 'emails', 'e-1');
      delays.push(job!.runAfterMs - ranAt);
      clock.set(job!.runAfterMs);
    }
    expect(delays).toEqual([2_000, 6_000, 18_000]);
  });

  test('a handler that succeeds on a retry ends the job succeeded with the failures in its history', async () => {
    const { ctx, clock } = queue();
    const emails = await defineType(ctx, 'emails', { attempts: 3, retry: { kind: 'fixed', delay_s: 1 } });
    await enqueue(ctx, emails, 'e-1');
    const flaky: JobHandler = (_data, context) => {
      if (context.job.attempt < 2) throw new Error('flaky');
      return 'done';
    };
    await runDue(ctx, emails, flaky);
    clock.advance(1_000);
    await runDue(ctx, emails, flaky);
    const job = await getJob(ctx, 'emails', 'e-1');
    expect(job).toMatchObject({ status: 'succeeded', attempt: 2, result: 'done' });
    expect(job?.history.map((record) => record.outcome)).toEqual(['failed', 'succeeded']);
  });
});

describe('attempt timeout', () => {
  // The attempt timeout is a real timer inside the worker, so this one test waits a real second.
  test('a handler still running at timeout_s fails the attempt with TimeoutError, aborts its signal, and is retried', async () => {
    const { ctx } = queue();
    const slow = await defineType(ctx, 'slow', { timeout_s: 1, attempts: 2, retry: { kind: 'fixed', delay_s: 3 } });
    await enqueue(ctx, slow, 's-1');
    let signal: AbortSignal | undefined;
    await runDue(ctx, slow, (_data, context) => {
      signal = context.signal;
      return new Promise(() => {});
    });
    expect(signal?.aborted).toBe(true);
    const job = await getJob(ctx, 'slow', 's-1');
    expect(job).toMatchObject({ status: 'queued', attempt: 1, runAfterMs: T0 + 3_000 });
    expect(job?.history[0]).toMatchObject({ outcome: 'failed', error: { class: 'TimeoutError' } });
  });
});

describe('a handler that runs as long as a worker function can', () => {
  test('is cut at the most a worker function can give it, though its timeout_s allows a longer callback wait', async () => {
    const { ctx } = queue();
    // Long enough for a callback wait; the run itself must end before Lambda stops the worker.
    const patient = await defineType(ctx, 'patient', { timeout_s: 3_600, visibility_timeout_s: 3_600, attempts: 2, retry: { kind: 'fixed', delay_s: 3 } });
    await enqueue(ctx, patient, 'p-1');
    let started = false;
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      const ran = runDue(ctx, patient, () => {
        started = true;
        return new Promise(() => {});
      });
      await vi.waitFor(() => expect(started).toBe(true));
      await vi.advanceTimersByTimeAsync(MAX_WORKER_ATTEMPT_S * 1000);
      await ran;
    } finally {
      vi.useRealTimers();
    }
    const job = await getJob(ctx, 'patient', 'p-1');
    expect(job).toMatchObject({ status: 'queued', attempt: 1 });
    expect(job?.history[0]).toMatchObject({ outcome: 'failed', error: { class: 'TimeoutError', message: expect.stringContaining(`longer than ${MAX_WORKER_ATTEMPT_S} s`) } });
  });
});

describe('failures that are not retried', () => {
  test('a NonRetryableError ends the job failed after 1 attempt even with attempts 5', async () => {
    const { ctx, clock } = queue();
    const charge = await defineType(ctx, 'charge', { attempts: 5, retry: { kind: 'fixed', delay_s: 1 } });
    await enqueue(ctx, charge, 'c-1');
    const handler = vi.fn(() => {
      throw new NonRetryableError('card declined');
    });
    await runDue(ctx, charge, handler);

    const job = await getJob(ctx, 'charge', 'c-1');
    expect(job).toMatchObject({ status: 'failed', attempt: 1, maxAttempts: 5 });
    expect(job?.history).toEqual([
      expect.objectContaining({ outcome: 'failed', error: expect.objectContaining({ class: 'NonRetryableError', message: 'card declined' }) }),
    ]);

    clock.advance(60_000);
    await runDue(ctx, charge, handler);
    expect(handler).toHaveBeenCalledTimes(1);
  });

  test('retry_on: an error class outside the list fails the job at once', async () => {
    const { ctx } = queue();
    const emails = await defineType(ctx, 'emails', {
      attempts: 5,
      retry: { kind: 'fixed', delay_s: 1, retry_on: ['TimeoutError'] },
    });
    await enqueue(ctx, emails, 'e-1');
    await enqueue(ctx, emails, 'e-2');
    await runDue(ctx, emails, (data) => {
      const error = new Error('x');
      error.name = (data as { id: string }).id === 'e-1' ? 'TimeoutError' : 'TypeError';
      throw error;
    });
    expect(await getJob(ctx, 'emails', 'e-1')).toMatchObject({ status: 'queued', attempt: 1 });
    expect(await getJob(ctx, 'emails', 'e-2')).toMatchObject({ status: 'failed', attempt: 1 });
  });

  test('one job failing in a batch does not affect the others', async () => {
    const { ctx } = queue();
    const emails = await defineType(ctx, 'emails', { retry: { kind: 'none' } });
    for (const id of ['ok-1', 'bad', 'ok-2']) await enqueue(ctx, emails, id);
    await runDue(ctx, emails, (data) => {
      if ((data as { id: string }).id === 'bad') throw new Error('bad data');
      return 'fine';
    });
    expect((await getJob(ctx, 'emails', 'ok-1'))?.status).toBe('succeeded');
    expect((await getJob(ctx, 'emails', 'ok-2'))?.status).toBe('succeeded');
    expect((await getJob(ctx, 'emails', 'bad'))?.status).toBe('failed');
  });

  test('retry none: one failure ends the job failed', async () => {
    const { ctx } = queue();
    const emails = await defineType(ctx, 'emails', { attempts: 5, retry: { kind: 'none' } });
    await enqueue(ctx, emails, 'e-1');
    await runDue(ctx, emails, failing);
    expect(await getJob(ctx, 'emails', 'e-1')).toMatchObject({ status: 'failed', attempt: 1 });
  });
});

describe('delays chosen by the handler or the worker code', () => {
  test('a RetryAfterError sets the next run_after to its delay, not the policy delay', async () => {
    const { ctx } = queue();
    const emails = await defineType(ctx, 'emails', { retry: { kind: 'fixed', delay_s: 5 } });
    await enqueue(ctx, emails, 'e-1');
    await runDue(ctx, emails, () => {
      throw new RetryAfterError('rate limited', 42_000);
    });
    const job = await getJob(ctx, 'emails', 'e-1');
    expect(job).toMatchObject({ status: 'queued', runAfterMs: T0 + 42_000 });
    expect(job?.history[0]?.error?.class).toBe('RetryAfterError');
  });

  test('a custom retry policy from the worker registry decides the delay', async () => {
    const { ctx } = queue();
    const emails = await defineType(ctx, 'emails', { attempts: 3, retry: { kind: 'custom', name: 'slow-then-give-up' } });
    await enqueue(ctx, emails, 'e-1');
    const policy = vi.fn(({ attempt }: { attempt: number }) => ({ retry: true, delayMs: attempt * 7_000 }));
    await runDue(ctx, emails, failing, { retryPolicies: { 'slow-then-give-up': policy } });

    expect(policy).toHaveBeenCalledTimes(1);
    expect(policy).toHaveBeenCalledWith(
      expect.objectContaining({
        attempt: 1,
        job: expect.objectContaining({ id: 'e-1' }),
        failure: expect.objectContaining({ error: expect.objectContaining({ message: 'boom on attempt 1' }) }),
      }),
    );
    expect(await getJob(ctx, 'emails', 'e-1')).toMatchObject({ status: 'queued', runAfterMs: T0 + 7_000 });
  });

  test('a custom policy the worker does not know means no retry', async () => {
    const { ctx } = queue();
    const emails = await defineType(ctx, 'emails', { attempts: 3, retry: { kind: 'custom', name: 'missing' } });
    await enqueue(ctx, emails, 'e-1');
    await runDue(ctx, emails, failing);
    expect(await getJob(ctx, 'emails', 'e-1')).toMatchObject({ status: 'failed', attempt: 1 });
  });

  test('a retry that would fall on or after expires_at ends the job expired instead', async () => {
    const { ctx } = queue();
    const emails = await defineType(ctx, 'emails', { attempts: 3, retry: { kind: 'fixed', delay_s: 60 } });
    await enqueue(ctx, emails, 'e-1', { expiresAtMs: T0 + 60_000 });
    await runDue(ctx, emails, failing);
    const job = await getJob(ctx, 'emails', 'e-1');
    expect(job).toMatchObject({ status: 'expired', attempt: 1, finishedAtMs: T0 });
    expect(job?.history[0]).toMatchObject({ outcome: 'failed', error: { message: 'boom on attempt 1' } });
  });
});
