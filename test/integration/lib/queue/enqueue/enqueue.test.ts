/** The producer's side against DynamoDB Local: idempotent enqueue (§4.4), cancel, replay. */
import { describe, expect, test, vi } from 'vitest';
import { ConflictError, NotFoundError } from '../../../../../lib/domain/errors.js';
import { getJob } from '../../../../../lib/queue/read-job.js';
import { cancelJob } from '../../../../../lib/queue/attempt/cancel.js';
import { replayJob } from '../../../../../lib/queue/enqueue/enqueue.js';
import { padEpochMs } from '../../../../../lib/store/keys.js';
import { T0, defineType, enqueue, freshQueuePerTest, poll, readItem, RecordingInvoker, RunningInvoker } from '../../../../support/lib-fixtures.js';

const queue = freshQueuePerTest({ settings: { retentionDays: 7 } });

describe('idempotent enqueue on (type, id)', () => {
  test('the same enqueue twice gives one job; the second answer says created: false and returns the stored job', async () => {
    const { ctx, clock } = queue();
    const emails = await defineType(ctx, 'emails');
    const first = await enqueue(ctx, emails, 'e-1', { data: { to: 'a@example.com' }, runAfterMs: T0 + 60_000 });
    clock.advance(5_000);
    const second = await enqueue(ctx, emails, 'e-1', { data: { to: 'a@example.com' }, runAfterMs: T0 + 60_000 });

    expect(first.created).toBe(true);
    expect(second.created).toBe(false);
    expect(second.job).toEqual(first.job);
    expect(second.job.createdAtMs).toBe(T0);
  });

  test('the same body again does not enqueue a second run: one poll claims the job once', async () => {
    const { ctx } = queue();
    const emails = await defineType(ctx, 'emails');
    await enqueue(ctx, emails, 'e-1');
    await enqueue(ctx, emails, 'e-1');
    const invoker = new RecordingInvoker();
    const result = await poll(ctx, [emails], invoker);
    expect(result.claimed).toBe(1);
    expect(invoker.jobs.map((job) => job.id)).toEqual(['e-1']);
  });

  test('a different body with the same id is a ConflictError and changes nothing', async () => {
    const q = queue();
    const emails = await defineType(q.ctx, 'emails');
    await enqueue(q.ctx, emails, 'e-1', { data: { to: 'a@example.com' } });
    const before = await readItem(q, 'emails', 'e-1');

    q.clock.advance(1_000);
    await expect(enqueue(q.ctx, emails, 'e-1', { data: { to: 'b@example.com' } })).rejects.toBeInstanceOf(ConflictError);
    await expect(enqueue(q.ctx, emails, 'e-1', { data: { to: 'a@example.com' }, priority: 5 })).rejects.toBeInstanceOf(
      ConflictError,
    );
    await expect(
      enqueue(q.ctx, emails, 'e-1', { data: { to: 'a@example.com' }, runAfterMs: T0 + 1 }),
    ).rejects.toBeInstanceOf(ConflictError);

    expect(await readItem(q, 'emails', 'e-1')).toEqual(before);
  });

  test('the same body with its keys in another order is the same job', async () => {
    const { ctx } = queue();
    const emails = await defineType(ctx, 'emails');
    await enqueue(ctx, emails, 'e-1', { data: { a: 1, b: { c: 2, d: 3 } } });
    const again = await enqueue(ctx, emails, 'e-1', { data: { b: { d: 3, c: 2 }, a: 1 } });
    expect(again.created).toBe(false);
  });

  test('the same id under another type is another job', async () => {
    const { ctx } = queue();
    const emails = await defineType(ctx, 'emails');
    const sms = await defineType(ctx, 'sms');
    expect((await enqueue(ctx, emails, 'x-1')).created).toBe(true);
    expect((await enqueue(ctx, sms, 'x-1', { data: 'different' })).created).toBe(true);
    expect((await getJob(ctx, 'sms', 'x-1'))?.data).toBe('different');
  });
});

describe('cancel', () => {
  test('a queued job can be cancelled, and is never claimed afterwards', async () => {
    const q = queue();
    const emails = await defineType(q.ctx, 'emails');
    await enqueue(q.ctx, emails, 'e-1', { runAfterMs: T0 + 30_000 });

    q.clock.advance(1_000);
    const cancelled = await cancelJob(q.ctx, 'emails', 'e-1');
    expect(cancelled).toMatchObject({ state: 'cancelled', job: { status: 'cancelled', finishedAtMs: T0 + 1_000, attempt: 0 } });

    const handler = vi.fn();
    for (const advance of [30_000, 10 * 60_000]) {
      q.clock.advance(advance);
      const result = await poll(q.ctx, [emails], new RunningInvoker(q.ctx, { emails: handler }));
      expect(result.claimed).toBe(0);
    }
    expect(handler).not.toHaveBeenCalled();
    expect((await getJob(q.ctx, 'emails', 'e-1'))?.status).toBe('cancelled');
  });

  test('a cancelled job leaves the waiting lane for the cancelled listing and is kept for the retention period', async () => {
    const q = queue();
    const emails = await defineType(q.ctx, 'emails');
    await enqueue(q.ctx, emails, 'e-1');
    await cancelJob(q.ctx, 'emails', 'e-1');
    const item = await readItem(q, 'emails', 'e-1');
    expect(String(item?.gsi1pk)).toMatch(/^F#emails#cancelled#\d+$/);
    expect(item?.gsi1sk).toBe(`${padEpochMs(T0)}#e-1`);
    expect(item?.purgeAtS).toBe(Math.floor(T0 / 1000) + 7 * 86_400);
  });

  test('cancelling a running job asks its worker to stop: it stays running, the cancel and who asked recorded', async () => {
    const q = queue();
    const emails = await defineType(q.ctx, 'emails');
    await enqueue(q.ctx, emails, 'e-1');
    await poll(q.ctx, [emails], new RecordingInvoker());
    expect((await readItem(q, 'emails', 'e-1'))?.status).toBe('running');

    const asked = await cancelJob(q.ctx, 'emails', 'e-1', 'key-1');
    expect(asked).toMatchObject({ state: 'cancelling', job: { status: 'running', cancelRequestedAtMs: T0, cancelledBy: 'key-1' } });
    expect(await readItem(q, 'emails', 'e-1')).toMatchObject({ status: 'running', cancelRequestedAtMs: T0 });
  });

  test('cancelling a finished job is a ConflictError', async () => {
    const { ctx } = queue();
    const emails = await defineType(ctx, 'emails');
    await enqueue(ctx, emails, 'e-1');
    await poll(ctx, [emails], new RunningInvoker(ctx, { emails: () => 'ok' }));
    expect((await getJob(ctx, 'emails', 'e-1'))?.status).toBe('succeeded');
    await expect(cancelJob(ctx, 'emails', 'e-1')).rejects.toThrow(ConflictError);
  });

  test('cancelling a job that does not exist is a NotFoundError and creates nothing', async () => {
    const q = queue();
    await defineType(q.ctx, 'emails');
    await expect(cancelJob(q.ctx, 'emails', 'nope')).rejects.toThrow(NotFoundError);
    expect(await readItem(q, 'emails', 'nope')).toBeUndefined();
  });
});

describe('replay', () => {
  test('replay creates a new queued job with the same data, priority and weight, due now', async () => {
    const { ctx, clock } = queue();
    const emails = await defineType(ctx, 'emails');
    await enqueue(ctx, emails, 'e-1', { data: { to: 'a@example.com', n: [1, 2] }, priority: 7, weight: 3 });
    await poll(ctx, [emails], new RunningInvoker(ctx, { emails: () => 'sent' }));

    clock.advance(60_000);
    const replayed = await replayJob(ctx, emails, 'e-1');
    expect(replayed.id).not.toBe('e-1');
    expect(replayed).toMatchObject({
      type: 'emails',
      status: 'queued',
      data: { to: 'a@example.com', n: [1, 2] },
      priority: 7,
      weight: 3,
      attempt: 0,
      history: [],
      runAfterMs: T0 + 60_000,
    });
    expect(await getJob(ctx, 'emails', replayed.id)).toEqual(replayed);
    expect((await getJob(ctx, 'emails', 'e-1'))?.status).toBe('succeeded');

    const handler = vi.fn(() => 'again');
    await poll(ctx, [emails], new RunningInvoker(ctx, { emails: handler }));
    expect(handler).toHaveBeenCalledTimes(1);
    expect((await getJob(ctx, 'emails', replayed.id))?.status).toBe('succeeded');
  });

  test('replaying twice gives two distinct jobs', async () => {
    const { ctx } = queue();
    const emails = await defineType(ctx, 'emails');
    await enqueue(ctx, emails, 'e-1');
    const a = await replayJob(ctx, emails, 'e-1');
    const b = await replayJob(ctx, emails, 'e-1');
    expect(a.id).not.toBe(b.id);
  });

  test('replaying a job that does not exist is a NotFoundError', async () => {
    const { ctx } = queue();
    const emails = await defineType(ctx, 'emails');
    await expect(replayJob(ctx, emails, 'nope')).rejects.toThrow(NotFoundError);
  });
});
