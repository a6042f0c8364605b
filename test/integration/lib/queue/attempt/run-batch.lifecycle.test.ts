/**
 * A job's life against DynamoDB Local: due times (§4.7), claim, run, finish,
 * expiry, deferred callbacks, dispatch failure, stale writers (§4.3) and retention.
 */
import { QueryCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { describe, expect, test, vi } from 'vitest';
import { claimJob } from '../../../../../lib/queue/attempt/claim.js';
import { endAttempt } from '../../../../../lib/queue/attempt/end-attempt.js';
import { getJob } from '../../../../../lib/queue/read-job.js';
import { shardOf } from '../../../../../lib/store/keys.js';
import { sweepOnce } from '../../../../../lib/queue/sweep/sweep.js';
import { AWAIT_CALLBACK } from '../../../../../lib/queue/attempt/run-batch.js';
import { runWorkerBatch } from '../../../../../lib/queue/attempt/run-batch.js';
import {
  DyingInvoker,
  FailingInvoker,
  RecordingInvoker,
  RunningInvoker,
  T0,
  WORKER,
  defineType,
  enqueue,
  freshQueuePerTest,
  poll,
  readItem,
} from '../../../../support/lib-fixtures.js';
import { pollOnce } from '../../../../../lib/queue/poll/poll.js';
import { asFunction } from '../../../../support/queue.js';

const RETENTION_DAYS = 7;
const queue = freshQueuePerTest({ settings: { retentionDays: RETENTION_DAYS } });
const purgeAt = (finishedAtMs: number): number => Math.floor(finishedAtMs / 1000) + RETENTION_DAYS * 86_400;

describe('due time (invariant 7: never before run_after)', () => {
  test('a job enqueued with run_after in the past runs on the next poll', async () => {
    const { ctx } = queue();
    const emails = await defineType(ctx, 'emails');
    await enqueue(ctx, emails, 'e-1', { runAfterMs: T0 - 3_600_000 });

    const handler = vi.fn(() => 'sent');
    const result = await poll(ctx, [emails], new RunningInvoker(ctx, { emails: handler }));

    expect(result).toMatchObject({ claimed: 1, dispatched: 1, oldestDueLagMs: 3_600_000 });
    expect(handler).toHaveBeenCalledTimes(1);
    expect((await getJob(ctx, 'emails', 'e-1'))?.status).toBe('succeeded');
  });

  test('a job enqueued without run_after is due at once', async () => {
    const { ctx } = queue();
    const emails = await defineType(ctx, 'emails');
    await enqueue(ctx, emails, 'e-1');
    expect((await poll(ctx, [emails], new RecordingInvoker())).claimed).toBe(1);
  });

  test('a job due in 90 s is not claimed at +89.999 s and is claimed at +90 s', async () => {
    const { ctx, clock } = queue();
    const emails = await defineType(ctx, 'emails');
    await enqueue(ctx, emails, 'e-1', { runAfterMs: T0 + 90_000 });
    const invoker = new RecordingInvoker();

    for (const at of [0, 30_000, 60_000, 89_000, 89_999]) {
      clock.set(T0 + at);
      expect((await poll(ctx, [emails], invoker)).claimed, `poll at +${at} ms`).toBe(0);
    }
    expect((await getJob(ctx, 'emails', 'e-1'))?.status).toBe('queued');

    clock.set(T0 + 90_000);
    expect((await poll(ctx, [emails], invoker)).claimed).toBe(1);
    expect(invoker.jobs).toHaveLength(1);
    expect(invoker.jobs[0]).toMatchObject({ id: 'e-1', status: 'running', attempt: 1, claimedAtMs: T0 + 90_000 });
  });

  test('a direct claim before run_after is refused and changes nothing', async () => {
    const q = queue();
    const emails = await defineType(q.ctx, 'emails');
    await enqueue(q.ctx, emails, 'e-1', { runAfterMs: T0 + 90_000 });
    const before = await readItem(q, 'emails', 'e-1');
    q.clock.set(T0 + 89_999);
    expect(await claimJob(q.ctx, { type: 'emails', id: 'e-1' }, emails)).toEqual({ kind: 'lost' });
    expect(await readItem(q, 'emails', 'e-1')).toEqual(before);
  });

  test('a job of a paused type (concurrency 0) stays queued', async () => {
    const { ctx } = queue();
    const paused = await defineType(ctx, 'paused', { concurrency: 0 });
    await enqueue(ctx, paused, 'p-1');
    expect((await poll(ctx, [paused], new RecordingInvoker())).claimed).toBe(0);
    expect((await getJob(ctx, 'paused', 'p-1'))?.status).toBe('queued');
  });
});

describe('claim, run, finish', () => {
  test('a claim counts the attempt, sets a token and holds the job for the visibility timeout', async () => {
    const { ctx } = queue();
    const emails = await defineType(ctx, 'emails', { visibility_timeout_s: 45 });
    await enqueue(ctx, emails, 'e-1');
    const claim = await claimJob(ctx, { type: 'emails', id: 'e-1' }, emails);
    expect(claim.kind).toBe('claimed');
    if (claim.kind !== 'claimed') return;
    expect(claim.job).toMatchObject({ status: 'running', attempt: 1, claimedAtMs: T0, claimedUntilMs: T0 + 45_000 });
    expect(claim.job.claimToken).toEqual(expect.any(String));
    expect(await claimJob(ctx, { type: 'emails', id: 'e-1' }, emails)).toEqual({ kind: 'lost' });
  });

  test('a handler that returns a value ends the job succeeded, with the result and one history entry', async () => {
    const q = queue();
    const emails = await defineType(q.ctx, 'emails');
    await enqueue(q.ctx, emails, 'e-1', { data: { to: 'a@example.com' } });
    const handler = vi.fn((data: unknown) => ({ echoed: data }));
    await poll(q.ctx, [emails], new RunningInvoker(q.ctx, { emails: handler }));

    expect(handler).toHaveBeenCalledWith({ to: 'a@example.com' }, expect.objectContaining({ job: expect.any(Object) }));
    const job = await getJob(q.ctx, 'emails', 'e-1');
    expect(job).toMatchObject({
      status: 'succeeded',
      attempt: 1,
      result: { echoed: { to: 'a@example.com' } },
      finishedAtMs: T0,
      history: [{ attempt: 1, claimedAtMs: T0, startedAtMs: T0, endedAtMs: T0, outcome: 'succeeded', worker: WORKER }],
    });
    expect(job?.history[0]?.error).toBeUndefined();
    expect(job?.claimToken).toBeUndefined();
    expect(job?.claimedUntilMs).toBeUndefined();
    const item = await readItem(q, 'emails', 'e-1');
    expect(item?.gsi1pk).toBeUndefined();
  });

  test('a handler result over 64 KiB fails the job at once with ResultTooLargeError instead of storing it', async () => {
    const { ctx } = queue();
    const reports = await defineType(ctx, 'reports', { attempts: 3 });
    await enqueue(ctx, reports, 'r-1');
    await poll(ctx, [reports], new RunningInvoker(ctx, { reports: () => 'x'.repeat(64 * 1024) }));
    const job = await getJob(ctx, 'reports', 'r-1');
    expect(job).toMatchObject({ status: 'failed', attempt: 1 });
    expect(job?.result).toBeUndefined();
    expect(job?.history[0]?.error?.class).toBe('ResultTooLargeError');
  });

  test('a handler with no matching name fails the job at once with UnknownHandlerError', async () => {
    const { ctx } = queue();
    const orphan = await defineType(ctx, 'orphan', { attempts: 5 });
    await enqueue(ctx, orphan, 'o-1');
    await poll(ctx, [orphan], new RunningInvoker(ctx, {}));
    const job = await getJob(ctx, 'orphan', 'o-1');
    expect(job).toMatchObject({ status: 'failed', attempt: 1 });
    expect(job?.history[0]?.error?.class).toBe('UnknownHandlerError');
  });

  test('terminal jobs get purgeAtS = finish time + retention days; queued and running jobs have none', async () => {
    const q = queue();
    const emails = await defineType(q.ctx, 'emails', { retry: { kind: 'none' } });
    await enqueue(q.ctx, emails, 'ok');
    await enqueue(q.ctx, emails, 'bad');
    expect((await readItem(q, 'emails', 'ok'))?.purgeAtS).toBeUndefined();

    const recording = new RecordingInvoker();
    await poll(q.ctx, [emails], recording);
    expect((await readItem(q, 'emails', 'ok'))?.purgeAtS).toBeUndefined();

    q.clock.advance(12_345);
    await runWorkerBatch(q.as('worker'), recording.batches[0]!, {
      registry: {
        handlers: {
          emails: (data) => {
            if ((data as { id: string }).id === 'bad') throw new Error('nope');
            return 'fine';
          },
        },
        retryPolicies: {},
      },
      worker: WORKER,
    });

    for (const [id, status] of [['ok', 'succeeded'], ['bad', 'failed']] as const) {
      const item = await readItem(q, 'emails', id);
      expect(item).toMatchObject({ status, finishedAtMs: T0 + 12_345, purgeAtS: purgeAt(T0 + 12_345) });
    }
  });
});

describe('expires_at (invariant 7: never after expires_at)', () => {
  test('a job polled after its expires_at is archived expired without running', async () => {
    const q = queue();
    const emails = await defineType(q.ctx, 'emails');
    await enqueue(q.ctx, emails, 'e-1', { runAfterMs: T0 + 10_000, expiresAtMs: T0 + 60_000 });

    q.clock.set(T0 + 60_000);
    const handler = vi.fn();
    const invoker = new RunningInvoker(q.ctx, { emails: handler });
    const result = await poll(q.ctx, [emails], invoker);

    expect(result).toMatchObject({ claimed: 0, expired: 1, dispatched: 0 });
    expect(handler).not.toHaveBeenCalled();
    expect(invoker.batches).toHaveLength(0);
    expect(await readItem(q, 'emails', 'e-1')).toMatchObject({
      status: 'expired',
      attempt: 0,
      finishedAtMs: T0 + 60_000,
      purgeAtS: purgeAt(T0 + 60_000),
    });
    expect(String((await readItem(q, 'emails', 'e-1'))?.gsi1pk)).toMatch(/^F#emails#expired#/);
  });

  test('a job claimed before expires_at but reached by the worker after it is expired without running', async () => {
    const { ctx, clock } = queue();
    const emails = await defineType(ctx, 'emails', { visibility_timeout_s: 60 });
    await enqueue(ctx, emails, 'e-1', { expiresAtMs: T0 + 10_000 });
    const recording = new RecordingInvoker();
    expect((await poll(ctx, [emails], recording)).claimed).toBe(1);

    clock.set(T0 + 10_000);
    const handler = vi.fn();
    const counts = await runWorkerBatch(asFunction(ctx, 'worker'), recording.batches[0]!, {
      registry: { handlers: { emails: handler }, retryPolicies: {} },
      worker: WORKER,
    });

    expect(counts.expired).toBe(1);
    expect(handler).not.toHaveBeenCalled();
    const job = await getJob(ctx, 'emails', 'e-1');
    expect(job).toMatchObject({ status: 'expired', finishedAtMs: T0 + 10_000 });
    expect(job?.history).toEqual([
      expect.objectContaining({ attempt: 1, outcome: 'expired', startedAtMs: null, endedAtMs: T0 + 10_000 }),
    ]);
  });

  test('a job still inside its expires_at runs normally', async () => {
    const { ctx, clock } = queue();
    const emails = await defineType(ctx, 'emails');
    await enqueue(ctx, emails, 'e-1', { expiresAtMs: T0 + 10_000 });
    clock.set(T0 + 9_999);
    const handler = vi.fn(() => 'ok');
    await poll(ctx, [emails], new RunningInvoker(ctx, { emails: handler }));
    expect(handler).toHaveBeenCalledTimes(1);
    expect((await getJob(ctx, 'emails', 'e-1'))?.status).toBe('succeeded');
  });
});

describe('deferred outcome (AWAIT_CALLBACK)', () => {
  test('a handler returning AWAIT_CALLBACK leaves the job awaiting_callback until timeout_s', async () => {
    const { ctx } = queue();
    const hooks = await defineType(ctx, 'hooks', { timeout_s: 120, visibility_timeout_s: 30 });
    await enqueue(ctx, hooks, 'h-1');
    await poll(ctx, [hooks], new RunningInvoker(ctx, { hooks: () => AWAIT_CALLBACK }));

    const job = await getJob(ctx, 'hooks', 'h-1');
    expect(job).toMatchObject({
      status: 'awaiting_callback',
      attempt: 1,
      startedAtMs: T0,
      worker: WORKER,
      claimedUntilMs: T0 + 120_000,
    });
    expect(job?.claimToken).toEqual(expect.any(String));
    expect(job?.finishedAtMs).toBeUndefined();
  });

  test('the sweeper times out a callback that never came after timeout_s, not after the visibility timeout', async () => {
    const { ctx, clock } = queue();
    const hooks = await defineType(ctx, 'hooks', { timeout_s: 120, visibility_timeout_s: 30, attempts: 1 });
    await enqueue(ctx, hooks, 'h-1');
    await poll(ctx, [hooks], new RunningInvoker(ctx, { hooks: () => AWAIT_CALLBACK }));

    for (const at of [31_000, 119_999]) {
      clock.set(T0 + at);
      expect(await sweepOnce(asFunction(ctx, 'sweeper'), { customPolicies: {} }), `sweep at +${at} ms`).toMatchObject({ requeued: 0, ended: 0 });
      expect((await getJob(ctx, 'hooks', 'h-1'))?.status).toBe('awaiting_callback');
    }

    clock.set(T0 + 120_000);
    expect(await sweepOnce(asFunction(ctx, 'sweeper'), { customPolicies: {} })).toMatchObject({ ended: 1 });
    const job = await getJob(ctx, 'hooks', 'h-1');
    expect(job).toMatchObject({ status: 'failed', finishedAtMs: T0 + 120_000 });
    expect(job?.history).toEqual([
      expect.objectContaining({
        attempt: 1,
        outcome: 'timed_out',
        startedAtMs: T0,
        worker: WORKER,
        error: expect.objectContaining({ class: 'CallbackTimeoutError' }),
      }),
    ]);
  });

  test('a callback timeout with attempts left queues the job for another attempt', async () => {
    const { ctx, clock } = queue();
    const hooks = await defineType(ctx, 'hooks', { timeout_s: 120, attempts: 2, retry: { kind: 'fixed', delay_s: 5 } });
    await enqueue(ctx, hooks, 'h-1');
    await poll(ctx, [hooks], new RunningInvoker(ctx, { hooks: () => AWAIT_CALLBACK }));
    clock.set(T0 + 120_000);
    expect(await sweepOnce(asFunction(ctx, 'sweeper'), { customPolicies: {} })).toMatchObject({ requeued: 1 });
    expect(await getJob(ctx, 'hooks', 'h-1')).toMatchObject({ status: 'queued', attempt: 1, runAfterMs: T0 + 125_000 });
  });
});

describe('dispatch failure', () => {
  test('when the invoker throws, the claim is released: the job is queued again with attempt back to 0', async () => {
    const q = queue();
    const emails = await defineType(q.ctx, 'emails');
    await enqueue(q.ctx, emails, 'e-1');
    const failing = new FailingInvoker();

    const result = await poll(q.ctx, [emails], failing);
    expect(result).toMatchObject({ claimed: 1, dispatched: 0, released: 1 });
    expect(failing.calls).toBe(1);
    const job = await getJob(q.ctx, 'emails', 'e-1');
    expect(job).toMatchObject({ status: 'queued', attempt: 0, history: [] });
    expect(job?.claimToken).toBeUndefined();
    expect(job?.claimedUntilMs).toBeUndefined();
    expect((await readItem(q, 'emails', 'e-1'))?.gsi1pk).toMatch(/^Q#emails#/);
  });

  test('a released job is claimed by the next poll as attempt 1, without waiting out the visibility timeout', async () => {
    const { ctx, clock } = queue();
    const emails = await defineType(ctx, 'emails', { attempts: 1 });
    await enqueue(ctx, emails, 'e-1');
    await poll(ctx, [emails], new FailingInvoker());

    clock.advance(500);
    const handler = vi.fn(() => 'ok');
    expect((await poll(ctx, [emails], new RunningInvoker(ctx, { emails: handler }))).claimed).toBe(1);
    expect(handler).toHaveBeenCalledTimes(1);
    expect(await getJob(ctx, 'emails', 'e-1')).toMatchObject({ status: 'succeeded', attempt: 1 });
  });
});

describe('a poll that fails part-way', () => {
  // Without this, the jobs other shards claimed would sit `running` until their visibility timeout.
  test('a read error in one shard does not strand the jobs the same poll claims in the other shards', async () => {
    const { ctx } = queue();
    const charge = await defineType(ctx, 'charge', { delivery_strategy: 'at_most_once' });
    const ids = Array.from({ length: 20 }, (_, i) => `c-${i}`);
    for (const id of ids) await enqueue(ctx, charge, id);
    const shards = ctx.settings.shards;
    const healthyClaims = ids.filter((id) => shardOf(id, shards) !== 1).length;
    expect(healthyClaims).toBeGreaterThan(0);

    // Shard 1's query fails. A poll reads every shard of a type before it claims, so the other shards' claims land
    // after this failure, within the same poll (a wait here for them to land first could only time out).
    const shardOneFailure = new Error('injected ProvisionedThroughputExceededException');
    const faultyDb = {
      send: async (command: unknown) => {
        if (command instanceof QueryCommand && String(command.input.ExpressionAttributeValues?.[':partition']).endsWith('#1')) throw shardOneFailure;
        return asFunction(ctx, 'poller').db.send(command as UpdateCommand);
      },
    } as unknown as DynamoDBDocumentClient;
    const invoker = new RecordingInvoker();
    const polled = await pollOnce({ ...asFunction(ctx, 'poller'), db: faultyDb }, { jobTypes: [charge], invoker, cursors: new Map() }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(polled).toBe(shardOneFailure);

    const handedOver = new Set(invoker.jobs.map((job) => job.id));
    const running: string[] = [];
    const stranded: string[] = [];
    for (const id of ids) {
      const job = await getJob(ctx, 'charge', id);
      if (job?.status === 'running') running.push(id);
      if (job?.status === 'running' && !handedOver.has(id)) stranded.push(id);
    }
    // The other shards' jobs were claimed in the poll shard 1 failed: without them running, nothing could be stranded.
    expect(running).toHaveLength(healthyClaims);
    expect(stranded).toEqual([]);
  });
});

describe('stale writers (invariant 3)', () => {
  test("a stale attempt's endAttempt (old token and attempt) returns undefined and changes nothing", async () => {
    const q = queue();
    const emails = await defineType(q.ctx, 'emails', { retry: { kind: 'fixed', delay_s: 0 } });
    await enqueue(q.ctx, emails, 'e-1');
    const first = new DyingInvoker(q.ctx);
    await poll(q.ctx, [emails], first);
    const staleJob = first.jobs[0]!;

    q.clock.advance(31_000);
    expect(await sweepOnce(q.as('sweeper'), { customPolicies: {} })).toMatchObject({ requeued: 1 });
    const second = new RecordingInvoker();
    await poll(q.ctx, [emails], second);
    const liveJob = second.jobs[0]!;
    expect(liveJob.attempt).toBe(2);
    expect(liveJob.claimToken).not.toBe(staleJob.claimToken);

    const before = await readItem(q, 'emails', 'e-1');
    q.clock.advance(1_000);
    const late = await endAttempt(q.ctx, staleJob, {
      ending: { outcome: 'succeeded', result: 'from the dead' },
      jobType: emails,
      customPolicies: {},
      worker: { id: 'zombie', host: 'old-host' },
    });
    expect(late).toBeUndefined();
    expect(await readItem(q, 'emails', 'e-1')).toEqual(before);
  });

  test('the current attempt number with another claim token changes nothing either', async () => {
    const q = queue();
    const emails = await defineType(q.ctx, 'emails');
    await enqueue(q.ctx, emails, 'e-1');
    const recording = new RecordingInvoker();
    await poll(q.ctx, [emails], recording);
    const job = recording.jobs[0]!;
    const before = await readItem(q, 'emails', 'e-1');

    const forged = await endAttempt(q.ctx, { ...job, claimToken: 'not-the-token' }, {
      ending: { outcome: 'failed', failure: { error: { class: 'Error', message: 'x' }, retryable: false } },
      jobType: emails,
      customPolicies: {},
    });
    expect(forged).toBeUndefined();
    const otherAttempt = await endAttempt(q.ctx, { ...job, attempt: job.attempt + 1 }, {
      ending: { outcome: 'succeeded' },
      jobType: emails,
      customPolicies: {},
    });
    expect(otherAttempt).toBeUndefined();
    expect(await readItem(q, 'emails', 'e-1')).toEqual(before);
  });

  test('a second endAttempt for an attempt that already ended changes nothing', async () => {
    const q = queue();
    const emails = await defineType(q.ctx, 'emails');
    await enqueue(q.ctx, emails, 'e-1');
    const recording = new RecordingInvoker();
    await poll(q.ctx, [emails], recording);
    const job = recording.jobs[0]!;
    const options = { jobType: emails, customPolicies: {}, worker: WORKER };

    expect(await endAttempt(q.ctx, job, { ...options, ending: { outcome: 'succeeded', result: 1 } })).toMatchObject({
      next: { status: 'succeeded' },
    });
    const before = await readItem(q, 'emails', 'e-1');
    q.clock.advance(1_000);
    const again = await endAttempt(q.ctx, job, {
      ...options,
      ending: { outcome: 'failed', failure: { error: { class: 'Error', message: 'late' }, retryable: true } },
    });
    expect(again).toBeUndefined();
    expect(await readItem(q, 'emails', 'e-1')).toEqual(before);
  });

  test('a worker whose claim lapsed but was not taken back yet renews it and runs the job', async () => {
    const { ctx, clock } = queue();
    const emails = await defineType(ctx, 'emails', { visibility_timeout_s: 30 });
    await enqueue(ctx, emails, 'e-1');
    const recording = new RecordingInvoker();
    await poll(ctx, [emails], recording);

    clock.advance(30_000);
    const handler = vi.fn(() => 'sent');
    const counts = await runWorkerBatch(asFunction(ctx, 'worker'), recording.batches[0]!, {
      registry: { handlers: { emails: handler }, retryPolicies: {} },
      worker: WORKER,
    });
    expect(counts.succeeded).toBe(1);
    expect(handler).toHaveBeenCalledTimes(1);
    expect(await getJob(ctx, 'emails', 'e-1')).toMatchObject({ status: 'succeeded', attempt: 1 });
  });

  test('a worker whose claim the sweeper took back does not run the job', async () => {
    const { ctx, clock } = queue();
    const emails = await defineType(ctx, 'emails', { visibility_timeout_s: 30, retry: { kind: 'fixed', delay_s: 60 } });
    await enqueue(ctx, emails, 'e-1');
    const recording = new RecordingInvoker();
    await poll(ctx, [emails], recording);

    clock.advance(30_000);
    await sweepOnce(asFunction(ctx, 'sweeper'), { customPolicies: {} });
    const handler = vi.fn();
    const counts = await runWorkerBatch(asFunction(ctx, 'worker'), recording.batches[0]!, {
      registry: { handlers: { emails: handler }, retryPolicies: {} },
      worker: WORKER,
    });
    expect(counts.claim_lapsed).toBe(1);
    expect(handler).not.toHaveBeenCalled();
    expect(await getJob(ctx, 'emails', 'e-1')).toMatchObject({ status: 'queued', attempt: 0 });
  });
});
