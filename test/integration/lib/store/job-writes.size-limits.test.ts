/** Size limits that keep a job item inside DynamoDB's 400 KB, whatever a handler or callback sends. */
import { afterAll, beforeAll, expect, test } from 'vitest';
import { completeFromCallback } from '../../../../lib/queue/attempt/callbacks.js';
import { claimJob } from '../../../../lib/queue/attempt/claim.js';
import { PayloadTooLargeError } from '../../../../lib/domain/errors.js';
import { putJobType } from '../../../../lib/queue/catalog/job-types.js';
import { enqueueJob } from '../../../../lib/queue/enqueue/enqueue.js';
import { getJob } from '../../../../lib/queue/read-job.js';
import { parseJobTypeDefinition } from '../../../../lib/wire/job-types.js';
import { MAX_DATA_BYTES } from '../../../../lib/domain/job.js';
import type { Job } from '../../../../lib/domain/job.js';
import type { JobType } from '../../../../lib/domain/job-type.js';
import { AWAIT_CALLBACK } from '../../../../lib/queue/attempt/run-batch.js';
import { runClaimedJob } from '../../../../lib/queue/attempt/run-batch.js';
import { createTestQueue, type TestQueue } from '../../../support/queue.js';

let queue: TestQueue;
const worker = { id: 'w1', host: 'test' };
const bigText = (bytes: number) => 'x'.repeat(bytes);

beforeAll(async () => {
  queue = await createTestQueue();
});
afterAll(() => queue.drop());

async function claimed(jobType: JobType, id: string, data: unknown): Promise<Job> {
  await enqueueJob(queue.ctx, jobType, id, { data, priority: 100, weight: 1 });
  const claim = await claimJob(queue.ctx, { type: jobType.name, id }, jobType);
  if (claim.kind !== 'claimed') throw new Error(`not claimed: ${claim.kind}`);
  return claim.job;
}

test('data over 256 KiB is refused with the field named, and nothing is stored', async () => {
  const { jobType } = await putJobType(queue.ctx, 'big-data', parseJobTypeDefinition({ target: { kind: 'handler', name: 'echo' } }));
  const enqueue = enqueueJob(queue.ctx, jobType, 'too-big', { data: bigText(MAX_DATA_BYTES), priority: 100, weight: 1 });
  await expect(enqueue).rejects.toMatchObject({ name: 'PayloadTooLargeError', field: 'data' });
  expect(await getJob(queue.ctx, 'big-data', 'too-big')).toBeUndefined();
});

test('a job with 256 KiB of data and a full history of long errors still fits in one item', async () => {
  const { jobType } = await putJobType(
    queue.ctx,
    'heavy',
    parseJobTypeDefinition({ target: { kind: 'handler', name: 'fail' }, attempts: 30, retry: { kind: 'fixed', delay_s: 0 } }),
  );
  const registry = {
    handlers: {
      fail: () => {
        const error = new Error(bigText(20_000));
        error.stack = bigText(50_000);
        throw error;
      },
    },
    retryPolicies: {},
  };
  await enqueueJob(queue.ctx, jobType, 'heavy-1', { data: bigText(MAX_DATA_BYTES - 2), priority: 100, weight: 1 });
  for (let attempt = 1; attempt <= 30; attempt++) {
    const claim = await claimJob(queue.ctx, { type: 'heavy', id: 'heavy-1' }, jobType);
    if (claim.kind !== 'claimed') throw new Error(`attempt ${attempt} not claimed`);
    expect(await runClaimedJob(queue.as('worker'), claim.job, jobType, { registry, worker })).toBe(attempt < 30 ? 'retrying' : 'failed');
  }
  const job = await getJob(queue.ctx, 'heavy', 'heavy-1');
  expect(job?.history).toHaveLength(25);
  expect(job?.historyDropped).toBe(5);
});

test('a handler result over 64 KiB fails the attempt without retry instead of breaking the item', async () => {
  const { jobType } = await putJobType(queue.ctx, 'big-result', parseJobTypeDefinition({ target: { kind: 'handler', name: 'big' } }));
  const registry = { handlers: { big: () => ({ blob: bigText(70_000) }) }, retryPolicies: {} };
  const job = await claimed(jobType, 'r1', { n: 1 });
  expect(await runClaimedJob(queue.as('worker'), job, jobType, { registry, worker })).toBe('failed');
  const stored = await getJob(queue.ctx, 'big-result', 'r1');
  expect(stored?.status).toBe('failed');
  expect(stored?.history[0]?.error?.class).toBe('ResultTooLargeError');
});

test('a callback result over 64 KiB is refused with the field named, and the attempt stays open', async () => {
  const { jobType } = await putJobType(
    queue.ctx,
    'callback-result',
    parseJobTypeDefinition({ target: { kind: 'handler', name: 'await_callback' } }),
  );
  const registry = { handlers: { await_callback: () => AWAIT_CALLBACK }, retryPolicies: {} };
  const job = await claimed(jobType, 'c1', {});
  expect(await runClaimedJob(queue.as('worker'), job, jobType, { registry, worker })).toBe('awaiting_callback');
  const callback = completeFromCallback(queue.ctx, jobType, 'c1', { status: 'succeeded', attempt: 1, result: bigText(70_000) }, {});
  await expect(callback).rejects.toBeInstanceOf(PayloadTooLargeError);
  expect((await getJob(queue.ctx, 'callback-result', 'c1'))?.status).toBe('awaiting_callback');
});
