/**
 * A burst: every job due in the same second. The due partitions of that one
 * bucket fill up; pollers drain them page by page and nothing is lost.
 */
import pLimit from 'p-limit';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { putJobType } from '../../lib/queue/catalog/job-types.js';
import { enqueueJob } from '../../lib/queue/enqueue/enqueue.js';
import { parseJobTypeDefinition } from '../../lib/wire/job-types.js';
import type { JobType } from '../../lib/domain/job-type.js';
import { createTestQueue, realClock, type TestQueue } from '../support/queue.js';
import { auditJobs, contextWith, countingHandler, runUntilSettled } from '../support/scenario.js';
import { scaled } from './scale.js';

const JOBS = scaled(1_000, 50_000);
let queue: TestQueue;

beforeAll(async () => {
  queue = await createTestQueue({
    clock: realClock,
    settings: { pollIntervalMs: 50, sweepIntervalMs: 500, workerBatchSize: 25, workerConcurrency: 25 },
  });
});
afterAll(() => queue.drop());

test(`${JOBS} jobs due in the same second all run once`, async () => {
  const { jobType } = await putJobType(queue.ctx, 'burst', parseJobTypeDefinition({ target: { kind: 'handler', name: 'count' }, delivery_strategy: 'at_most_once' }));
  const types = new Map<string, JobType>([['burst', jobType]]);
  const dueAtMs = Date.now() + 2_000;
  const limit = pLimit(32);
  const jobs = Array.from({ length: JOBS }, (_, i) => ({ type: 'burst', id: `b-${i}` }));
  await Promise.all(
    jobs.map(({ id }, i) => limit(() => enqueueJob(queue.ctx, jobType, id, { data: { i }, priority: 100, weight: 1, runAfterMs: dueAtMs + (i % 1_000) }))),
  );

  const counter = countingHandler(0);
  const outcome = await runUntilSettled({
    components: { pollers: [contextWith(queue.as('poller'), {}), contextWith(queue.as('poller'), {})], sweepers: [queue.as('sweeper')], workers: queue.as('worker') },
    registry: { handlers: { count: counter.handler }, retryPolicies: {} },
    auditor: queue.ctx,
    jobs,
    timeoutMs: JOBS * 10 + 60_000,
  });
  const audit = await auditJobs(queue.ctx, jobs, counter.starts, types, { startsByAttempt: counter.byAttempt, errors: outcome.errors });
  const { errors: _errors, ...counts } = outcome;
  console.log('burst', { jobs: JOBS, ...counts });
  expect(outcome.settled).toBe(true);
  expect(audit.findings).toEqual([]);
  expect(audit.byStatus).toEqual({ succeeded: JOBS });
  expect([...counter.starts.values()].every((starts) => starts === 1)).toBe(true);
}, 600_000);
