/**
 * DynamoDB throttling, 500s and dropped connections (before a request is sent,
 * and after it was applied with the response lost) on 15 % of all calls made by
 * producers, pollers, workers and sweepers: nothing is lost, nothing finishes twice.
 */
import { afterAll, beforeAll, expect, test } from 'vitest';
import type { QueueFunctionName } from '../../infra/local/aws/iam/stack-policies.js';
import type { QueueContext } from '../../lib/queue/context.js';
import type { DynamoClients } from '../../lib/store/client.js';
import { putJobType } from '../../lib/queue/catalog/job-types.js';
import { enqueueJob } from '../../lib/queue/enqueue/enqueue.js';
import { getJob } from '../../lib/queue/read-job.js';
import { LOCAL_REQUEST_PATH_DYNAMODB_CALL_LIMITS } from '../../lib/domain/limits.js';
import { parseJobTypeDefinition } from '../../lib/wire/job-types.js';
import type { JobType } from '../../lib/domain/job-type.js';
import { injectFaults, isInjected, seededRandom, type FaultCounts } from '../support/faults.js';
import { localIamFor } from '../support/iam.js';
import { createTestQueue, realClock, type TestQueue } from '../support/queue.js';
import { auditJobs, contextWith, countingHandler, runUntilSettled } from '../support/scenario.js';
import { inject } from 'vitest';
import { scaled } from './scale.js';

const JOBS = scaled(300, 5_000);
const FAULT_RATE = 0.15;
let queue: TestQueue;

beforeAll(async () => {
  queue = await createTestQueue({
    clock: realClock,
    // Real settings but narrower buckets, so cursors move during the run.
    settings: { bucketMs: 5_000, pollIntervalMs: 50, sweepIntervalMs: 200 },
  });
});
afterAll(() => queue.drop());

test(`${JOBS} jobs under ${FAULT_RATE * 100} % injected faults all end terminal, each explained, none started twice when at_most_once`, async () => {
  // Each function's own client, limited to its role, with faults injected under it.
  const iam = localIamFor(queue.tableName);
  const random = seededRandom(42);
  const faultyClients: DynamoClients[] = [];
  const faultCounts: FaultCounts[] = [];
  const faultyAs = (fn: QueueFunctionName): QueueContext => {
    // The api answers requests: its calls have the two tries the local runtime gives them, so some enqueues fail.
    const callLimits = fn === 'api' ? { callLimits: LOCAL_REQUEST_PATH_DYNAMODB_CALL_LIMITS } : {};
    const clients = iam.dynamoClientsFor(fn, { endpoint: inject('dynamoEndpoint'), ...callLimits });
    faultyClients.push(clients);
    faultCounts.push(injectFaults(clients.base, { rate: FAULT_RATE, random }));
    return contextWith(queue.as(fn), { db: clients.db });
  };
  const producer = faultyAs('api');

  const types = new Map<string, JobType>();
  for (const [name, body] of [
    ['alo', { target: { kind: 'handler', name: 'count' }, attempts: 10, retry: { kind: 'fixed', delay_s: 0 }, visibility_timeout_s: 1 }],
    ['amo', { target: { kind: 'handler', name: 'count' }, delivery_strategy: 'at_most_once', visibility_timeout_s: 1 }],
  ] as const) {
    types.set(name, (await putJobType(queue.ctx, name, parseJobTypeDefinition(body))).jobType);
  }

  const accepted: { type: string; id: string }[] = [];
  // An enqueue that threw may still have landed (a try applied whose answer was lost): its outcome is unknown.
  const unknown: { type: string; id: string }[] = [];
  const refusals: unknown[] = [];
  await Promise.all(
    Array.from({ length: 8 }, async (_, lane) => {
      for (let i = lane; i < JOBS; i += 8) {
        const type = i % 2 === 0 ? 'alo' : 'amo';
        const id = `job-${i}`;
        try {
          await enqueueJob(producer, types.get(type)!, id, { data: { i }, priority: 100, weight: 1, runAfterMs: Date.now() + (i % 20) * 100 });
          accepted.push({ type, id });
        } catch (error) {
          unknown.push({ type, id });
          refusals.push(error);
        }
      }
    }),
  );

  // Those that landed are run to the end like the accepted ones; the audit holds them to the same rules.
  const landed: { type: string; id: string }[] = [];
  for (const job of unknown) if (await getJob(queue.ctx, job.type, job.id)) landed.push(job);
  const counter = countingHandler();
  const outcome = await runUntilSettled({
    components: { pollers: [faultyAs('poller'), faultyAs('poller')], sweepers: [faultyAs('sweeper')], workers: faultyAs('worker') },
    registry: { handlers: { count: counter.handler }, retryPolicies: {} },
    auditor: queue.ctx,
    jobs: [...accepted, ...landed],
    timeoutMs: 90_000,
  });
  const audit = await auditJobs(queue.ctx, accepted, counter.starts, types, {
    unknown,
    startsByAttempt: counter.byAttempt,
    errors: outcome.errors,
    expectedError: isInjected,
  });
    const faults = {
    calls: faultCounts.reduce((sum, counts) => sum + counts.calls, 0),
    injected: faultCounts.reduce((sum, counts) => sum + counts.injected, 0),
  };
  const { errors: _errors, ...counts } = outcome;
  console.log('transient faults', { accepted: accepted.length, unknown: unknown.length, landed: landed.length, faults, ...counts, byStatus: audit.byStatus });
  for (const clients of faultyClients) clients.base.destroy();

  expect(faults.injected).toBeGreaterThan(0);
  // An enqueue fails only by a fault injected under it, whatever became of its write.
  expect(refusals.filter((error) => !isInjected(error))).toEqual([]);
  expect(audit.findings).toEqual([]);
  expect(outcome.settled).toBe(true);
  expect(audit.byStatus.succeeded).toBeGreaterThan(0);
}, 120_000);
