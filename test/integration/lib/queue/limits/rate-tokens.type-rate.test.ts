/**
 * `rate_limit_per_s`: one token bucket in the table, shared by every poller, so
 * pollers together claim no faster than the type's rate.
 */
import { describe, expect, test } from 'vitest';
import { putJobType } from '../../../../../lib/queue/catalog/job-types.js';
import { parseJobTypeDefinition } from '../../../../../lib/wire/job-types.js';
import { pollOnce } from '../../../../../lib/queue/poll/poll.js';
import { watchInFlight } from '../../../../support/in-flight.js';
import { asFunction, createTestQueue, realClock } from '../../../../support/queue.js';
import { auditJobs, contextWith, countStarts, runUntilSettled } from '../../../../support/scenario.js';
import { defineType, enqueue, freshQueuePerTest, RecordingInvoker } from '../../../../support/lib-fixtures.js';

const RATE_PER_S = 20;
const WINDOW_MS = 20_000;

test(`two pollers together start ${RATE_PER_S} jobs a second, within 10 % over ${WINDOW_MS / 1000} s`, async () => {
  const queue = await createTestQueue({
    clock: realClock,
    settings: { bucketMs: 5_000, pollIntervalMs: 50 },
  });
  try {
    const body = { target: { kind: 'handler', name: 'paced' }, rate_limit_per_s: RATE_PER_S };
    const { jobType } = await putJobType(queue.ctx, 'paced', parseJobTypeDefinition(body));
    const jobs = [];
    // More than the window can take, so the pollers always have due jobs to claim.
    for (let i = 0; i < 30 * RATE_PER_S; i++) {
      await enqueue(queue.ctx, jobType, `job-${i}`);
      jobs.push({ type: 'paced', id: `job-${i}` });
    }
    const watch = watchInFlight(() => 'done');
    const counter = countStarts(watch.handler);
    const outcome = await runUntilSettled({
      components: { pollers: [contextWith(queue.ctx, {}), contextWith(queue.ctx, {})], sweepers: [], workers: queue.ctx },
      registry: { handlers: { paced: counter.handler }, retryPolicies: {} },
      auditor: queue.ctx,
      jobs,
      timeoutMs: WINDOW_MS + 3_000,
    });
    // More jobs than the run has time for: those it did not reach stay queued. Nothing is injected, so every
    // error a poller or worker reports is a finding.
    const audit = await auditJobs(queue.ctx, jobs, counter.starts, new Map([['paced', jobType]]), {
      startsByAttempt: counter.byAttempt,
      errors: outcome.errors,
      mayStillWait: (job) => job.status === 'queued',
    });
    expect(audit.findings).toEqual([]);
    const firstMs = Math.min(...watch.startedAtMs);
    const inWindow = watch.startedAtMs.filter((atMs) => atMs < firstMs + WINDOW_MS).length;
    const expected = (RATE_PER_S * WINDOW_MS) / 1000;
    expect(inWindow).toBeLessThanOrEqual(expected * 1.1);
    expect(inWindow).toBeGreaterThanOrEqual(expected * 0.9);
  } finally {
    await queue.drop();
  }
}, 60_000);

describe('the shared token bucket', () => {
  const queue = freshQueuePerTest();

  test('two pollers polling at the same instant together take no more than a second of the rate', async () => {
    const { ctx } = queue();
    const paced = await defineType(ctx, 'paced', { rate_limit_per_s: 5 });
    for (let i = 0; i < 20; i++) await enqueue(ctx, paced, `job-${i}`);
    const first = await pollOnce(asFunction(ctx, 'poller'), { jobTypes: [paced], invoker: new RecordingInvoker(), cursors: new Map(), rateBuckets: new Map() });
    const second = await pollOnce(asFunction(ctx, 'poller'), { jobTypes: [paced], invoker: new RecordingInvoker(), cursors: new Map(), rateBuckets: new Map() });
    expect(first.claimed + second.claimed).toBe(5);
  });

  test('the bucket refills at the rate as time passes', async () => {
    const { ctx, clock } = queue();
    const paced = await defineType(ctx, 'paced', { rate_limit_per_s: 5 });
    for (let i = 0; i < 20; i++) await enqueue(ctx, paced, `job-${i}`);
    const rateBuckets = new Map();
    const pollNow = () => pollOnce(asFunction(ctx, 'poller'), { jobTypes: [paced], invoker: new RecordingInvoker(), cursors: new Map(), rateBuckets });
    expect((await pollNow()).claimed).toBe(5);
    clock.advance(400);
    expect((await pollNow()).claimed).toBe(2);
    clock.advance(600);
    expect((await pollNow()).claimed).toBe(3);
  });

  test('a fractional rate claims one job every so many seconds', async () => {
    const { ctx, clock } = queue();
    const paced = await defineType(ctx, 'paced', { rate_limit_per_s: 0.5 });
    for (let i = 0; i < 5; i++) await enqueue(ctx, paced, `job-${i}`);
    const rateBuckets = new Map();
    const pollNow = () => pollOnce(asFunction(ctx, 'poller'), { jobTypes: [paced], invoker: new RecordingInvoker(), cursors: new Map(), rateBuckets });
    expect((await pollNow()).claimed).toBe(1);
    clock.advance(1_000);
    expect((await pollNow()).claimed).toBe(0);
    clock.advance(1_000);
    expect((await pollNow()).claimed).toBe(1);
  });

  test('tokens a poll took but could not use go back to the bucket', async () => {
    const { ctx, clock } = queue();
    const paced = await defineType(ctx, 'paced', { rate_limit_per_s: 5 });
    for (let i = 0; i < 3; i++) await enqueue(ctx, paced, `expiring-${i}`, { expiresAtMs: clock.nowMs() + 500 });
    for (let i = 0; i < 2; i++) await enqueue(ctx, paced, `job-${i}`);
    clock.advance(600);
    const rateBuckets = new Map();
    const invoker = new RecordingInvoker();
    const first = await pollOnce(asFunction(ctx, 'poller'), { jobTypes: [paced], invoker, cursors: new Map(), rateBuckets });
    expect(first).toMatchObject({ claimed: 2, expired: 3 });
    for (let i = 2; i < 10; i++) await enqueue(ctx, paced, `job-${i}`);
    // The bucket held 5: 2 went to claims and the 3 taken for the expired jobs were put back.
    expect((await pollOnce(asFunction(ctx, 'poller'), { jobTypes: [paced], invoker, cursors: new Map(), rateBuckets })).claimed).toBe(3);
  });
});
