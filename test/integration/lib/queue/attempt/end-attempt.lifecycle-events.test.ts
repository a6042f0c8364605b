/** Lifecycle events are published once the write that made them true succeeded, and never for a write that did not. */
import { beforeEach, afterEach, expect, test } from 'vitest';
import { claimJob } from '../../../../../lib/queue/attempt/claim.js';
import { endAttempt } from '../../../../../lib/queue/attempt/end-attempt.js';
import { completeFromCallback } from '../../../../../lib/queue/attempt/callbacks.js';
import { createMemoryPublisher } from '../../../../../lib/domain/lifecycle-events.js';
import { cancelJob } from '../../../../../lib/queue/attempt/cancel.js';
import type { Job } from '../../../../../lib/domain/job.js';
import type { JobType } from '../../../../../lib/domain/job-type.js';
import { loseAnswers } from '../../../../support/faults.js';
import { jobKey } from '../../../../../lib/store/keys.js';
import { createTestQueue, type TestQueue } from '../../../../support/queue.js';
import { T0, defineType, enqueue } from '../../../../support/lib-fixtures.js';

let queue: TestQueue;
let events: ReturnType<typeof createMemoryPublisher>;
let hooks: JobType;

beforeEach(async () => {
  events = createMemoryPublisher();
  queue = await createTestQueue({ events });
  hooks = await defineType(queue.ctx, 'hooks', { attempts: 2, retry: { kind: 'fixed', delay_s: 10 } });
});
afterEach(() => queue.drop());

async function claim(id: string): Promise<Job> {
  const claimed = await claimJob(queue.ctx, { type: 'hooks', id }, hooks);
  if (claimed.kind !== 'claimed') throw new Error(`not claimed: ${claimed.kind}`);
  return claimed.job;
}

test('cancelling a queued job publishes job.cancelled; a refused cancel publishes nothing', async () => {
  await enqueue(queue.ctx, hooks, 'h-1');
  await cancelJob(queue.ctx, 'hooks', 'h-1');
  await expect(cancelJob(queue.ctx, 'hooks', 'h-1')).rejects.toThrow(/only a job that has not finished/);
  expect(events.events).toEqual([{ name: 'job.cancelled', type: 'hooks', id: 'h-1', attempt: 0, outcome: 'cancelled', status: 'cancelled', atMs: T0 }]);
});

test('cancelling a running job publishes nothing until its attempt ends, then one job.cancelled naming who cancelled it', async () => {
  await enqueue(queue.ctx, hooks, 'h-1');
  const job = await claim('h-1');
  expect((await cancelJob(queue.ctx, 'hooks', 'h-1', 'key-1')).state).toBe('cancelling');
  expect(events.events).toEqual([]);
  const ended = await endAttempt(queue.ctx, job, { ending: { outcome: 'succeeded' }, jobType: hooks, customPolicies: {} });
  expect(ended?.next.status).toBe('cancelled');
  expect(events.events).toEqual([{ name: 'job.cancelled', type: 'hooks', id: 'h-1', attempt: 1, outcome: 'cancelled', status: 'cancelled', atMs: T0, cancelledBy: 'key-1' }]);
});

test('cancelling a queued job names who cancelled it on its event', async () => {
  await enqueue(queue.ctx, hooks, 'h-1');
  await cancelJob(queue.ctx, 'hooks', 'h-1', 'key-1');
  expect(events.events).toEqual([expect.objectContaining({ name: 'job.cancelled', cancelledBy: 'key-1' })]);
});

test('a job found past its expires_at when it is claimed publishes job.expired', async () => {
  await enqueue(queue.ctx, hooks, 'h-1', { expiresAtMs: T0 + 1_000 });
  queue.clock.advance(2_000);
  expect((await claimJob(queue.ctx, { type: 'hooks', id: 'h-1' }, hooks)).kind).toBe('expired');
  expect(events.events.map((event) => [event.name, event.status])).toEqual([['job.expired', 'expired']]);
});

test('a status callback that ends the attempt publishes its events; a stale second end publishes none', async () => {
  await enqueue(queue.ctx, hooks, 'h-1');
  const job = await claim('h-1');
  await completeFromCallback(queue.ctx, hooks, 'h-1', { status: 'failed', attempt: 1, error: { message: 'nope' } }, {});
  expect(await endAttempt(queue.ctx, job, { ending: { outcome: 'succeeded' }, jobType: hooks, customPolicies: {} })).toBeUndefined();
  expect(events.events.map((event) => [event.name, event.attempt, event.status])).toEqual([['job.failed', 1, 'queued']]);
});

test('an attempt end whose answer was lost after it landed still publishes its event, once', async () => {
  await enqueue(queue.ctx, hooks, 'h-1');
  const job = await claim('h-1');
  const key = JSON.stringify(jobKey('hooks', 'h-1').pk);
  const lost = loseAnswers(queue.clientsOf('worker').base, ({ commandName, input }) => commandName === 'UpdateItemCommand' && JSON.stringify(input).includes(key));
  const ended = await endAttempt(queue.as('worker'), job, { ending: { outcome: 'succeeded' }, jobType: hooks, customPolicies: {} });
  expect(lost.lost).toBe(1);
  expect(ended?.job).toMatchObject({ status: 'succeeded', attempt: 1 });
  expect(events.events.map((event) => [event.name, event.attempt])).toEqual([['job.succeeded', 1]]);
});

test('the last attempt failing publishes job.failed and then job.dead', async () => {
  await enqueue(queue.ctx, hooks, 'h-1');
  for (const attempt of [1, 2]) {
    await claim('h-1');
    await completeFromCallback(queue.ctx, hooks, 'h-1', { status: 'failed', attempt }, {});
    queue.clock.advance(10_000);
  }
  expect(events.events.map((event) => [event.name, event.attempt])).toEqual([
    ['job.failed', 1],
    ['job.failed', 2],
    ['job.dead', 2],
  ]);
});
