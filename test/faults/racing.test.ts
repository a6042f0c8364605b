/**
 * Four pollers and two sweepers over the same shards, with clocks ± 2 s apart
 * and one clock that jumps back: every job runs, none twice when at_most_once.
 */
import { afterEach, beforeEach, expect, test } from 'vitest';
import { createQueueContext, type QueueContext } from '../../lib/queue/context.js';
import { putJobType } from '../../lib/queue/catalog/job-types.js';
import { enqueueJob } from '../../lib/queue/enqueue/enqueue.js';
import { parseJobTypeDefinition } from '../../lib/wire/job-types.js';
import type { JobType } from '../../lib/domain/job-type.js';
import { createTestQueue, realClock, type TestQueue } from '../support/queue.js';
import { auditJobs, contextWith, countingHandler, runUntilSettled } from '../support/scenario.js';
import { scaled } from './scale.js';

const JOBS = scaled(200, 5_000);
let queue: TestQueue;
const types = new Map<string, JobType>();

beforeEach(async () => {
  queue = await createTestQueue({
    clock: realClock,
    settings: { bucketMs: 5_000, pollIntervalMs: 50, sweepIntervalMs: 200, claimPageSize: 25 },
  });
  for (const [name, body] of [
    ['alo', { target: { kind: 'handler', name: 'count' }, attempts: 5, retry: { kind: 'fixed', delay_s: 0 }, visibility_timeout_s: 3 }],
    ['amo', { target: { kind: 'handler', name: 'count' }, delivery_strategy: 'at_most_once', visibility_timeout_s: 3 }],
  ] as const) {
    types.set(name, (await putJobType(queue.ctx, name, parseJobTypeDefinition(body))).jobType);
  }
});
afterEach(() => queue.drop());

async function enqueueSpread(count: number, spreadMs: number) {
  const jobs: { type: string; id: string }[] = [];
  const startMs = Date.now();
  await Promise.all(
    Array.from({ length: 8 }, async (_, lane) => {
      for (let i = lane; i < count; i += 8) {
        const type = i % 2 === 0 ? 'alo' : 'amo';
        const id = `job-${i}`;
        await enqueueJob(queue.ctx, types.get(type)!, id, { data: { i }, priority: 100, weight: 1, runAfterMs: startMs + (i * spreadMs) / count });
        jobs.push({ type, id });
      }
    }),
  );
  return jobs;
}

async function runAndAudit(pollers: QueueContext[], sweepers: QueueContext[], jobs: { type: string; id: string }[]) {
  const counter = countingHandler();
  const outcome = await runUntilSettled({
    components: { pollers, sweepers, workers: queue.as('worker') },
    registry: { handlers: { count: counter.handler }, retryPolicies: {} },
    auditor: queue.ctx,
    jobs,
    timeoutMs: scaled(90_000, 900_000),
  });
  const audit = await auditJobs(queue.ctx, jobs, counter.starts, types, { startsByAttempt: counter.byAttempt, errors: outcome.errors });
  return { outcome, audit, counter };
}

test(`four pollers and two sweepers racing over the same shards run each of ${JOBS} jobs, at_most_once ones exactly once`, async () => {
  const jobs = await enqueueSpread(JOBS, 3_000);
  const pollers = Array.from({ length: 4 }, () => contextWith(queue.as('poller'), {}));
  const { outcome, audit, counter } = await runAndAudit(pollers, [contextWith(queue.as('sweeper'), {}), contextWith(queue.as('sweeper'), {})], jobs);
  expect(outcome.settled).toBe(true);
  expect(audit.findings).toEqual([]);
  expect(audit.byStatus).toEqual({ succeeded: JOBS });
  for (const { type, id } of jobs) if (type === 'amo') expect(counter.starts.get(id)).toBe(1);
}, scaled(120_000, 1_000_000));

test('pollers and sweepers whose clocks are ± 2 s apart, one jumping back 30 s, lose nothing and start no at_most_once job twice', async () => {
  const jobs = await enqueueSpread(JOBS, 3_000);
  let jumpedBackMs = 0;
  // A second into the run, with the pollers at work: when the clock jumps is the scenario, not a wait for anything.
  setTimeout(() => (jumpedBackMs = -30_000), 1_000);
  const jumping = createQueueContext(queue.as('poller').db, queue.ctx.settings, { nowMs: () => Date.now() + jumpedBackMs });
  const pollers = [contextWith(queue.as('poller'), { skewMs: 2_000 }), contextWith(queue.as('poller'), { skewMs: -2_000 }), jumping];
  const sweepers = [contextWith(queue.as('sweeper'), { skewMs: 2_000 }), contextWith(queue.as('sweeper'), { skewMs: -2_000 })];
  const { outcome, audit } = await runAndAudit(pollers, sweepers, jobs);
  expect(outcome.settled).toBe(true);
  expect(audit.findings).toEqual([]);
}, scaled(120_000, 1_000_000));
