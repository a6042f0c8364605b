/**
 * Throttle keys (invariant 6, docs/concepts/design.md#invariants): per-key limits and shares of the type's
 * concurrency hold across pollers, while other keys keep running.
 */
import { describe, expect, test } from 'vitest';
import { putJobType } from '../../../../../lib/queue/catalog/job-types.js';
import { getJob } from '../../../../../lib/queue/read-job.js';
import { parseJobTypeDefinition } from '../../../../../lib/wire/job-types.js';
import { readInFlight } from '../../../../../lib/store/counters.js';
import { runWorkerBatch } from '../../../../../lib/queue/attempt/run-batch.js';
import { settleWatched, sleepMs, watchInFlight } from '../../../../support/in-flight.js';
import { asFunction, createTestQueue, realClock } from '../../../../support/queue.js';
import { auditJobs, contextWith, countStarts, runUntilSettled } from '../../../../support/scenario.js';
import { defineType, enqueue, freshQueuePerTest, poll, RecordingInvoker, WORKER } from '../../../../support/lib-fixtures.js';

const REGIONS = { east: 80, north: 60, west: 60, south: 20, polar: 20 } as const;

test('shares of 40 / 30 / 30 % and a limit for the rest hold per key under two pollers, other keys running meanwhile', async () => {
  const queue = await createTestQueue({
    clock: realClock,
    settings: { bucketMs: 5_000, pollIntervalMs: 20, sweepIntervalMs: 200 },
  });
  try {
    const body = {
      target: { kind: 'handler', name: 'regional' },
      concurrency: 10,
      throttle: {
        key_field: 'address.region',
        limits: { east: { share: 0.4 }, north: { share: 0.3 }, west: { share: 0.3 }, '*': { limit: 1 } },
      },
    };
    const { jobType } = await putJobType(queue.ctx, 'regional', parseJobTypeDefinition(body));
    const jobs = [];
    for (const [region, count] of Object.entries(REGIONS)) {
      for (let i = 0; i < count; i++) {
        await enqueue(queue.ctx, jobType, `${region}-${i}`, { data: { address: { region } } });
        jobs.push({ type: 'regional', id: `${region}-${i}` });
      }
    }
    const watch = watchInFlight(() => sleepMs(15));
    const counter = countStarts(watch.handler);
    const outcome = await runUntilSettled({
      components: { pollers: [contextWith(queue.ctx, {}), contextWith(queue.ctx, {})], sweepers: [], workers: queue.ctx },
      registry: { handlers: { regional: counter.handler }, retryPolicies: {} },
      auditor: queue.ctx,
      jobs,
      timeoutMs: 120_000,
    });
    expect(outcome.settled).toBe(true);
    // Nothing is injected here: every error a poller or worker reports is a finding.
    const audit = await auditJobs(queue.ctx, jobs, counter.starts, new Map([['regional', jobType]]), { startsByAttempt: counter.byAttempt, errors: outcome.errors });
    expect(audit.findings).toEqual([]);
    expect(watch.maxWeight).toBeLessThanOrEqual(10);
    expect(watch.maxWeightByKey.get('east')).toBeLessThanOrEqual(4);
    expect(watch.maxWeightByKey.get('north')).toBeLessThanOrEqual(3);
    expect(watch.maxWeightByKey.get('west')).toBeLessThanOrEqual(3);
    expect(watch.maxWeightByKey.get('south')).toBe(1);
    expect(watch.maxWeightByKey.get('polar')).toBe(1);
    expect(watch.maxKeysAtOnce).toBeGreaterThanOrEqual(2);
    const counters = await readInFlight(queue.ctx, 'regional', Object.keys(REGIONS));
    expect([counters.type, ...counters.keys.values()]).toEqual(Array(1 + Object.keys(REGIONS).length).fill(0));
  } finally {
    await queue.drop();
  }
}, 150_000);

test('a weighted mix (weights 1 to 5, shares of 40 / 30 / 30 % of 100, 10 % failing once) stays within the type and every share under two pollers', async () => {
  const queue = await createTestQueue({ clock: realClock, settings: { bucketMs: 5_000, pollIntervalMs: 20, sweepIntervalMs: 200 } });
  try {
    const shares = { east: 0.4, north: 0.3, west: 0.3 } as const;
    const body = {
      target: { kind: 'handler', name: 'mixed' },
      concurrency: 100,
      attempts: 3,
      retry: { kind: 'fixed', delay_s: 0 },
      throttle: { key_field: 'region', limits: Object.fromEntries(Object.entries(shares).map(([key, share]) => [key, { share }])) },
    };
    const { jobType } = await putJobType(queue.ctx, 'mixed', parseJobTypeDefinition(body));
    // A fixed mix rather than a random one: every weight in every key, one job in ten failing its first attempt.
    const jobs = [];
    const regions = Object.keys(shares);
    for (let i = 0; i < 300; i++) {
      const region = regions[i % regions.length]!;
      await enqueue(queue.ctx, jobType, `job-${i}`, { data: { region, workMs: 5 + (i % 7) * 5, failFirst: i % 10 === 0 }, weight: 1 + (i % 5) });
      jobs.push({ type: 'mixed', id: `job-${i}` });
    }
    const { settled, audit, watch, failedOnce } = await settleWatched(queue.ctx, jobType, jobs);
    expect(settled).toBe(true);
    expect(audit.findings).toEqual([]);
    expect(audit.byStatus).toEqual({ succeeded: 300 });
    expect(failedOnce.size).toBe(30);
    expect(watch.maxWeight).toBeLessThanOrEqual(100);
    for (const [key, share] of Object.entries(shares)) expect(watch.maxWeightByKey.get(key), key).toBeLessThanOrEqual(share * 100);
    const counters = await readInFlight(queue.ctx, 'mixed', regions);
    expect([counters.type, ...counters.keys.values()]).toEqual([0, 0, 0, 0]);
  } finally {
    await queue.drop();
  }
}, 150_000);

describe('throttle keys', () => {
  const queue = freshQueuePerTest();

  test('a full key holds back only its own jobs', async () => {
    const { ctx } = queue();
    const regional = await defineType(ctx, 'regional', { throttle: { key_field: 'region', limits: { east: { limit: 1 } } } });
    await enqueue(ctx, regional, 'east-1', { data: { region: 'east' }, priority: 1 });
    await enqueue(ctx, regional, 'east-2', { data: { region: 'east' }, priority: 2 });
    await enqueue(ctx, regional, 'west-1', { data: { region: 'west' }, priority: 3 });
    const invoker = new RecordingInvoker();
    await poll(ctx, [regional], invoker);
    expect(invoker.jobs.map((job) => job.id).sort()).toEqual(['east-1', 'west-1']);
    expect((await readInFlight(ctx, 'regional', ['east'])).keys.get('east')).toBe(1);
  });

  test("a job's own throttle_key wins over the type's key_field", async () => {
    const { ctx } = queue();
    const regional = await defineType(ctx, 'regional', { throttle: { key_field: 'region', limits: { east: { limit: 1 } } } });
    const { job } = await enqueue(ctx, regional, 'a', { data: { region: 'west' }, throttleKey: 'east' });
    expect(job.throttleKey).toBe('east');
  });

  test('a job whose data lacks the key field runs under the type limit only', async () => {
    const { ctx } = queue();
    const regional = await defineType(ctx, 'regional', { throttle: { key_field: 'region', limits: { '*': { limit: 0 } } } });
    const { job } = await enqueue(ctx, regional, 'a', { data: { city: 'Oslo' } });
    expect(job.throttleKey).toBeUndefined();
    expect((await poll(ctx, [regional], new RecordingInvoker())).claimed).toBe(1);
  });

  test('a key limited to 0 is paused while other keys run', async () => {
    const { ctx } = queue();
    const regional = await defineType(ctx, 'regional', { throttle: { key_field: 'region', limits: { east: { limit: 0 } } } });
    await enqueue(ctx, regional, 'east-1', { data: { region: 'east' } });
    await enqueue(ctx, regional, 'west-1', { data: { region: 'west' } });
    const invoker = new RecordingInvoker();
    await poll(ctx, [regional], invoker);
    expect(invoker.jobs.map((job) => job.id)).toEqual(['west-1']);
    expect((await getJob(ctx, 'regional', 'east-1'))?.status).toBe('queued');
  });

  test("the end of an attempt gives back its key's slots too", async () => {
    const { ctx } = queue();
    const regional = await defineType(ctx, 'regional', { concurrency: 4, throttle: { limits: { east: { share: 0.5 } } } });
    await enqueue(ctx, regional, 'a', { throttleKey: 'east', weight: 2 });
    const invoker = new RecordingInvoker();
    await poll(ctx, [regional], invoker);
    expect(await readInFlight(ctx, 'regional', ['east'])).toMatchObject({ type: 2, keys: new Map([['east', 2]]) });
    await runWorkerBatch(asFunction(ctx, 'worker'), invoker.batches[0]!, { registry: { handlers: { regional: () => 'ok' }, retryPolicies: {} }, worker: WORKER });
    expect(await readInFlight(ctx, 'regional', ['east'])).toMatchObject({ type: 0, keys: new Map([['east', 0]]) });
  });
});
