/**
 * Correlation keys (docs/guides/correlation-keys.md): a key is held by at most one job of a type that
 * has not finished, and `POST /v1/callbacks/{correlation_key}` ends the current
 * attempt of that job exactly as its status callback would.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { DeleteCommand } from '@aws-sdk/lib-dynamodb';
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import { registry } from '../../../../../functions/worker/handlers/index.js';
import { trackConsumedCapacity } from '../../../../../infra/local/aws/capacity-meter.js';
import { createCallbackToken } from '../../../../../lib/domain/callback-tokens.js';
import { claimJob } from '../../../../../lib/queue/attempt/claim.js';
import { completeCorrelatedJob, findActiveCorrelatedJob } from '../../../../../lib/queue/attempt/callbacks.js';
import { ConflictError } from '../../../../../lib/domain/errors.js';
import { requireJobType } from '../../../../../lib/queue/catalog/job-types.js';
import { enqueueJob } from '../../../../../lib/queue/enqueue/enqueue.js';
import { getJob } from '../../../../../lib/queue/read-job.js';
import { correlationItemKey, jobKey } from '../../../../../lib/store/keys.js';
import type { Job } from '../../../../../lib/domain/job.js';
import { pollOnce } from '../../../../../lib/queue/poll/poll.js';
import { type CursorCache } from '../../../../../lib/queue/poll/poll-state.js';
import { runClaimedJob, runWorkerBatch } from '../../../../../lib/queue/attempt/run-batch.js';
import { createApiClient, createTestApi, freshApiPerTest, itemsWithPk, tableItems, type ApiClient } from '../../../../support/api.js';
import { asFunction, createTestQueue, realClock, type TestQueue } from '../../../../support/queue.js';
import { eventually } from '../../../../support/eventually.js';
import { loseAnswers } from '../../../../support/faults.js';

const api = freshApiPerTest();
const WORKER = { id: 'worker-1', host: 'host-a' };
const HOOKS_TYPE = {
  target: { kind: 'handler', name: 'await_callback' },
  attempts: 3,
  visibility_timeout_s: 30,
  timeout_s: 600,
  retry: { kind: 'fixed', delay_s: 10 },
};

beforeEach(async () => {
  const { api: client } = api();
  for (const type of ['hooks', 'orders']) expect((await client.put(`/v1/job-types/${type}`, HOOKS_TYPE)).status).toBe(201);
});

/** Claims the job as a poller would and runs it through the real worker: `await_callback` leaves it awaiting its callback. */
async function claimAndRun(type: string, id: string): Promise<string> {
  const { ctx } = api().queue;
  const jobType = await requireJobType(ctx, type);
  const claimed = await claimJob(ctx, { type, id }, jobType);
  if (claimed.kind !== 'claimed') throw new Error(`could not claim ${type}/${id}: ${claimed.kind}`);
  return runClaimedJob(asFunction(ctx, 'worker'), claimed.job, jobType, { registry, worker: WORKER });
}

/** A job holding `key`, awaiting its callback at attempt 1. */
async function awaitingJob(type: string, id: string, key: string): Promise<void> {
  expect((await api().api.put(`/v1/jobs/${type}/${id}`, { data: { id }, correlation_key: key })).status).toBe(201);
  expect(await claimAndRun(type, id)).toBe('awaiting_callback');
}

/** The pointer of `type`'s holder of `key` (the key's partition holds one per type). */
async function pointerItems(key: string, type = 'hooks'): Promise<Record<string, unknown>[]> {
  const itemKey = correlationItemKey(type, key);
  return (await itemsWithPk(api().queue, itemKey.pk)).filter((item) => item.sk === itemKey.sk);
}

describe('enqueue with a correlation_key', () => {
  test('the key is stored and returned with the job', async () => {
    const { api: client } = api();
    const created = await client.put('/v1/jobs/hooks/j1', { data: 1, correlation_key: 'order-42:reply' });
    expect(created.status).toBe(201);
    expect(created.body.correlation_key).toBe('order-42:reply');
    expect((await client.get('/v1/jobs/hooks/j1')).body.correlation_key).toBe('order-42:reply');
    expect(await pointerItems('order-42:reply')).toEqual([expect.objectContaining({ jobType: 'hooks', jobId: 'j1' })]);
  });

  test('a job without a key says correlation_key null and writes no pointer', async () => {
    const { api: client, queue } = api();
    expect((await client.put('/v1/jobs/hooks/j1', { data: 1 })).body.correlation_key).toBeNull();
    expect((await tableItems(queue)).filter((item) => String(item.pk).startsWith('CORR#'))).toEqual([]);
  });

  test('the same body again is 200 with the same job; the same id with another key is 409', async () => {
    const { api: client } = api();
    const first = await client.put('/v1/jobs/hooks/j1', { data: 1, correlation_key: 'k1' });
    const again = await client.put('/v1/jobs/hooks/j1', { data: 1, correlation_key: 'k1' });
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
    expect((await client.put('/v1/jobs/hooks/j1', { data: 1, correlation_key: 'k2' })).status).toBe(409);
    expect((await client.put('/v1/jobs/hooks/j1', { data: 1 })).status).toBe(409);
    expect(await pointerItems('k2')).toEqual([]);
  });

  test('a second unfinished job with the same key, of its type, is 409 naming correlation_key and changes nothing', async () => {
    const { api: client, queue } = api();
    await awaitingJob('hooks', 'j1', 'shared');
    expect((await client.put('/v1/jobs/hooks/j2', { data: 2, correlation_key: 'other' })).status).toBe(201);
    // Records of the bucket directory aside: a refused enqueue may have recorded the bucket its job would have
    // waited in, which costs a walk one query and changes no job, key or count.
    const jobsAndKeys = async () => (await tableItems(queue)).filter((item) => !String(item.pk).startsWith('DIR#'));
    const before = await jobsAndKeys();
    for (const [type, id] of [['hooks', 'j3'], ['hooks', 'j4']] as const) {
      const response = await client.put(`/v1/jobs/${type}/${id}`, { data: 3, correlation_key: 'shared' });
      expect(response.status).toBe(409);
      expect(response.body.error.code).toBe('conflict');
      expect(response.body.error.details).toEqual([{ field: 'correlation_key', message: expect.any(String) }]);
      // The holder is not named: the caller may have no right to see it.
      expect(response.text).not.toContain('j1');
    }
    expect(await jobsAndKeys()).toEqual(before);
  });

  test("another type's unfinished job may hold the same key: keys are unique per type", async () => {
    const { api: client } = api();
    await awaitingJob('hooks', 'j1', 'shared');
    expect((await client.put('/v1/jobs/orders/j1', { data: 1, correlation_key: 'shared' })).status).toBe(201);
    expect(await pointerItems('shared', 'orders')).toEqual([expect.objectContaining({ jobType: 'orders', jobId: 'j1' })]);
    expect(await pointerItems('shared', 'hooks')).toEqual([expect.objectContaining({ jobType: 'hooks', jobId: 'j1' })]);
  });

  test('a queued job holds its key too', async () => {
    const { api: client } = api();
    expect((await client.put('/v1/jobs/hooks/j1', { correlation_key: 'k' })).status).toBe(201);
    expect((await client.post('/v1/jobs/hooks', { correlation_key: 'k' })).status).toBe(409);
  });

  test('a key is free again once its job is cancelled, and the pointer then names the new job', async () => {
    const { api: client } = api();
    expect((await client.put('/v1/jobs/hooks/j1', { correlation_key: 'k' })).status).toBe(201);
    expect((await client.delete('/v1/jobs/hooks/j1')).status).toBe(200);
    expect((await client.put('/v1/jobs/hooks/j2', { correlation_key: 'k' })).status).toBe(201);
    expect(await pointerItems('k')).toEqual([expect.objectContaining({ jobType: 'hooks', jobId: 'j2' })]);
    // The cancelled job keeps its key as a record; enqueueing it again is still the same job.
    expect((await client.put('/v1/jobs/hooks/j1', { correlation_key: 'k' })).status).toBe(200);
  });

  test('a key is free again once its job ended through its status callback, which leaves the pointer to be taken over', async () => {
    const { api: client } = api();
    await awaitingJob('hooks', 'j1', 'k');
    expect((await client.post('/v1/jobs/hooks/j1', { status: 'failed', attempt: 1, retryable: false })).body.status).toBe('failed');
    expect(await pointerItems('k')).toHaveLength(1);
    expect((await client.put('/v1/jobs/hooks/j2', { correlation_key: 'k' })).status).toBe(201);
    expect(await pointerItems('k')).toEqual([expect.objectContaining({ jobType: 'hooks', jobId: 'j2' })]);
  });

  test('a key whose job is gone (purged by TTL) is taken over', async () => {
    const { api: client, queue } = api();
    expect((await client.put('/v1/jobs/hooks/j1', { correlation_key: 'k' })).status).toBe(201);
    await queue.clients.db.send(new DeleteCommand({ TableName: queue.tableName, Key: jobKey('hooks', 'j1') }));
    expect((await client.put('/v1/jobs/hooks/j2', { correlation_key: 'k' })).status).toBe(201);
    // Even by the same id again: the pointer names it, but no job does.
    await queue.clients.db.send(new DeleteCommand({ TableName: queue.tableName, Key: jobKey('hooks', 'j2') }));
    expect((await client.put('/v1/jobs/hooks/j2', { correlation_key: 'k' })).status).toBe(201);
  });

  test.each([
    ['a space', 'a b'],
    ['a slash', 'a/b'],
    ['a leading dash', '-a'],
    ['257 characters', 'k'.repeat(257)],
    ['an empty string', ''],
    ['a number', 42],
  ])('a key with %s is 400 naming correlation_key', async (_name, key) => {
    const { api: client, queue } = api();
    const before = await tableItems(queue);
    const response = await client.put('/v1/jobs/hooks/j1', { correlation_key: key });
    expect(response.status).toBe(400);
    expect(response.body.error.details.map((detail: { field: string }) => detail.field)).toEqual(['correlation_key']);
    expect(await tableItems(queue)).toEqual(before);
  });

  test('a key of 256 characters of every allowed kind is accepted', async () => {
    const key = `Aa0_.:@=~-${'k'.repeat(246)}`;
    expect((await api().api.put('/v1/jobs/hooks/j1', { correlation_key: key })).status).toBe(201);
  });
});

describe('enqueues racing for one key', () => {
  const RACERS = 12;

  async function race(): Promise<{ created: Job[]; conflicts: number }> {
    const { ctx } = api().queue;
    const jobType = await requireJobType(ctx, 'hooks');
    const outcomes = await Promise.allSettled(
      Array.from({ length: RACERS }, (_, i) =>
        enqueueJob(ctx, jobType, `racer-${i}`, { data: i, priority: 100, weight: 1, correlationKey: 'contested' }),
      ),
    );
    const created = outcomes.flatMap((outcome) => (outcome.status === 'fulfilled' && outcome.value.created ? [outcome.value.job] : []));
    const rejected = outcomes.flatMap((outcome) => (outcome.status === 'rejected' ? [outcome.reason] : []));
    expect(rejected.every((reason) => reason instanceof ConflictError)).toBe(true);
    return { created, conflicts: rejected.length };
  }

  async function storedRacers(): Promise<Job[]> {
    const { ctx } = api().queue;
    const jobs = await Promise.all(Array.from({ length: RACERS }, (_, i) => getJob(ctx, 'hooks', `racer-${i}`)));
    return jobs.filter((job) => job !== undefined);
  }

  test('for a free key, exactly one wins and the others are conflicts that stored nothing', async () => {
    const { created, conflicts } = await race();
    expect(created).toHaveLength(1);
    expect(conflicts).toBe(RACERS - 1);
    expect((await storedRacers()).map((job) => job.id)).toEqual([created[0]!.id]);
    expect(await pointerItems('contested')).toEqual([expect.objectContaining({ jobType: created[0]!.type, jobId: created[0]!.id })]);
  });

  test('for a key held by a finished job, exactly one takes it over', async () => {
    const { api: client } = api();
    expect((await client.put('/v1/jobs/hooks/old', { correlation_key: 'contested' })).status).toBe(201);
    expect((await client.delete('/v1/jobs/hooks/old')).status).toBe(200);
    const { created, conflicts } = await race();
    expect(created).toHaveLength(1);
    expect(conflicts).toBe(RACERS - 1);
    expect((await storedRacers()).map((job) => job.id)).toEqual([created[0]!.id]);
    expect(await pointerItems('contested')).toEqual([expect.objectContaining({ jobId: created[0]!.id })]);
  });
});

test('an enqueue whose transaction was applied but whose answer was lost is still answered 201, once', async () => {
  const { api: client, queue } = api();
  const answers = loseAnswers(queue.clientsOf('api').base, ({ commandName }) => commandName === 'TransactWriteItemsCommand');
  const response = await client.put('/v1/jobs/hooks/j1', { data: 1, correlation_key: 'k' });
  expect(answers.lost).toBe(1);
  expect(response.status).toBe(201);
  expect(await pointerItems('k')).toEqual([expect.objectContaining({ jobId: 'j1' })]);
});

describe('POST /v1/callbacks/{correlation_key}', () => {
  test('completes the job holding the key like its status callback, and frees the key', async () => {
    const { api: client, queue } = api();
    await awaitingJob('hooks', 'j1', 'psp:order-42');
    queue.clock.advance(2_000);
    const response = await client.post('/v1/callbacks/psp:order-42', { status: 'succeeded', attempt: 1, result: { paid: true } });
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ id: 'j1', type: 'hooks', status: 'succeeded', result: { paid: true }, correlation_key: 'psp:order-42' });
    expect(response.body.history).toEqual([expect.objectContaining({ attempt: 1, outcome: 'succeeded', worker: WORKER })]);
    expect((await client.get('/v1/jobs/hooks/j1')).body).toEqual(response.body);
    expect(await pointerItems('psp:order-42')).toEqual([]);
    expect((await client.put('/v1/jobs/orders/next', { correlation_key: 'psp:order-42' })).status).toBe(201);
  });

  test('a failure that will be retried keeps the key with the job', async () => {
    const { api: client } = api();
    await awaitingJob('hooks', 'j1', 'k');
    const response = await client.post('/v1/callbacks/k', { status: 'failed', attempt: 1, error: { class: 'Declined', message: 'no' } });
    expect(response.body).toMatchObject({ status: 'queued', attempt: 1 });
    expect(await pointerItems('k')).toHaveLength(1);
    expect((await client.put('/v1/jobs/hooks/j2', { correlation_key: 'k' })).status).toBe(409);
  });

  test('a non-retryable failure ends the job and frees the key', async () => {
    const { api: client } = api();
    await awaitingJob('hooks', 'j1', 'k');
    const response = await client.post('/v1/callbacks/k', { status: 'failed', attempt: 1, retryable: false });
    expect(response.body).toMatchObject({ status: 'failed', attempt: 1 });
    expect(await pointerItems('k')).toEqual([]);
  });

  test('a stale attempt is 409 and changes nothing', async () => {
    const { api: client, queue } = api();
    await awaitingJob('hooks', 'j1', 'k');
    const before = await tableItems(queue);
    const response = await client.post('/v1/callbacks/k', { status: 'succeeded', attempt: 2 });
    expect(response.status).toBe(409);
    expect(response.body.error.code).toBe('conflict');
    expect(await tableItems(queue)).toEqual(before);
  });

  test('a queued job holding the key is 409: no attempt of it is open', async () => {
    const { api: client } = api();
    expect((await client.put('/v1/jobs/hooks/j1', { correlation_key: 'k' })).status).toBe(201);
    expect((await client.post('/v1/callbacks/k', { status: 'succeeded', attempt: 1 })).status).toBe(409);
  });

  test('a key no job holds is 404 and changes nothing', async () => {
    const { api: client, queue } = api();
    const before = await tableItems(queue);
    const response = await client.post('/v1/callbacks/nobody', { status: 'succeeded', attempt: 1 });
    expect(response.status).toBe(404);
    expect(response.body.error.code).toBe('not_found');
    expect(await tableItems(queue)).toEqual(before);
  });

  test('the key of a finished job is 404, though its pointer is still there', async () => {
    const { api: client } = api();
    await awaitingJob('hooks', 'j1', 'k');
    expect((await client.post('/v1/jobs/hooks/j1', { status: 'succeeded', attempt: 1 })).status).toBe(200);
    expect(await pointerItems('k')).toHaveLength(1);
    expect((await client.post('/v1/callbacks/k', { status: 'succeeded', attempt: 1 })).status).toBe(404);
  });

  test('an invalid body is 400 before any lookup; a key outside the pattern is 400 naming correlation_key', async () => {
    const { api: client } = api();
    const badAttempt = await client.post('/v1/callbacks/nobody', { status: 'succeeded', attempt: 0 });
    expect(badAttempt.status).toBe(400);
    expect(badAttempt.body.error.details.map((d: { field: string }) => d.field)).toEqual(['attempt']);
    for (const path of ['/v1/callbacks/a%2Fb', '/v1/callbacks/a%20b', `/v1/callbacks/${'k'.repeat(257)}`, '/v1/callbacks/%E0%A4%A']) {
      const response = await client.post(path, { status: 'succeeded', attempt: 1 });
      expect(response.status).toBe(400);
      expect(response.body.error.details.map((d: { field: string }) => d.field)).toEqual(['correlation_key']);
    }
  });
});

describe('POST /v1/callbacks/{correlation_key} without attempt', () => {
  test('ends the attempt that is open, as the same callback naming it would', async () => {
    const { api: client } = api();
    await awaitingJob('hooks', 'j1', 'k');
    const failed = await client.post('/v1/callbacks/k', { status: 'failed', error: { class: 'Declined', message: 'no' } });
    expect(failed.status).toBe(200);
    expect(failed.body).toMatchObject({ status: 'queued', attempt: 1 });
    api().queue.clock.advance(10_000);
    expect(await claimAndRun('hooks', 'j1')).toBe('awaiting_callback');
    const response = await client.post('/v1/callbacks/k', { status: 'succeeded', result: { paid: true } });
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ status: 'succeeded', attempt: 2, result: { paid: true } });
    expect(response.body.history.map((record: { attempt: number; outcome: string }) => [record.attempt, record.outcome])).toEqual([
      [1, 'failed'],
      [2, 'succeeded'],
    ]);
    expect(await pointerItems('k')).toEqual([]);
  });

  test('an attempt given is still checked: a stale one is 409 and changes nothing', async () => {
    const { api: client, queue } = api();
    await awaitingJob('hooks', 'j1', 'k');
    expect((await client.post('/v1/callbacks/k', { status: 'failed' })).body.status).toBe('queued');
    queue.clock.advance(10_000);
    expect(await claimAndRun('hooks', 'j1')).toBe('awaiting_callback');
    const before = await tableItems(queue);
    const response = await client.post('/v1/callbacks/k', { status: 'succeeded', attempt: 1 });
    expect(response.status).toBe(409);
    expect(await tableItems(queue)).toEqual(before);
  });

  test('a job holding the key with no attempt open is 409 naming its status, and changes nothing', async () => {
    const { api: client, queue } = api();
    expect((await client.put('/v1/jobs/hooks/j1', { correlation_key: 'k' })).status).toBe(201);
    const before = await tableItems(queue);
    const response = await client.post('/v1/callbacks/k', { status: 'succeeded' });
    expect(response.status).toBe(409);
    expect(response.body.error.message).toContain('queued');
    expect(await tableItems(queue)).toEqual(before);
  });

  test('a key no job holds is 404', async () => {
    const response = await api().api.post('/v1/callbacks/nobody', { status: 'succeeded' });
    expect(response.status).toBe(404);
    expect(response.body.error.code).toBe('not_found');
  });

  test('a callback read before its attempt ended never ends the attempt that began since', async () => {
    const { api: client, queue } = api();
    const { ctx } = queue;
    await awaitingJob('hooks', 'j1', 'k');
    const found = await findActiveCorrelatedJob(asFunction(ctx, 'api'), 'k', (type) => type === 'hooks');
    expect(found?.job.attempt).toBe(1);
    // Between the callback's read and its write, attempt 1 fails and attempt 2 is claimed.
    expect((await client.post('/v1/jobs/hooks/j1', { status: 'failed', attempt: 1 })).body.status).toBe('queued');
    queue.clock.advance(10_000);
    expect(await claimAndRun('hooks', 'j1')).toBe('awaiting_callback');
    const jobType = await requireJobType(ctx, 'hooks');
    await expect(completeCorrelatedJob(asFunction(ctx, 'api'), jobType, found!, { status: 'succeeded' }, registry.retryPolicies)).rejects.toThrow(
      ConflictError,
    );
    expect(await getJob(ctx, 'hooks', 'j1')).toMatchObject({ status: 'awaiting_callback', attempt: 2 });
  });
});

describe('who may call back by correlation key', () => {
  const CALLBACK_SECRET = 'callback-secret-for-tests';
  let admin: ApiClient;

  beforeEach(() => {
    admin = createTestApi(api().queue, { callbackTokenSecret: CALLBACK_SECRET });
  });

  async function clientWith(...scopes: string[]): Promise<ApiClient> {
    const created = await admin.post('/v1/keys', { scopes });
    expect(created.status).toBe(201);
    return createApiClient(admin.handler, created.body.key);
  }

  test('a key with callback:<type> of the job completes it', async () => {
    await awaitingJob('hooks', 'j1', 'k');
    const caller = await clientWith('callback:hooks');
    expect((await caller.post('/v1/callbacks/k', { status: 'succeeded', attempt: 1 })).body.status).toBe('succeeded');
  });

  test('callback:* completes it too', async () => {
    await awaitingJob('hooks', 'j1', 'k');
    const caller = await clientWith('callback:*');
    expect((await caller.post('/v1/callbacks/k', { status: 'succeeded', attempt: 1 })).status).toBe(200);
  });

  test("a key for another type's callbacks gets the very answer of a key no job holds, and changes nothing", async () => {
    const { queue } = api();
    await awaitingJob('hooks', 'held', 'k');
    const caller = await clientWith('callback:orders', 'read:*', 'enqueue:*');
    // The key's last use is recorded on its own item; everything else must stay as it was.
    const jobsAndPointers = async () => (await tableItems(queue)).filter((item) => !String(item.pk).startsWith('KEY#'));
    const before = await jobsAndPointers();
    const held = await caller.post('/v1/callbacks/k', { status: 'succeeded', attempt: 1 });
    const free = await caller.post('/v1/callbacks/q', { status: 'succeeded', attempt: 1 });
    expect(held.status).toBe(404);
    expect(free.status).toBe(404);
    const shape = (body: any) => ({ ...body.error, message: body.error.message.replace(/"[kq]"/, '"…"'), request_id: null });
    expect(shape(held.body)).toEqual(shape(free.body));
    expect(held.text).not.toContain('hooks');
    expect(held.text).not.toContain('held');
    expect(await jobsAndPointers()).toEqual(before);
  });

  test('a key without any callback scope is 403 whether or not a job holds the key', async () => {
    await awaitingJob('hooks', 'j1', 'k');
    const caller = await clientWith('enqueue:hooks', 'read:hooks');
    expect((await caller.post('/v1/callbacks/k', { status: 'succeeded', attempt: 1 })).status).toBe(403);
    expect((await caller.post('/v1/callbacks/nobody', { status: 'succeeded', attempt: 1 })).status).toBe(403);
  });

  test("the job's own callback token opens only its status callback, not the correlation route", async () => {
    await awaitingJob('hooks', 'j1', 'k');
    const token = encodeURIComponent(createCallbackToken(CALLBACK_SECRET, { type: 'hooks', id: 'j1', attempt: 1 }));
    const byKey = await admin.post(`/v1/callbacks/k?token=${token}`, { status: 'succeeded', attempt: 1 }, { token: null });
    expect(byKey.status).toBe(401);
    expect((await admin.get('/v1/jobs/hooks/j1')).body.status).toBe('awaiting_callback');
    const byJob = await admin.post(`/v1/jobs/hooks/j1?token=${token}`, { status: 'succeeded', attempt: 1 }, { token: null });
    expect(byJob.status).toBe(200);
  });
});

describe('with two pollers and workers running', () => {
  let queue: TestQueue;
  afterEach(async () => {
    await queue?.drop();
  });

  test('each correlation callback completes exactly the job holding its key', async () => {
    queue = await createTestQueue({ clock: realClock });
    const client = createTestApi(queue);
    expect((await client.put('/v1/job-types/hooks', HOOKS_TYPE)).status).toBe(201);
    const JOBS = 20;
    const keys = Array.from({ length: JOBS }, (_, i) => `reply-${i}`);
    const ids = new Map<string, string>();
    for (const key of keys) {
      const created = await client.post('/v1/jobs/hooks', { data: { key }, correlation_key: key });
      expect(created.status).toBe(201);
      ids.set(key, created.body.id);
    }
    const jobType = await requireJobType(queue.ctx, 'hooks');

    const stop = new AbortController();
    const workerErrors: unknown[] = [];
    const pollers = ['a', 'b'].map(async (name) => {
      const cursors: CursorCache = new Map();
      const invoker = {
        invoke: async (batch: Parameters<typeof runWorkerBatch>[1]) =>
          void (await runWorkerBatch(queue.as('worker'), batch, {
            registry,
            worker: { id: `worker-${name}`, host: `host-${name}` },
            onError: (_job, error) => workerErrors.push(error),
          })),
      };
      let claimed = 0;
      while (!stop.signal.aborted) {
        const result = await pollOnce(queue.as('poller'), { jobTypes: [jobType], invoker, cursors });
        claimed += result.claimed;
        // An idle poller's pause between polls, as its poll interval would be.
        if (result.claimed === 0) await delay(20);
      }
      return claimed;
    });

    const statuses = async () => Promise.all(keys.map(async (key) => (await getJob(queue.ctx, 'hooks', ids.get(key)!))!.status));
    expect(await eventually(statuses, (all) => all.every((status) => status === 'awaiting_callback'))).toEqual(keys.map(() => 'awaiting_callback'));

    // Complete them in a shuffled order, each with a result naming its own key, while the pollers keep polling.
    const order = [...keys].sort((a, b) => ((a.length * 7919 + Number(a.slice(6)) * 104_729) % 97) - ((b.length * 7919 + Number(b.slice(6)) * 104_729) % 97));
    for (const [done, key] of order.entries()) {
      const response = await client.post(`/v1/callbacks/${key}`, { status: 'succeeded', attempt: 1, result: { key } });
      expect(response.status).toBe(200);
      expect(response.body).toMatchObject({ id: ids.get(key), correlation_key: key, status: 'succeeded', result: { key } });
      const stillAwaiting = new Set(order.slice(done + 1));
      for (const other of keys) {
        const job = (await getJob(queue.ctx, 'hooks', ids.get(other)!))!;
        expect(job.status).toBe(stillAwaiting.has(other) ? 'awaiting_callback' : 'succeeded');
      }
    }
    stop.abort();
    const claims = await Promise.all(pollers);
    expect(workerErrors).toEqual([]);
    expect(claims[0]! + claims[1]!).toBe(JOBS);
    for (const key of keys) {
      const job = (await getJob(queue.ctx, 'hooks', ids.get(key)!))!;
      expect({ result: job.result, attempts: job.history.length }).toEqual({ result: { key }, attempts: 1 });
    }
  }, 60_000);
});

describe('capacity', () => {
  let queue: TestQueue;
  afterEach(async () => {
    await queue?.drop();
  });

  // A transaction bills each write twice: the job, its index entry and the pointer, 6 units where a plain put costs 2.
  test('a correlation key costs 4 more write units to enqueue, and its callback 1 more write and 1 more read', async () => {
    queue = await createTestQueue();
    const client = createTestApi(queue);
    expect((await client.put('/v1/job-types/hooks', HOOKS_TYPE)).status).toBe(201);
    const capacity = trackConsumedCapacity(queue.clientsOf('api').base);
    const JOBS = 20;
    const data = { text: 'x'.repeat(150) };
    const measure = async (run: () => Promise<void>): Promise<{ writeUnits: number; readUnits: number }> => {
      const before = { writeUnits: capacity.writeUnits, readUnits: capacity.readUnits };
      await run();
      return { writeUnits: (capacity.writeUnits - before.writeUnits) / JOBS, readUnits: (capacity.readUnits - before.readUnits) / JOBS };
    };
    const plain = await measure(async () => {
      for (let i = 0; i < JOBS; i++) await enqueueJob(queue.ctx, await requireJobType(queue.ctx, 'hooks'), `plain-${i}`, { data, priority: 100, weight: 1 });
    });
    const correlated = await measure(async () => {
      for (let i = 0; i < JOBS; i++) {
        await enqueueJob(queue.ctx, await requireJobType(queue.ctx, 'hooks'), `corr-${i}`, { data, priority: 100, weight: 1, correlationKey: `k-${i}` });
      }
    });
    const jobType = await requireJobType(queue.ctx, 'hooks');
    for (let i = 0; i < JOBS; i++) {
      for (const prefix of ['plain', 'corr']) {
        const claimed = await claimJob(queue.ctx, { type: 'hooks', id: `${prefix}-${i}` }, jobType);
        if (claimed.kind !== 'claimed') throw new Error('not claimed');
        await runClaimedJob(queue.as('worker'), claimed.job, jobType, { registry, worker: WORKER });
      }
    }
    const statusCallback = await measure(async () => {
      for (let i = 0; i < JOBS; i++) expect((await client.post(`/v1/jobs/hooks/plain-${i}`, { status: 'succeeded', attempt: 1 })).status).toBe(200);
    });
    const correlationCallback = await measure(async () => {
      for (let i = 0; i < JOBS; i++) expect((await client.post(`/v1/callbacks/k-${i}`, { status: 'succeeded', attempt: 1 })).status).toBe(200);
    });
    console.log('capacity per job', { plain, correlated, statusCallback, correlationCallback });
    expect(correlated.writeUnits - plain.writeUnits).toBeLessThanOrEqual(4);
    expect(correlationCallback.writeUnits - statusCallback.writeUnits).toBeLessThanOrEqual(1);
    expect(correlationCallback.readUnits - statusCallback.readUnits).toBeLessThanOrEqual(1);
  });
});
