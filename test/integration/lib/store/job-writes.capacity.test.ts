/**
 * What one job costs in DynamoDB write units from enqueue to success, counted from ReturnConsumedCapacity on
 * every call: 7 (enqueue 2, claim 3, success 2), plus its share of the start record its batch writes before any
 * of its jobs runs (one for the jobs claimed together, so a throttled or late worker invoke costs them no attempt).
 */
import { afterAll, beforeAll, expect, test } from 'vitest';
import { trackConsumedCapacity, type CapacityTotals } from '../../../../infra/local/aws/capacity-meter.js';
import { putJobType } from '../../../../lib/queue/catalog/job-types.js';
import { enqueueJob } from '../../../../lib/queue/enqueue/enqueue.js';
import { getJob } from '../../../../lib/queue/read-job.js';
import { parseJobTypeDefinition } from '../../../../lib/wire/job-types.js';
import type { JobType } from '../../../../lib/domain/job-type.js';
import { pollOnce } from '../../../../lib/queue/poll/poll.js';
import type { WorkerBatch } from '../../../../lib/domain/invocations.js';
import { runWorkerBatch } from '../../../../lib/queue/attempt/run-batch.js';
import { createTestQueue, type TestQueue } from '../../../support/queue.js';

const JOBS = 50;
let queue: TestQueue;
let capacity: CapacityTotals;

beforeAll(async () => {
  queue = await createTestQueue();
  // One tally over the whole path: each function's calls go through a client of its own.
  capacity = trackConsumedCapacity(queue.clientsOf('api').base);
  for (const fn of ['poller', 'worker'] as const) trackConsumedCapacity(queue.clientsOf(fn).base, capacity);
});
afterAll(() => queue.drop());

/** Enqueues, claims and runs JOBS jobs of the type to success; returns the units each cost. */
async function unitsPerJob(
  jobType: JobType,
  keyOf: (i: number) => string | undefined = () => undefined,
): Promise<{ writeUnits: number; readUnits: number; directoryWrites: number }> {
  const registry = { handlers: { echo: (data: unknown) => data }, retryPolicies: {} };
  const before = { writeUnits: capacity.writeUnits, readUnits: capacity.readUnits, directoryWrites: capacity.directoryWrites };
  for (let i = 0; i < JOBS; i++) {
    const throttleKey = keyOf(i);
    await enqueueJob(queue.as('api'), jobType, `job-${i}`, { data: { i, text: 'x'.repeat(150) }, priority: 100, weight: 1, ...(throttleKey ? { throttleKey } : {}) });
  }
  const batches: WorkerBatch[] = [];
  const invoker = { invoke: async (batch: WorkerBatch) => void batches.push(batch) };
  while ((await pollOnce(queue.as('poller'), { jobTypes: [jobType], invoker, cursors: new Map() })).claimed > 0);
  for (const batch of batches) {
    await runWorkerBatch(queue.as('worker'), batch, { registry, worker: { id: 'w', host: 'h' } });
  }
  for (let i = 0; i < JOBS; i++) expect((await getJob(queue.ctx, jobType.name, `job-${i}`))?.status).toBe('succeeded');
  return {
    writeUnits: (capacity.writeUnits - before.writeUnits) / JOBS,
    readUnits: (capacity.readUnits - before.readUnits) / JOBS,
    directoryWrites: capacity.directoryWrites - before.directoryWrites,
  };
}

test(`a job costs 7 write units from enqueue to success and its share of its batch's start record, besides one record per lane bucket (${JOBS} jobs)`, async () => {
  const { jobType } = await putJobType(queue.ctx, 'echo', parseJobTypeDefinition({ target: { kind: 'handler', name: 'echo' } }));
  const perJob = await unitsPerJob(jobType);
  console.log('capacity per job', { ...perJob, byCommand: capacity.byCommand });
  expect(perJob.writeUnits).toBeGreaterThan(0);
  // The jobs wait in one bucket of their lane and are claimed into one of the claim lane: a unit each, once.
  expect(perJob.directoryWrites).toBeLessThanOrEqual(2);
  // A start record per batch of WORKER_BATCH_SIZE (10) jobs is 0.1 a job; the cursors' moves come to a few hundredths.
  expect(perJob.writeUnits - perJob.directoryWrites / JOBS).toBeLessThanOrEqual(7.3);
});

test(`a job of a type with a concurrency limit costs at most 8 write units and 1.2 read units (${JOBS} jobs)`, async () => {
  const body = { target: { kind: 'handler', name: 'echo' }, concurrency: 1_000 };
  const { jobType } = await putJobType(queue.ctx, 'limited', parseJobTypeDefinition(body));
  const perJob = await unitsPerJob(jobType);
  console.log('capacity per job with a concurrency limit', perJob);
  // What a job without limits costs, plus its share of a poll's reservation and of a batch's slot return: each a
  // transaction of one counter, billed at two units.
  expect(perJob.writeUnits).toBeLessThanOrEqual(8);
  expect(perJob.readUnits).toBeLessThanOrEqual(1.2);
});

test(`a job of a type with a concurrency limit and limited throttle keys costs at most 8 write units (${JOBS} jobs, two keys)`, async () => {
  const body = { target: { kind: 'handler', name: 'echo' }, concurrency: 1_000, throttle: { limits: { east: { share: 0.5 }, west: { share: 0.5 } } } };
  const { jobType } = await putJobType(queue.ctx, 'keyed', parseJobTypeDefinition(body));
  const perJob = await unitsPerJob(jobType, (i) => (i % 2 === 0 ? 'east' : 'west'));
  console.log('capacity per job with a concurrency limit and throttle keys', perJob);
  // Each key's counter joins the type's in the poll's reservation and in the batch's return: one more item each.
  expect(perJob.writeUnits).toBeLessThanOrEqual(8);
  expect(perJob.readUnits).toBeLessThanOrEqual(1.2);
});
