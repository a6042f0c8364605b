/**
 * What a per-key rate (`throttle.limits[<key>].rate_per_s`) costs in DynamoDB write units, counted from
 * ReturnConsumedCapacity on every call: beside what a job of a type without limits costs, one write of each key's
 * bucket per poll that finds the key's jobs due, and one more when tokens go back; nothing per job.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, expect, test } from 'vitest';
import type { JobType } from '../../../../../lib/domain/job-type.js';
import type { WorkerBatch } from '../../../../../lib/domain/invocations.js';
import { enqueueJob } from '../../../../../lib/queue/enqueue/enqueue.js';
import { getJob } from '../../../../../lib/queue/read-job.js';
import { pollOnce } from '../../../../../lib/queue/poll/poll.js';
import { runWorkerBatch } from '../../../../../lib/queue/attempt/run-batch.js';
import { trackConsumedCapacity, type CapacityTotals } from '../../../../../infra/local/aws/capacity-meter.js';
import { createTestQueue, type TestQueue } from '../../../../support/queue.js';
import { defineType } from '../../../../support/lib-fixtures.js';

const JOBS = 50;
/**
 * What two runs of the same jobs may differ by, timing alone: the bucket record and cursor move of a minute one run
 * crosses and the other does not, and the wake holds writers ask for (one a second of enqueueing at most). A cost
 * per job (a bucket write per job would add 50) stays far outside it.
 */
const TIMING_WRU = 10;
let queue: TestQueue;
let capacity: CapacityTotals;
/** The write units spent on rate buckets (sort keys `RATE`, `RATE#<key>`), measured the same way. */
const bucketWrites = { calls: 0, writeUnits: 0 };

/** Counts the units of every write to a rate bucket, beside the tally of all calls. */
function trackBucketWrites(client: DynamoDBClient): void {
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const result = await next(args);
      const sortKey = (args.input as { Key?: { sk?: string | { S?: string } } }).Key?.sk;
      const sk = typeof sortKey === 'string' ? sortKey : sortKey?.S;
      if (context.commandName === 'UpdateItemCommand' && sk?.startsWith('RATE')) {
        const consumed = (result.output as { ConsumedCapacity?: { CapacityUnits?: number } }).ConsumedCapacity;
        bucketWrites.calls++;
        bucketWrites.writeUnits += consumed?.CapacityUnits ?? 0;
      }
      return result;
    },
    { step: 'build', name: 'countRateBucketWrites' },
  );
}

beforeAll(async () => {
  queue = await createTestQueue();
  capacity = trackConsumedCapacity(queue.clientsOf('api').base);
  for (const fn of ['poller', 'worker'] as const) trackConsumedCapacity(queue.clientsOf(fn).base, capacity);
  trackBucketWrites(queue.clientsOf('poller').base);
});
afterAll(() => queue.drop());

/** Enqueues `count` jobs, claims them in as few polls as the rates allow and runs them to success; the write units they cost (those of rate buckets apart too), and the polls. */
async function writeUnitsOf(jobType: JobType, count: number, keyOf: (i: number) => string | undefined): Promise<{ writeUnits: number; bucketUnits: number; polls: number }> {
  const registry = { handlers: { [jobType.name]: (data: unknown) => data }, retryPolicies: {} };
  const before = { writeUnits: capacity.writeUnits, bucketUnits: bucketWrites.writeUnits };
  for (let i = 0; i < count; i++) {
    const throttleKey = keyOf(i);
    await enqueueJob(queue.as('api'), jobType, `job-${i}`, { data: { i, text: 'x'.repeat(150) }, priority: 100, weight: 1, ...(throttleKey ? { throttleKey } : {}) });
  }
  const batches: WorkerBatch[] = [];
  const invoker = { invoke: async (batch: WorkerBatch) => void batches.push(batch) };
  const rateBuckets = new Map();
  let polls = 0;
  do polls++;
  while ((await pollOnce(queue.as('poller'), { jobTypes: [jobType], invoker, cursors: new Map(), rateBuckets })).claimed > 0);
  for (const batch of batches) await runWorkerBatch(queue.as('worker'), batch, { registry, worker: { id: 'w', host: 'h' } });
  for (let i = 0; i < count; i++) expect((await getJob(queue.ctx, jobType.name, `job-${i}`))?.status).toBe('succeeded');
  return { writeUnits: capacity.writeUnits - before.writeUnits, bucketUnits: bucketWrites.writeUnits - before.bucketUnits, polls };
}

test(`jobs of two keys with rates cost what jobs without limits cost, plus one write per key for the poll that claims them (${JOBS} jobs: 0.04 WRU a job more)`, async () => {
  const keyOf = (i: number): string => (i % 2 === 0 ? 'east' : 'west');
  const plain = await writeUnitsOf(await defineType(queue.ctx, 'plain'), JOBS, keyOf);
  const paced = await writeUnitsOf(await defineType(queue.ctx, 'paced', { throttle: { limits: { east: { rate_per_s: 1_000 }, west: { rate_per_s: 1_000 } } } }), JOBS, keyOf);
  console.log('write units per job with key rates', { plain: plain.writeUnits / JOBS, paced: paced.writeUnits / JOBS, ofBuckets: paced.bucketUnits / JOBS });
  expect(plain.bucketUnits).toBe(0);
  // One poll claims them all, taking each key's tokens in one write of 1 WRU; none go back. The last poll finds nothing due.
  expect(paced.polls).toBe(2);
  expect(paced.bucketUnits).toBe(2);
  // The rest is what the same jobs without limits cost, measured beside them (an absolute budget of 7.3 WRU a job
  // failed by 1 WRU on a run that crossed a minute).
  expect(Math.abs(paced.writeUnits - paced.bucketUnits - plain.writeUnits)).toBeLessThanOrEqual(TIMING_WRU);
});

test('a lone job of a key with a rate costs 1 WRU more than a job without limits: the write of its key\'s bucket', async () => {
  const paced = await writeUnitsOf(await defineType(queue.ctx, 'lone-paced', { throttle: { limits: { '*': { rate_per_s: 5 } } } }), 1, () => 'east');
  expect(paced.bucketUnits).toBe(1);
});

test('a job without a key, or of a key without a rate, writes no bucket', async () => {
  const keyed = await defineType(queue.ctx, 'unpaced-keys', { throttle: { limits: { east: { rate_per_s: 5 } } } });
  const unpaced = await writeUnitsOf(keyed, 4, (i) => (i % 2 === 0 ? undefined : 'west'));
  expect(unpaced.bucketUnits).toBe(0);
});
