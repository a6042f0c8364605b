/**
 * Concurrency per job type with weights (invariant 6, docs/concepts/design.md#invariants): the summed weight of a
 * type's running jobs never passes its concurrency, across pollers, and every
 * way an attempt ends gives its slots back.
 */
import { describe, expect, test } from 'vitest';
import { putJobType } from '../../../../../lib/queue/catalog/job-types.js';
import { getJob } from '../../../../../lib/queue/read-job.js';
import { parseJobTypeDefinition } from '../../../../../lib/wire/job-types.js';
import { readInFlight } from '../../../../../lib/store/counters.js';
import { sweepOnce } from '../../../../../lib/queue/sweep/sweep.js';
import { runWorkerBatch } from '../../../../../lib/queue/attempt/run-batch.js';
import { settleWatched } from '../../../../support/in-flight.js';
import { asFunction, createTestQueue, realClock } from '../../../../support/queue.js';
import { DyingInvoker, defineType, enqueue, FailingInvoker, freshQueuePerTest, poll, RecordingInvoker, WORKER } from '../../../../support/lib-fixtures.js';
import { seededRandom } from '../../../../support/faults.js';

const JOBS = 500;
const CONCURRENCY = 8;


test(`two pollers never run more than the concurrency in weight (${JOBS} jobs of random weights and durations)`, async () => {
  const queue = await createTestQueue({
    clock: realClock,
    settings: { bucketMs: 5_000, pollIntervalMs: 20, sweepIntervalMs: 200 },
  });
  try {
    const body = {
      target: { kind: 'handler', name: 'weighed' },
      concurrency: CONCURRENCY,
      attempts: 3,
      retry: { kind: 'fixed', delay_s: 0 },
    };
    const { jobType } = await putJobType(queue.ctx, 'weighed', parseJobTypeDefinition(body));
    const random = seededRandom(7);
    const jobs = [];
    for (let i = 0; i < JOBS; i++) {
      const data = { workMs: Math.floor(random() * 25), failFirst: random() < 0.1 };
      await enqueue(queue.ctx, jobType, `job-${i}`, { data, weight: 1 + Math.floor(random() * 4) });
      jobs.push({ type: 'weighed', id: `job-${i}` });
    }
    const { settled, audit, watch, failedOnce } = await settleWatched(queue.ctx, jobType, jobs);
    expect(settled).toBe(true);
    expect(audit.findings).toEqual([]);
    expect(audit.byStatus).toEqual({ succeeded: JOBS });
    expect(failedOnce.size).toBeGreaterThan(0);
    expect(watch.maxWeight).toBeLessThanOrEqual(CONCURRENCY);
    expect((await readInFlight(queue.ctx, 'weighed', [])).type).toBe(0);
  } finally {
    await queue.drop();
  }
}, 150_000);

describe('slots', () => {
  const queue = freshQueuePerTest();
  const registry = { handlers: { limited: () => 'done' }, retryPolicies: {} };

  test('a claim takes its weight and the end of the attempt gives it back', async () => {
    const { ctx } = queue();
    const limited = await defineType(ctx, 'limited', { concurrency: 5 });
    await enqueue(ctx, limited, 'a', { weight: 3 });
    const invoker = new RecordingInvoker();
    await poll(ctx, [limited], invoker);
    expect((await readInFlight(ctx, 'limited', [])).type).toBe(3);
    await runWorkerBatch(asFunction(ctx, 'worker'), invoker.batches[0]!, { registry, worker: WORKER });
    expect((await getJob(ctx, 'limited', 'a'))?.status).toBe('succeeded');
    expect((await readInFlight(ctx, 'limited', [])).type).toBe(0);
  });

  test('a job that does not fit waits while the type is full', async () => {
    const { ctx } = queue();
    const limited = await defineType(ctx, 'limited', { concurrency: 4 });
    await enqueue(ctx, limited, 'a', { weight: 3, priority: 1 });
    await enqueue(ctx, limited, 'b', { weight: 2, priority: 2 });
    const invoker = new RecordingInvoker();
    const result = await poll(ctx, [limited], invoker);
    expect(result.claimed).toBe(1);
    expect(invoker.jobs.map((job) => job.id)).toEqual(['a']);
    expect((await getJob(ctx, 'limited', 'b'))?.status).toBe('queued');
  });

  test('a critical job (weight 0) runs while the type is full, taking no slot', async () => {
    const { ctx } = queue();
    const limited = await defineType(ctx, 'limited', { concurrency: 1 });
    await enqueue(ctx, limited, 'normal-1', { weight: 1 });
    await enqueue(ctx, limited, 'normal-2', { weight: 1 });
    await enqueue(ctx, limited, 'critical', { weight: 0 });
    const invoker = new RecordingInvoker();
    await poll(ctx, [limited], invoker);
    expect(invoker.jobs.map((job) => job.id).sort()).toEqual(['critical', 'normal-1']);
    expect((await readInFlight(ctx, 'limited', [])).type).toBe(1);
  });

  test("a dead worker's slots come back when the sweeper reclaims its claim", async () => {
    const { ctx, clock } = queue();
    const limited = await defineType(ctx, 'limited', { concurrency: 2, visibility_timeout_s: 30 });
    for (const id of ['a', 'b', 'c']) await enqueue(ctx, limited, id);
    const dead = new DyingInvoker(ctx);
    await poll(ctx, [limited], dead);
    expect(dead.jobs).toHaveLength(2);
    expect((await poll(ctx, [limited], dead)).claimed).toBe(0);
    clock.advance(31_000);
    const swept = await sweepOnce(asFunction(ctx, 'sweeper'), { customPolicies: {} });
    expect(swept.requeued).toBe(2);
    expect((await readInFlight(ctx, 'limited', [])).type).toBe(0);
    clock.advance(2_000);
    expect((await poll(ctx, [limited], new RecordingInvoker())).claimed).toBe(2);
  });

  test('a batch that never reaches a worker gives its slots back', async () => {
    const { ctx } = queue();
    const limited = await defineType(ctx, 'limited', { concurrency: 2 });
    await enqueue(ctx, limited, 'a');
    const result = await poll(ctx, [limited], new FailingInvoker());
    expect(result.released).toBe(1);
    expect((await readInFlight(ctx, 'limited', [])).type).toBe(0);
    expect((await getJob(ctx, 'limited', 'a'))?.status).toBe('queued');
  });

  test('a job that expires before it starts gives its slots back', async () => {
    const { ctx, clock } = queue();
    const limited = await defineType(ctx, 'limited', { concurrency: 2 });
    await enqueue(ctx, limited, 'a', { expiresAtMs: clock.nowMs() + 1_000 });
    const invoker = new RecordingInvoker();
    await poll(ctx, [limited], invoker);
    clock.advance(2_000);
    await runWorkerBatch(asFunction(ctx, 'worker'), invoker.batches[0]!, { registry, worker: WORKER });
    expect((await getJob(ctx, 'limited', 'a'))?.status).toBe('expired');
    expect((await readInFlight(ctx, 'limited', [])).type).toBe(0);
  });

  test('a failed attempt that will be retried gives its slots back', async () => {
    const { ctx } = queue();
    const limited = await defineType(ctx, 'limited', { concurrency: 2, attempts: 3 });
    await enqueue(ctx, limited, 'a', { weight: 2 });
    const invoker = new RecordingInvoker();
    await poll(ctx, [limited], invoker);
    const failing = { handlers: { limited: () => Promise.reject(new Error('downstream down')) }, retryPolicies: {} };
    await runWorkerBatch(asFunction(ctx, 'worker'), invoker.batches[0]!, { registry: failing, worker: WORKER });
    expect((await getJob(ctx, 'limited', 'a'))?.status).toBe('queued');
    expect((await readInFlight(ctx, 'limited', [])).type).toBe(0);
  });

  test('a job heavier than a lowered concurrency waits without holding up lighter jobs', async () => {
    const { ctx } = queue();
    await defineType(ctx, 'limited', { concurrency: 4 });
    const before = await defineType(ctx, 'limited', { concurrency: 4 });
    await enqueue(ctx, before, 'heavy', { weight: 4, priority: 0 });
    await enqueue(ctx, before, 'light', { weight: 1, priority: 500 });
    const lowered = await defineType(ctx, 'limited', { concurrency: 2 });
    const invoker = new RecordingInvoker();
    await poll(ctx, [lowered], invoker);
    expect(invoker.jobs.map((job) => job.id)).toEqual(['light']);
  });

  test('a weight above the type concurrency is refused, naming weight', async () => {
    const { ctx } = queue();
    const limited = await defineType(ctx, 'limited', { concurrency: 2 });
    await expect(enqueue(ctx, limited, 'a', { weight: 3 })).rejects.toMatchObject({
      name: 'ValidationError',
      details: [{ field: 'weight', message: expect.stringContaining('concurrency') }],
    });
    expect(await getJob(ctx, 'limited', 'a')).toBeUndefined();
  });
});
