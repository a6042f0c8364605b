/**
 * What cancelling costs in DynamoDB write units, counted from ReturnConsumedCapacity on every call: a queued job's
 * cancel is one update (3: the job and its index entry moving to the cancelled listing), as before; a running job's
 * cancel marks the job (1) and its seat in the start record (1), and its end moves it to the cancelled listing (3)
 * where a success would have removed its entry (2). Jobs no one cancels cost what they did: 7 (lib/store/job-writes.capacity.test.ts).
 * DynamoDB Local reports no capacity for a write its condition refused, which AWS bills: the queued cancel a
 * running job's DELETE tries first is 1 WRU more there (README, Cancelling a running job).
 */
import { beforeEach, afterEach, expect, test } from 'vitest';
import { trackConsumedCapacity, type CapacityTotals } from '../../../../../infra/local/aws/capacity-meter.js';
import { putJobType } from '../../../../../lib/queue/catalog/job-types.js';
import { enqueueJob } from '../../../../../lib/queue/enqueue/enqueue.js';
import { getJob } from '../../../../../lib/queue/read-job.js';
import { cancelJob } from '../../../../../lib/queue/attempt/cancel.js';
import { parseJobTypeDefinition } from '../../../../../lib/wire/job-types.js';
import type { JobType } from '../../../../../lib/domain/job-type.js';
import { pollOnce } from '../../../../../lib/queue/poll/poll.js';
import type { WorkerBatch } from '../../../../../lib/domain/invocations.js';
import { runWorkerBatch, type JobHandler } from '../../../../../lib/queue/attempt/run-batch.js';
import { createTestQueue, type TestQueue } from '../../../../support/queue.js';

let queue: TestQueue;
let jobType: JobType;
const counted = { api: undefined as unknown as CapacityTotals, worker: undefined as unknown as CapacityTotals };

beforeEach(async () => {
  queue = await createTestQueue();
  counted.api = trackConsumedCapacity(queue.clientsOf('api').base);
  counted.worker = trackConsumedCapacity(queue.clientsOf('worker').base);
  jobType = (await putJobType(queue.ctx, 'reports', parseJobTypeDefinition({ target: { kind: 'handler', name: 'reports' } }))).jobType;
});
afterEach(() => queue.drop());

/** Enqueues a job with data like job-writes.capacity.test.ts's, claims it, and hands its batch to a worker that has not run it yet. */
async function claimed(id: string): Promise<WorkerBatch> {
  await enqueueJob(queue.as('api'), jobType, id, { data: { i: 0, text: 'x'.repeat(150) }, priority: 100, weight: 1 });
  const batches: WorkerBatch[] = [];
  await pollOnce(queue.as('poller'), { jobTypes: [jobType], invoker: { invoke: async (batch) => void batches.push(batch) }, cursors: new Map() });
  return batches[0]!;
}

const units = () => ({ api: counted.api.writeUnits, worker: counted.worker.writeUnits });

test('cancelling a queued job costs 3 write units', async () => {
  await enqueueJob(queue.as('api'), jobType, 'r-1', { data: { i: 0, text: 'x'.repeat(150) }, priority: 100, weight: 1 });
  const before = units();
  await cancelJob(queue.as('api'), 'reports', 'r-1', 'key-1');
  expect(units().api - before.api).toBe(3);
});

test('cancelling a running job costs 2 write units to ask and 3 to end it, where a success ends with 2', async () => {
  const batch = await claimed('r-1');
  let started!: () => void;
  const running = new Promise<void>((resolve) => (started = resolve));
  const handler: JobHandler = (_data, context) =>
    new Promise((_, reject) => {
      context.signal.addEventListener('abort', () => reject(context.signal.reason as Error));
      started();
    });
  const worker = runWorkerBatch(queue.as('worker'), batch, { registry: { handlers: { reports: handler }, retryPolicies: {} }, worker: { id: 'w', host: 'h' }, cancelWatchIntervalMs: 20 });
  await running;
  const beforeAsk = units();
  await cancelJob(queue.as('api'), 'reports', 'r-1', 'key-1');
  const asked = units();
  expect(asked.api - beforeAsk.api).toBe(2);
  expect((await worker).cancelled).toBe(1);
  expect(units().worker - asked.worker).toBe(3);
  expect((await getJob(queue.ctx, 'reports', 'r-1'))?.status).toBe('cancelled');
});
