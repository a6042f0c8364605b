/**
 * What tags cost in DynamoDB write units, counted from ReturnConsumedCapacity on every call from enqueue to
 * success: one unit per tag (its entry, written once at enqueue), nothing on the claim or the end. A job without
 * tags costs what it did before tags existed (7, see lib/store/job-writes.capacity.test.ts).
 */
import { afterAll, beforeAll, expect, test } from 'vitest';
import type { JobType } from '../../../../../lib/domain/job-type.js';
import { MAX_TAGS } from '../../../../../lib/domain/tags.js';
import type { WorkerBatch } from '../../../../../lib/domain/invocations.js';
import { enqueueJob } from '../../../../../lib/queue/enqueue/enqueue.js';
import { putJobType } from '../../../../../lib/queue/catalog/job-types.js';
import { getJob } from '../../../../../lib/queue/read-job.js';
import { pollOnce } from '../../../../../lib/queue/poll/poll.js';
import { runWorkerBatch } from '../../../../../lib/queue/attempt/run-batch.js';
import { parseJobTypeDefinition } from '../../../../../lib/wire/job-types.js';
import { trackConsumedCapacity, type CapacityTotals } from '../../../../../infra/local/aws/capacity-meter.js';
import { createTestQueue, type TestQueue } from '../../../../support/queue.js';

const JOBS = 50;
let queue: TestQueue;
let capacity: CapacityTotals;

beforeAll(async () => {
  queue = await createTestQueue();
  capacity = trackConsumedCapacity(queue.clientsOf('api').base);
  for (const fn of ['poller', 'worker'] as const) trackConsumedCapacity(queue.clientsOf(fn).base, capacity);
});
afterAll(() => queue.drop());

/** Write units of JOBS jobs with `tags`, enqueued, claimed and run to success: in all at enqueue, and per job from claim to success. */
async function writeUnitsPerJob(jobType: JobType, tags: string[] | undefined): Promise<{ enqueue: number; claimToSuccess: number }> {
  const registry = { handlers: { echo: (data: unknown) => data }, retryPolicies: {} };
  const atStart = capacity.writeUnits;
  for (let i = 0; i < JOBS; i++) {
    await enqueueJob(queue.as('api'), jobType, `job-${i}`, { data: { i, text: 'x'.repeat(150) }, priority: 100, weight: 1, ...(tags ? { tags } : {}) });
  }
  const enqueued = capacity.writeUnits;
  const batches: WorkerBatch[] = [];
  const invoker = { invoke: async (batch: WorkerBatch) => void batches.push(batch) };
  while ((await pollOnce(queue.as('poller'), { jobTypes: [jobType], invoker, cursors: new Map() })).claimed > 0);
  for (const batch of batches) await runWorkerBatch(queue.as('worker'), batch, { registry, worker: { id: 'w', host: 'h' } });
  for (let i = 0; i < JOBS; i++) expect((await getJob(queue.ctx, jobType.name, `job-${i}`))?.status).toBe('succeeded');
  return { enqueue: enqueued - atStart, claimToSuccess: (capacity.writeUnits - enqueued) / JOBS };
}

const defineEcho = async (name: string): Promise<JobType> =>
  (await putJobType(queue.ctx, name, parseJobTypeDefinition({ target: { kind: 'handler', name: 'echo' } }))).jobType;

test(`a tag costs one write unit per job, at enqueue: three short tags cost 3 and change nothing after (${JOBS} jobs each)`, async () => {
  const untagged = await writeUnitsPerJob(await defineEcho('untagged'), undefined);
  const tagged = await writeUnitsPerJob(await defineEcho('tagged'), ['eu', 'vip', 'campaign-2026-11']);
  console.log('write units per job', { untagged, tagged });
  // Each job's own put (2), and its lane bucket's directory record, once for the run.
  expect(untagged.enqueue).toBe(2 * JOBS + 1);
  expect(tagged.enqueue - untagged.enqueue).toBe(3 * JOBS);
  // The same writes after: only the shares of start records and cursor moves differ from run to run (a few units
  // over the run); a tag costing anything per job after enqueue would move this by a whole unit or more.
  expect(Math.abs(tagged.claimToSuccess - untagged.claimToSuccess)).toBeLessThan(0.5);
});

test(`${MAX_TAGS} tags of the longest length cost ${MAX_TAGS + 1} units at enqueue and 2 from claim to success: the job item grows past another kilobyte`, async () => {
  const longest = Array.from({ length: MAX_TAGS }, (_, i) => `${i}`.padEnd(64, 'x'));
  const untagged = await writeUnitsPerJob(await defineEcho('plain'), undefined);
  const tagged = await writeUnitsPerJob(await defineEcho('heavy'), longest);
  console.log('write units per job with the most and longest tags', { untagged, tagged });
  // 640 bytes of tags take the job item past another kilobyte: its put, its claim and its end are each billed a unit more.
  expect(tagged.enqueue - untagged.enqueue).toBe((MAX_TAGS + 1) * JOBS);
  expect(Math.round(tagged.claimToSuccess - untagged.claimToSuccess)).toBe(2);
});
