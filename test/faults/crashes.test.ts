/**
 * Processes killed with SIGKILL: a worker in the middle of its jobs, and a
 * poller between its claims and their dispatch. Survivors recover every job.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { afterEach, beforeEach, expect, inject, test } from 'vitest';
import { putJobType } from '../../lib/queue/catalog/job-types.js';
import { enqueueJob } from '../../lib/queue/enqueue/enqueue.js';
import { getJob } from '../../lib/queue/read-job.js';
import { parseJobTypeDefinition } from '../../lib/wire/job-types.js';
import type { JobType } from '../../lib/domain/job-type.js';
import { createTestQueue, realClock, type TestQueue } from '../support/queue.js';
import { eventually } from '../support/eventually.js';
import { auditJobs, countingHandler, countStart, runUntilSettled } from '../support/scenario.js';

let queue: TestQueue;
const types = new Map<string, JobType>();

// A table per test: the audit reads every job in it.
beforeEach(async () => {
  queue = await createTestQueue({
    clock: realClock,
    settings: { pollIntervalMs: 50, sweepIntervalMs: 200 },
  });
  for (const [name, body] of [
    ['alo', { target: { kind: 'handler', name: 'count' }, attempts: 3, retry: { kind: 'fixed', delay_s: 0 }, visibility_timeout_s: 2 }],
    ['amo', { target: { kind: 'handler', name: 'count' }, delivery_strategy: 'at_most_once', visibility_timeout_s: 2 }],
  ] as const) {
    types.set(name, (await putJobType(queue.ctx, name, parseJobTypeDefinition(body))).jobType);
  }
});
afterEach(() => queue.drop());

function startChild(mode: string): { child: ChildProcess; output: () => string } {
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/faults/child-process.ts', mode], {
    env: {
      ...process.env,
      DYNAMODB_ENDPOINT: inject('dynamoEndpoint'),
      TABLE_NAME: queue.tableName,
      POLL_INTERVAL_MS: '50',
      STACK_POLICIES: JSON.stringify(inject('stackPolicies')),
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return { child, output: () => output };
}

async function enqueueBoth(prefix: string, count: number) {
  const jobs: { type: string; id: string }[] = [];
  for (let i = 0; i < count; i++) {
    const type = i % 2 === 0 ? 'alo' : 'amo';
    const id = `${prefix}-${i}`;
    await enqueueJob(queue.ctx, types.get(type)!, id, { data: {}, priority: 100, weight: 1 });
    jobs.push({ type, id });
  }
  return jobs;
}

async function recover(jobs: { type: string; id: string }[]) {
  const counter = countingHandler();
  const outcome = await runUntilSettled({
    components: { pollers: [queue.ctx], sweepers: [queue.ctx], workers: queue.ctx },
    registry: { handlers: { count: counter.handler }, retryPolicies: {} },
    auditor: queue.ctx,
    jobs,
    timeoutMs: 30_000,
  });
  return { outcome, counter };
}

test('a worker killed mid-job: at_least_once jobs complete on another attempt, at_most_once jobs end failed with a timed-out attempt', async () => {
  const jobs = await enqueueBoth('killed', 10);
  const { child, output } = startChild('slow-worker');
  const started = await eventually(async () => (output().match(/started /g) ?? []).length, (count) => count === jobs.length, 30_000);
  expect(started).toBe(jobs.length);
  child.kill('SIGKILL');

  const { outcome, counter } = await recover(jobs);
  expect(outcome.settled).toBe(true);
  for (const { type, id } of jobs) {
    const job = await getJob(queue.ctx, type, id);
    const [first, second] = job?.history ?? [];
    expect(first).toMatchObject({ attempt: 1, outcome: 'timed_out', error: { class: 'VisibilityTimeoutError' } });
    if (type === 'alo') {
      expect(job).toMatchObject({ status: 'succeeded', attempt: 2 });
      expect(second).toMatchObject({ attempt: 2, outcome: 'succeeded' });
    } else {
      expect(job).toMatchObject({ status: 'failed', attempt: 1 });
      expect(counter.starts.get(id)).toBeUndefined();
    }
  }
  // Each at_most_once job started once in the killed process and never again.
  // The killed process ran only first attempts.
  const allStarts = { starts: new Map<string, number>(), byAttempt: new Map<string, Map<number, number>>() };
  for (const { id } of jobs) if (output().includes(`started ${id}\n`)) countStart(allStarts, { id, attempt: 1 });
  for (const [id, attempts] of counter.byAttempt) for (const [attempt, count] of attempts) for (let i = 0; i < count; i++) countStart(allStarts, { id, attempt });
  const audit = await auditJobs(queue.ctx, jobs, allStarts.starts, types, { startsByAttempt: allStarts.byAttempt, errors: outcome.errors });
  expect(audit.findings).toEqual([]);
}, 90_000);

test('a poller killed between its claims and their dispatch: the sweeper recovers every job', async () => {
  const jobs = await enqueueBoth('stranded', 10);
  const { child, output } = startChild('crash-before-dispatch');
  await new Promise((resolve) => child.once('exit', resolve));
  expect(output()).toContain('claimed');

  const { outcome, counter } = await recover(jobs);
  expect(outcome.settled).toBe(true);
  const audit = await auditJobs(queue.ctx, jobs, counter.starts, types, { startsByAttempt: counter.byAttempt, errors: outcome.errors });
  expect(audit.findings).toEqual([]);
  expect(audit.byStatus).toEqual({ succeeded: jobs.length });
  for (const { type, id } of jobs) {
    const job = await getJob(queue.ctx, type, id);
    // An at_most_once claim that never started comes back without counting an attempt.
    if (type === 'amo') expect(job).toMatchObject({ attempt: 1, history: [expect.objectContaining({ outcome: 'succeeded' })] });
  }
}, 90_000);
