/**
 * The audit the fault tests end with (support/scenario.ts, auditJobs) catches what it is there to catch: each test
 * injects one breach of an invariant on purpose and expects the audit to name it, and nothing else.
 */
import { DeleteCommand } from '@aws-sdk/lib-dynamodb';
import { expect, test } from 'vitest';
import type { JobType } from '../../../../lib/domain/job-type.js';
import { claimJob } from '../../../../lib/queue/attempt/claim.js';
import { endAttempt } from '../../../../lib/queue/attempt/end-attempt.js';
import type { JobHandler } from '../../../../lib/queue/attempt/run-batch.js';
import { jobKey } from '../../../../lib/store/keys.js';
import { refuseCalls } from '../../../support/faults.js';
import { realClock } from '../../../support/queue.js';
import { auditJobs, countingHandler, runUntilSettled } from '../../../support/scenario.js';
import { defineType, enqueue, freshQueuePerTest } from '../../../support/lib-fixtures.js';

const queue = freshQueuePerTest({ clock: () => realClock, settings: { pollIntervalMs: 50, sweepIntervalMs: 200 } });

/** Runs `jobs` to the end with one poller, one sweeper and `handler` behind the type's target `count`. */
async function settle(jobs: { type: string; id: string }[], handler: JobHandler, sweeper = queue().as('sweeper')) {
  return runUntilSettled({
    components: { pollers: [queue().as('poller')], sweepers: [sweeper], workers: queue().as('worker') },
    registry: { handlers: { count: handler }, retryPolicies: {} },
    auditor: queue().ctx,
    jobs,
    timeoutMs: 30_000,
  });
}

const typesOf = (...types: JobType[]) => new Map(types.map((jobType) => [jobType.name, jobType]));

test('a job ended failed on a claim that never started (a sweeper counting an unstarted claim) is a finding', async () => {
  const { ctx } = queue();
  const jobType = await defineType(ctx, 'count', { attempts: 1 });
  await enqueue(ctx, jobType, 'j-1');
  const claim = await claimJob(ctx, { type: 'count', id: 'j-1' }, jobType);
  expect(claim.kind).toBe('claimed');
  if (claim.kind !== 'claimed') return;
  // The fault: the attempt ends failed with no start recorded and no handler run.
  const failure = { error: { class: 'VisibilityTimeoutError', message: 'injected: timed out before it started' }, retryable: false };
  expect(await endAttempt(ctx, claim.job, { ending: { outcome: 'failed', failure }, jobType, customPolicies: {} })).toBeDefined();

  const audit = await auditJobs(ctx, [{ type: 'count', id: 'j-1' }], new Map(), typesOf(jobType));
  expect(audit.findings).toEqual([
    { id: 'j-1', problem: 'attempt 1 failed (VisibilityTimeoutError) without a start' },
    { id: 'j-1', problem: 'failed without a run (VisibilityTimeoutError)' },
  ]);
});

test('an at_least_once attempt whose handler started twice (a worker running it twice in one attempt) is a finding', async () => {
  const { ctx } = queue();
  const jobType = await defineType(ctx, 'count', { attempts: 3 });
  const jobs = [{ type: 'count', id: 'j-1' }, { type: 'count', id: 'j-2' }];
  for (const { id } of jobs) await enqueue(ctx, jobType, id);
  const counter = countingHandler();
  // The fault: j-1's handler runs twice within its first attempt.
  const outcome = await settle(jobs, async (data, context) => {
    if (context.job.id === 'j-1') await counter.handler(data, context);
    return counter.handler(data, context);
  });
  expect(outcome.settled).toBe(true);

  const audit = await auditJobs(ctx, jobs, counter.starts, typesOf(jobType), { startsByAttempt: counter.byAttempt, errors: outcome.errors });
  expect(audit.findings).toEqual([
    { id: 'j-1', problem: '2 handler starts for 1 attempts' },
    { id: 'j-1', problem: 'attempt 1 started 2 times' },
  ]);
});

test('an accepted job missing from the table (its item deleted) is a finding: lost', async () => {
  const { ctx, clients, tableName } = queue();
  const jobType = await defineType(ctx, 'count', { attempts: 1 });
  const jobs = [{ type: 'count', id: 'j-1' }, { type: 'count', id: 'j-2' }];
  for (const { id } of jobs) await enqueue(ctx, jobType, id, { runAfterMs: Date.now() + 3_600_000 });
  // The fault: j-2's item is gone after its enqueue was answered.
  await clients.db.send(new DeleteCommand({ TableName: tableName, Key: jobKey('count', 'j-2') }));

  const audit = await auditJobs(ctx, jobs, new Map(), typesOf(jobType));
  expect(audit.findings).toEqual([{ id: 'j-2', problem: 'lost: no item' }]);
});

test('a sweeper whose every call throws is a finding, though every job succeeds', async () => {
  const { ctx } = queue();
  const jobType = await defineType(ctx, 'count', { attempts: 1 });
  const jobs = [{ type: 'count', id: 'j-1' }];
  await enqueue(ctx, jobType, 'j-1');
  // The fault: the sweeper's client refuses every call.
  const refused = refuseCalls(queue().clientsOf('sweeper').base, () => true);
  const counter = countingHandler();
  const outcome = await settle(jobs, counter.handler);
  expect(outcome.settled).toBe(true);
  expect(refused.count).toBeGreaterThan(0);

  const audit = await auditJobs(ctx, jobs, counter.starts, typesOf(jobType), { startsByAttempt: counter.byAttempt, errors: outcome.errors });
  expect(audit.byStatus).toEqual({ succeeded: 1 });
  expect(audit.findings.length).toBeGreaterThan(0);
  expect(audit.findings).toEqual(
    Array.from({ length: outcome.sweepErrors }, () => ({ id: 'sweeper', problem: expect.stringContaining('injected: the call is refused') })),
  );
});
