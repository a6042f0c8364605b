/**
 * A worker invoke Lambda throttles, delivers late or delivers twice: a claim whose worker never started the job
 * costs it no attempt, a late batch whose claims were taken back runs nothing, and a batch delivered twice runs
 * each job once, whatever the delivery strategy.
 */
import { describe, expect, test, vi } from 'vitest';
import { markStarted } from '../../../../../lib/queue/attempt/claim.js';
import { releaseClaim } from '../../../../../lib/queue/attempt/end-attempt.js';
import { extendClaim } from '../../../../../lib/queue/attempt/renew-claim.js';
import { claimSeatOf } from '../../../../../lib/domain/claim-seats.js';
import { PARTITION_PREFIX } from '../../../../../lib/store/keys.js';
import { loseAnswers } from '../../../../support/faults.js';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { readInFlight } from '../../../../../lib/store/counters.js';
import { getJob } from '../../../../../lib/queue/read-job.js';
import { sweepOnce } from '../../../../../lib/queue/sweep/sweep.js';
import { runWorkerBatch, type JobHandler } from '../../../../../lib/queue/attempt/run-batch.js';
import { asFunction } from '../../../../support/queue.js';
import { DyingInvoker, FailingInvoker, RecordingInvoker, RunningInvoker, T0, WORKER, defineType, enqueue, freshQueuePerTest, poll } from '../../../../support/lib-fixtures.js';

const queue = freshQueuePerTest();
const sweep = (ctx: Parameters<typeof sweepOnce>[0]) => sweepOnce(asFunction(ctx, 'sweeper'), { customPolicies: {} });
const workerOptions = (handler: JobHandler, worker = WORKER) => ({ registry: { handlers: { emails: handler }, retryPolicies: {} }, worker });

describe('a claim whose worker never started the job (at_least_once)', () => {
  test('comes back after the visibility timeout without counting an attempt or writing a history entry', async () => {
    const { ctx, clock } = queue();
    const emails = await defineType(ctx, 'emails', { visibility_timeout_s: 30, attempts: 3 });
    await enqueue(ctx, emails, 'e-1');
    await poll(ctx, [emails], new RecordingInvoker());

    clock.set(T0 + 30_000);
    expect(await sweep(ctx)).toMatchObject({ released: 1, requeued: 0, ended: 0 });
    const job = await getJob(ctx, 'emails', 'e-1');
    expect(job).toMatchObject({ status: 'queued', attempt: 0, history: [], runAfterMs: T0 });
    expect(job?.claimToken).toBeUndefined();
  });

  test('a job whose invokes are throttled past the visibility timeout again and again never fails without a handler run', async () => {
    const { ctx, clock } = queue();
    const emails = await defineType(ctx, 'emails', { visibility_timeout_s: 30, attempts: 3, retry: { kind: 'fixed', delay_s: 0 } });
    await enqueue(ctx, emails, 'e-1');
    const throttled = new RecordingInvoker();
    for (let lapse = 1; lapse <= 5; lapse++) {
      expect((await poll(ctx, [emails], throttled)).claimed).toBe(1);
      clock.advance(30_000);
      await sweep(ctx);
    }

    expect(await getJob(ctx, 'emails', 'e-1')).toMatchObject({ status: 'queued', attempt: 0, history: [] });
    const handler = vi.fn(() => 'sent');
    expect((await poll(ctx, [emails], new RunningInvoker(ctx, { emails: handler }))).claimed).toBe(1);
    expect(handler).toHaveBeenCalledTimes(1);
    expect(await getJob(ctx, 'emails', 'e-1')).toMatchObject({ status: 'succeeded', attempt: 1 });
  });

  test('gives back the slots its claim held, so the type is free to claim it again', async () => {
    const { ctx, clock } = queue();
    const limited = await defineType(ctx, 'limited', { concurrency: 2, visibility_timeout_s: 30 });
    for (const id of ['a', 'b', 'c']) await enqueue(ctx, limited, id);
    expect((await poll(ctx, [limited], new RecordingInvoker())).claimed).toBe(2);

    clock.advance(30_000);
    expect(await sweep(ctx)).toMatchObject({ released: 2 });
    expect((await readInFlight(ctx, 'limited', [])).type).toBe(0);
    expect((await poll(ctx, [limited], new RecordingInvoker())).claimed).toBe(2);
    expect((await readInFlight(ctx, 'limited', [])).type).toBe(2);
  });

  test('an attempt that started and then hung still counts, as a timed_out attempt naming its worker', async () => {
    const { ctx, clock } = queue();
    const emails = await defineType(ctx, 'emails', { visibility_timeout_s: 30, attempts: 3, retry: { kind: 'fixed', delay_s: 5 } });
    await enqueue(ctx, emails, 'e-1');
    const recording = new RecordingInvoker();
    await poll(ctx, [emails], recording);
    expect(await markStarted(ctx, recording.jobs[0]!, WORKER)).toBe('started');

    clock.set(T0 + 30_000);
    expect(await sweep(ctx)).toMatchObject({ requeued: 1, released: 0 });
    const job = await getJob(ctx, 'emails', 'e-1');
    expect(job).toMatchObject({ status: 'queued', attempt: 1 });
    expect(job?.history).toEqual([
      expect.objectContaining({ attempt: 1, startedAtMs: T0, worker: WORKER, outcome: 'timed_out', error: expect.objectContaining({ class: 'VisibilityTimeoutError' }) }),
    ]);
  });
});

describe('a batch that reaches its worker late or twice', () => {
  /** A job claimed into a batch that is held back past its visibility timeout, whose claim the sweeper has taken back. */
  async function batchHeldPastItsClaims() {
    const { ctx, clock } = queue();
    const emails = await defineType(ctx, 'emails', { visibility_timeout_s: 30 });
    await enqueue(ctx, emails, 'e-1');
    const late = new RecordingInvoker();
    await poll(ctx, [emails], late);
    clock.set(T0 + 30_000);
    await sweep(ctx);
    return { ctx, emails, late };
  }

  test('a late batch whose claims were taken back and claimed again runs nothing', async () => {
    const { ctx, emails, late } = await batchHeldPastItsClaims();
    const reclaimed = new RecordingInvoker();
    expect((await poll(ctx, [emails], reclaimed)).claimed).toBe(1);

    const handler = vi.fn(() => 'sent');
    expect(await runWorkerBatch(asFunction(ctx, 'worker'), late.batches[0]!, workerOptions(handler))).toMatchObject({ claim_lapsed: 1, succeeded: 0 });
    expect(handler).not.toHaveBeenCalled();
    expect(await getJob(ctx, 'emails', 'e-1')).toMatchObject({ status: 'running', attempt: 1, claimToken: reclaimed.jobs[0]?.claimToken });
  });

  test('a late batch whose claims were taken back but not yet claimed again runs nothing and leaves the job due', async () => {
    const { ctx, late } = await batchHeldPastItsClaims();

    const handler = vi.fn(() => 'sent');
    expect(await runWorkerBatch(asFunction(ctx, 'worker'), late.batches[0]!, workerOptions(handler))).toMatchObject({ claim_lapsed: 1 });
    expect(handler).not.toHaveBeenCalled();
    expect(await getJob(ctx, 'emails', 'e-1')).toMatchObject({ status: 'queued', attempt: 0 });
  });

  test('a batch of at_least_once jobs delivered twice at once runs each job once', async () => {
    const { ctx } = queue();
    const emails = await defineType(ctx, 'emails');
    await enqueue(ctx, emails, 'e-1');
    const recording = new RecordingInvoker();
    await poll(ctx, [emails], recording);
    const batch = recording.batches[0]!;
    let release!: () => void;
    const mayFinish = new Promise<void>((resolve) => (release = resolve));
    const handler = vi.fn<JobHandler>(async () => {
      await mayFinish;
      return 'sent';
    });

    const first = runWorkerBatch(asFunction(ctx, 'worker'), batch, workerOptions(handler));
    await vi.waitFor(() => expect(handler).toHaveBeenCalledTimes(1));
    const second = await runWorkerBatch(asFunction(ctx, 'worker'), batch, workerOptions(handler, { id: 'worker-2', host: 'host-b' }));
    release();

    expect(second).toMatchObject({ already_started: 1, succeeded: 0 });
    expect(await first).toMatchObject({ succeeded: 1 });
    expect(handler).toHaveBeenCalledTimes(1);
    expect(await getJob(ctx, 'emails', 'e-1')).toMatchObject({ status: 'succeeded', attempt: 1 });
  });
});

/** Every start record in the table. */
async function startRecords(ctx: ReturnType<typeof queue>['ctx'], client: ReturnType<typeof queue>['clients']) {
  const { Items = [] } = await client.db.send(new ScanCommand({ TableName: ctx.settings.tableName }));
  return Items.filter((item) => String(item.pk).startsWith(PARTITION_PREFIX.start));
}

describe('starts recorded a batch at a time', () => {
  test('the jobs claimed together share one group, and their batch records their start in one write, not one per job', async () => {
    const { ctx, clients } = queue();
    const emails = await defineType(ctx, 'emails');
    for (const id of ['a', 'b', 'c', 'd']) await enqueue(ctx, emails, id);
    const running = new RunningInvoker(ctx, { emails: () => 'sent' });
    await poll(ctx, [emails], running);

    const groups = new Set(running.batches.flatMap((batch) => batch.jobs.map((job) => claimSeatOf(job.claimToken)?.group)));
    expect(groups.size).toBe(1);
    const records = await startRecords(ctx, clients);
    expect(records).toHaveLength(1);
    const writeId = records[0]?.s0;
    expect([records[0]?.s1, records[0]?.s2, records[0]?.s3]).toEqual([writeId, writeId, writeId]);
    expect(records[0]?.[`w${writeId}`]).toEqual({ atMs: T0, worker: WORKER });
    for (const id of ['a', 'b', 'c', 'd']) expect(await getJob(ctx, 'emails', id)).toMatchObject({ status: 'succeeded', attempt: 1 });
  });

  test('an attempt whose batch recorded its start and then hung counts, with when it started and on which worker', async () => {
    const { ctx, clock } = queue();
    const emails = await defineType(ctx, 'emails', { visibility_timeout_s: 30, attempts: 3, retry: { kind: 'fixed', delay_s: 5 } });
    await enqueue(ctx, emails, 'e-1');
    await poll(ctx, [emails], new DyingInvoker(ctx));

    clock.set(T0 + 30_000);
    expect(await sweep(ctx)).toMatchObject({ requeued: 1, released: 0 });
    const job = await getJob(ctx, 'emails', 'e-1');
    expect(job?.startedAtMs).toBeUndefined();
    expect(job?.history).toEqual([expect.objectContaining({ attempt: 1, startedAtMs: T0, worker: WORKER, outcome: 'timed_out' })]);
  });

  test('a start write retried after its answer was lost still runs the batch, once', async () => {
    const { ctx } = queue();
    const emails = await defineType(ctx, 'emails');
    await enqueue(ctx, emails, 'e-1');
    const recording = new RecordingInvoker();
    await poll(ctx, [emails], recording);
    const lost = loseAnswers(queue().clientsOf('worker').base, ({ commandName, input }) => commandName === 'UpdateItemCommand' && JSON.stringify(input).includes(PARTITION_PREFIX.start));

    const handler = vi.fn(() => 'sent');
    expect(await runWorkerBatch(asFunction(ctx, 'worker'), recording.batches[0]!, workerOptions(handler))).toMatchObject({ succeeded: 1 });
    expect(lost.lost).toBe(1);
    expect(handler).toHaveBeenCalledTimes(1);
  });

  test('a batch whose invoke failed but which Lambda delivered all the same runs none of its jobs: the poller took its seats back with its claims', async () => {
    const { ctx } = queue();
    const emails = await defineType(ctx, 'emails');
    await enqueue(ctx, emails, 'e-1');
    const failing = new FailingInvoker();
    expect(await poll(ctx, [emails], failing)).toMatchObject({ claimed: 1, released: 1 });

    const handler = vi.fn(() => 'sent');
    expect(await runWorkerBatch(asFunction(ctx, 'worker'), failing.batches[0]!, workerOptions(handler))).toMatchObject({ already_started: 1 });
    expect(handler).not.toHaveBeenCalled();
    expect(await getJob(ctx, 'emails', 'e-1')).toMatchObject({ status: 'queued', attempt: 0, history: [] });
  });

  test('a batch whose invoke failed after its worker took it up keeps its claims: the sweeper, not the poller, decides', async () => {
    const { ctx } = queue();
    const emails = await defineType(ctx, 'emails');
    await enqueue(ctx, emails, 'e-1');
    const handler = vi.fn(() => 'sent');
    // The worker runs the batch, then the invoke's answer is lost.
    const deliveredThenFailed = {
      invoke: async (batch: Parameters<typeof runWorkerBatch>[1]) => {
        await runWorkerBatch(asFunction(ctx, 'worker'), structuredClone(batch), workerOptions(handler));
        throw new Error('socket hang up');
      },
    };
    expect(await poll(ctx, [emails], deliveredThenFailed)).toMatchObject({ claimed: 1, released: 0 });
    expect(handler).toHaveBeenCalledTimes(1);
    expect(await getJob(ctx, 'emails', 'e-1')).toMatchObject({ status: 'succeeded', attempt: 1 });
  });

  test('an at_most_once job records a start of its own, checked against its claim just before it runs', async () => {
    const { ctx, clients } = queue();
    const emails = await defineType(ctx, 'emails', { delivery_strategy: 'at_most_once' });
    await enqueue(ctx, emails, 'e-1');
    const recording = new RecordingInvoker();
    await poll(ctx, [emails], recording);
    let seenStart: number | undefined;
    const handler = vi.fn(async () => {
      seenStart = (await getJob(ctx, 'emails', 'e-1'))?.startedAtMs;
      return 'sent';
    });
    expect(await runWorkerBatch(asFunction(ctx, 'worker'), recording.batches[0]!, workerOptions(handler))).toMatchObject({ succeeded: 1 });
    expect(seenStart).toBe(T0);
    expect(await startRecords(ctx, clients)).toEqual([]);
  });

  test('a claim seen lapsed but renewed since by a worker that took it up is not handed back', async () => {
    const { ctx, clock } = queue();
    const emails = await defineType(ctx, 'emails', { visibility_timeout_s: 30 });
    await enqueue(ctx, emails, 'e-1');
    const recording = new RecordingInvoker();
    await poll(ctx, [emails], recording);
    const claimed = recording.jobs[0]!;
    clock.set(T0 + 30_000);
    expect(await extendClaim(asFunction(ctx, 'worker'), { type: 'emails', id: 'e-1', claimToken: claimed.claimToken!, attempt: 1 }, T0 + 60_000)).toBeDefined();

    expect(await releaseClaim(asFunction(ctx, 'sweeper'), claimed, claimed.runAfterMs, claimed.claimedUntilMs)).toBe(false);
    expect(await getJob(ctx, 'emails', 'e-1')).toMatchObject({ status: 'running', claimToken: claimed.claimToken });
  });
});
