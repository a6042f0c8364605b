/**
 * Priority, 0 to 1000, lower first: under a concurrency limit a more urgent
 * due job starts before a less urgent one, across pollers; `priority_order`
 * says whether ready time or priority comes first.
 */
import { describe, expect, test } from 'vitest';
import { putJobType } from '../../../../../lib/queue/catalog/job-types.js';
import { parseJobTypeDefinition } from '../../../../../lib/wire/job-types.js';
import type { JobType } from '../../../../../lib/domain/job-type.js';
import { runWorkerBatch } from '../../../../../lib/queue/attempt/run-batch.js';
import { sleepMs, watchInFlight } from '../../../../support/in-flight.js';
import { asFunction, createTestQueue, realClock } from '../../../../support/queue.js';
import type { QueueContext } from '../../../../../lib/queue/context.js';
import { auditJobs, contextWith, countStarts, runUntilSettled } from '../../../../support/scenario.js';
import { defineType, enqueue, freshQueuePerTest, poll, RecordingInvoker, WORKER } from '../../../../support/lib-fixtures.js';

test('under concurrency 1, two pollers start jobs due at the same time in priority order', async () => {
  const queue = await createTestQueue({
    clock: realClock,
    settings: { bucketMs: 5_000, pollIntervalMs: 20 },
  });
  try {
    const body = { target: { kind: 'handler', name: 'ordered' }, concurrency: 1 };
    const { jobType } = await putJobType(queue.ctx, 'ordered', parseJobTypeDefinition(body));
    const priorities = Array.from({ length: 30 }, (_, i) => (i * 337) % 1001);
    const dueAtMs = Date.now() - 1_000;
    const jobs = [];
    for (const [i, priority] of priorities.entries()) {
      await enqueue(queue.ctx, jobType, `job-${i}`, { priority, runAfterMs: dueAtMs });
      jobs.push({ type: 'ordered', id: `job-${i}` });
    }
    const watch = watchInFlight(() => sleepMs(5));
    const counter = countStarts(watch.handler);
    const outcome = await runUntilSettled({
      components: { pollers: [contextWith(queue.ctx, {}), contextWith(queue.ctx, {})], sweepers: [], workers: queue.ctx },
      registry: { handlers: { ordered: counter.handler }, retryPolicies: {} },
      auditor: queue.ctx,
      jobs,
      timeoutMs: 60_000,
    });
    expect(outcome.settled).toBe(true);
    // Nothing is injected here: every error a poller or worker reports is a finding.
    const audit = await auditJobs(queue.ctx, jobs, counter.starts, new Map([['ordered', jobType]]), { startsByAttempt: counter.byAttempt, errors: outcome.errors });
    expect(audit.findings).toEqual([]);
    const byPriority = [...priorities.entries()].sort(([, a], [, b]) => a - b).map(([i]) => `job-${i}`);
    expect(watch.startedIds).toEqual(byPriority);
  } finally {
    await queue.drop();
  }
}, 90_000);

/** Runs the type's jobs one at a time (concurrency 1) and returns the order they started in. */
async function startOrder(ctx: QueueContext, jobType: JobType, count: number): Promise<string[]> {
  const started: string[] = [];
  const registry = { handlers: { [jobType.name]: (_: unknown, { job }: { job: { id: string } }) => started.push(job.id) }, retryPolicies: {} };
  for (let i = 0; i < count; i++) {
    const invoker = new RecordingInvoker();
    await poll(ctx, [jobType], invoker);
    for (const batch of invoker.batches) await runWorkerBatch(asFunction(ctx, 'worker'), batch, { registry, worker: WORKER });
  }
  return started;
}

describe('priority order', () => {
  const queue = freshQueuePerTest();

  test('time_first orders due jobs by ready time, then priority', async () => {
    const { ctx, clock } = queue();
    const jobType = await defineType(ctx, 'ordered', { concurrency: 1 });
    const t = clock.nowMs();
    await enqueue(ctx, jobType, 'later-urgent', { runAfterMs: t - 1_000, priority: 0 });
    await enqueue(ctx, jobType, 'early-lax', { runAfterMs: t - 3_000, priority: 900 });
    await enqueue(ctx, jobType, 'early-urgent', { runAfterMs: t - 3_000, priority: 10 });
    expect(await startOrder(ctx, jobType, 3)).toEqual(['early-urgent', 'early-lax', 'later-urgent']);
  });

  test('priority_first orders due jobs by priority, then ready time', async () => {
    const { ctx, clock } = queue();
    const jobType = await defineType(ctx, 'ordered', { concurrency: 1, priority_order: 'priority_first' });
    const t = clock.nowMs();
    await enqueue(ctx, jobType, 'early-lax', { runAfterMs: t - 3_000, priority: 900 });
    await enqueue(ctx, jobType, 'later-urgent', { runAfterMs: t - 1_000, priority: 0 });
    await enqueue(ctx, jobType, 'early-urgent', { runAfterMs: t - 3_000, priority: 0 });
    expect(await startOrder(ctx, jobType, 3)).toEqual(['early-urgent', 'later-urgent', 'early-lax']);
  });

  test('a job not yet due waits whatever its priority', async () => {
    const { ctx, clock } = queue();
    const jobType = await defineType(ctx, 'ordered', { concurrency: 1, priority_order: 'priority_first' });
    await enqueue(ctx, jobType, 'future-urgent', { runAfterMs: clock.nowMs() + 60_000, priority: 0 });
    await enqueue(ctx, jobType, 'due-lax', { priority: 1000 });
    expect(await startOrder(ctx, jobType, 2)).toEqual(['due-lax']);
  });
});

describe('the bound of priority_first: what one poll reads, CLAIM_PAGE_SIZE due entries per shard, oldest first', () => {
  const PAGE = 5;
  const queue = freshQueuePerTest({ settings: { shards: 1, claimPageSize: PAGE } });

  async function urgentAfterLaxOnes(laxCount: number): Promise<string[]> {
    const { ctx, clock } = queue();
    const jobType = await defineType(ctx, 'ordered', { concurrency: 1, priority_order: 'priority_first' });
    const t = clock.nowMs();
    for (let i = 0; i < laxCount; i++) await enqueue(ctx, jobType, `lax-${i}`, { runAfterMs: t - 10_000 + i, priority: 900 });
    await enqueue(ctx, jobType, 'urgent', { runAfterMs: t - 1_000, priority: 0 });
    return startOrder(ctx, jobType, 1);
  }

  test('an urgent job with fewer than a page of older due jobs in its shard starts first', async () => {
    expect(await urgentAfterLaxOnes(PAGE - 1)).toEqual(['urgent']);
  });

  test('an urgent job behind a full page of older due jobs in its shard waits for the poll that reads it', async () => {
    expect(await urgentAfterLaxOnes(PAGE)).toEqual(['lax-0']);
  });
});
