/** docs/reference/http-api.md: status callbacks and heartbeats, each guarded by the attempt number (invariant 3). */
import { beforeEach, describe, expect, test } from 'vitest';
import { registry } from '../../../../../functions/worker/handlers/index.js';
import { claimJob } from '../../../../../lib/queue/attempt/claim.js';
import { listJobTypes, requireJobType } from '../../../../../lib/queue/catalog/job-types.js';
import type { Job } from '../../../../../lib/domain/job.js';
import { pollOnce } from '../../../../../lib/queue/poll/poll.js';
import { runClaimedJob, runWorkerBatch } from '../../../../../lib/queue/attempt/run-batch.js';
import { freshApiPerTest, tableItems } from '../../../../support/api.js';
import { asFunction } from '../../../../support/queue.js';

const api = freshApiPerTest();

const WORKER = { id: 'worker-1', host: 'host-a' };
const T0 = Date.parse('2026-11-21T10:00:00.000Z');

beforeEach(async () => {
  const { api: client } = api();
  const hooks = await client.put('/v1/job-types/hooks', {
    target: { kind: 'handler', name: 'await_callback' },
    attempts: 3,
    visibility_timeout_s: 30,
    timeout_s: 600,
    retry: { kind: 'fixed', delay_s: 10 },
  });
  expect(hooks.status).toBe(201);
});

/** Claims the job as a poller would; it is then `running` at the next attempt. */
async function claim(type: string, id: string): Promise<Job> {
  const { ctx } = api().queue;
  const claimed = await claimJob(ctx, { type, id }, await requireJobType(ctx, type));
  if (claimed.kind !== 'claimed') throw new Error(`could not claim ${type}/${id}: ${claimed.kind}`);
  return claimed.job;
}

/** Claims the job and runs it through the real worker with the built-in registry. */
async function claimAndRun(type: string, id: string): Promise<string> {
  const { ctx } = api().queue;
  const job = await claim(type, id);
  return runClaimedJob(asFunction(ctx, 'worker'), job, await requireJobType(ctx, type), { registry, worker: WORKER });
}

/** A `hooks` job whose handler returned AWAIT_CALLBACK: awaiting_callback at attempt 1. */
async function awaitingJob(id = 'job-1', data: unknown = { order: 42 }): Promise<void> {
  expect((await api().api.put(`/v1/jobs/hooks/${id}`, { data })).status).toBe(201);
  expect(await claimAndRun('hooks', id)).toBe('awaiting_callback');
  const job = await api().api.get(`/v1/jobs/hooks/${id}`);
  expect(job.body).toMatchObject({ status: 'awaiting_callback', attempt: 1 });
}

describe('POST /v1/jobs/{type}/{id} (status callback)', () => {
  test('succeeded with a result completes the job: 200, status succeeded, result stored', async () => {
    const { api: client, queue } = api();
    await awaitingJob();
    queue.clock.advance(3_000);
    const response = await client.post('/v1/jobs/hooks/job-1', { status: 'succeeded', attempt: 1, result: { receipt: 'r-1' } });
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({
      status: 'succeeded',
      attempt: 1,
      result: { receipt: 'r-1' },
      finished_at: '2026-11-21T10:00:03.000Z',
      claimed_until: null,
    });
    expect(response.body.history).toHaveLength(1);
    expect(response.body.history[0]).toMatchObject({ attempt: 1, outcome: 'succeeded', error: null, worker: WORKER });
    expect((await client.get('/v1/jobs/hooks/job-1')).body).toEqual(response.body);
  });

  test('a job the poller claimed and the worker deferred is completed by its callback', async () => {
    const { api: client, queue } = api();
    const { ctx } = queue;
    const created = await client.post('/v1/jobs/hooks', { data: { order: 7 } });
    const counts: Record<string, number>[] = [];
    const polled = await pollOnce(asFunction(ctx, 'poller'), {
      jobTypes: await listJobTypes(ctx),
      cursors: new Map(),
      invoker: { invoke: async (batch) => void counts.push(await runWorkerBatch(asFunction(ctx, 'worker'), batch, { registry, worker: WORKER })) },
    });
    expect(polled).toMatchObject({ claimed: 1, dispatched: 1 });
    expect(counts).toEqual([expect.objectContaining({ awaiting_callback: 1, error: 0 })]);
    const path = `/v1/jobs/hooks/${String(created.body.id)}`;
    expect((await client.get(path)).body).toMatchObject({ status: 'awaiting_callback', attempt: 1 });
    const response = await client.post(path, { status: 'succeeded', attempt: 1, result: { shipped: true } });
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ status: 'succeeded', result: { shipped: true } });
  });

  test('succeeded on a job that is running (not deferred) completes it too', async () => {
    const { api: client } = api();
    await client.put('/v1/jobs/hooks/job-1', { data: 1 });
    await claim('hooks', 'job-1');
    const response = await client.post('/v1/jobs/hooks/job-1', { status: 'succeeded', attempt: 1 });
    expect(response.status).toBe(200);
    expect(response.body.status).toBe('succeeded');
  });

  test('a stale (higher) attempt number is 409 conflict and changes nothing', async () => {
    const { api: client, queue } = api();
    await awaitingJob();
    const before = await tableItems(queue);
    const response = await client.post('/v1/jobs/hooks/job-1', { status: 'succeeded', attempt: 2, result: 'late' });
    expect(response.status).toBe(409);
    expect(response.body.error.code).toBe('conflict');
    expect(await tableItems(queue)).toEqual(before);
  });

  test('a callback for an earlier attempt after a retry is 409 conflict and changes nothing', async () => {
    const { api: client, queue } = api();
    await awaitingJob();
    expect((await client.post('/v1/jobs/hooks/job-1', { status: 'failed', attempt: 1 })).body.status).toBe('queued');
    queue.clock.advance(10_000);
    expect(await claimAndRun('hooks', 'job-1')).toBe('awaiting_callback');
    const before = await tableItems(queue);
    const response = await client.post('/v1/jobs/hooks/job-1', { status: 'succeeded', attempt: 1 });
    expect(response.status).toBe(409);
    expect(await tableItems(queue)).toEqual(before);
  });

  test('a second callback after completion is 409 conflict and changes nothing', async () => {
    const { api: client, queue } = api();
    await awaitingJob();
    expect((await client.post('/v1/jobs/hooks/job-1', { status: 'succeeded', attempt: 1, result: 1 })).status).toBe(200);
    const before = await tableItems(queue);
    const second = await client.post('/v1/jobs/hooks/job-1', { status: 'failed', attempt: 1 });
    expect(second.status).toBe(409);
    expect(second.body.error.code).toBe('conflict');
    expect(await tableItems(queue)).toEqual(before);
  });

  test('a callback for a queued job is 409 conflict', async () => {
    const { api: client, queue } = api();
    await client.put('/v1/jobs/hooks/job-1', { data: 1 });
    const before = await tableItems(queue);
    const response = await client.post('/v1/jobs/hooks/job-1', { status: 'succeeded', attempt: 1 });
    expect(response.status).toBe(409);
    expect(await tableItems(queue)).toEqual(before);
  });

  test('failed with retryable false fails the job whatever attempts remain', async () => {
    const { api: client } = api();
    await awaitingJob();
    const response = await client.post('/v1/jobs/hooks/job-1', {
      status: 'failed',
      attempt: 1,
      retryable: false,
      error: { class: 'DownstreamRejected', message: 'card declined' },
    });
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ status: 'failed', attempt: 1, max_attempts: 3, finished_at: '2026-11-21T10:00:00.000Z' });
    expect(response.body.history[0]).toMatchObject({
      attempt: 1,
      outcome: 'failed',
      error: { class: 'DownstreamRejected', message: 'card declined' },
    });
  });

  test('failed and retryable queues the job again for attempt 2 after the retry delay', async () => {
    const { api: client, queue } = api();
    await awaitingJob();
    const response = await client.post('/v1/jobs/hooks/job-1', { status: 'failed', attempt: 1, error: { message: 'try later' } });
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({
      status: 'queued',
      attempt: 1,
      max_attempts: 3,
      run_after: new Date(T0 + 10_000).toISOString(),
      finished_at: null,
    });
    expect(response.body.history).toEqual([
      expect.objectContaining({ attempt: 1, outcome: 'failed', error: { class: 'CallbackFailure', message: 'try later' } }),
    ]);
    queue.clock.advance(10_000);
    expect(await claimAndRun('hooks', 'job-1')).toBe('awaiting_callback');
    expect((await client.get('/v1/jobs/hooks/job-1')).body).toMatchObject({ status: 'awaiting_callback', attempt: 2 });
  });

  test('failed and retryable at the last attempt fails the job', async () => {
    const { api: client, queue } = api();
    await awaitingJob();
    for (const attempt of [1, 2]) {
      expect((await client.post('/v1/jobs/hooks/job-1', { status: 'failed', attempt })).body.status).toBe('queued');
      queue.clock.advance(10_000);
      expect(await claimAndRun('hooks', 'job-1')).toBe('awaiting_callback');
    }
    const last = await client.post('/v1/jobs/hooks/job-1', { status: 'failed', attempt: 3 });
    expect(last.status).toBe(200);
    expect(last.body).toMatchObject({ status: 'failed', attempt: 3 });
    expect(last.body.history.map((record: { attempt: number }) => record.attempt)).toEqual([1, 2, 3]);
  });

  test.each([
    { name: 'an unknown status', body: { status: 'done', attempt: 1 }, field: 'status' },
    { name: 'attempt 0', body: { status: 'succeeded', attempt: 0 }, field: 'attempt' },
    { name: 'no attempt', body: { status: 'succeeded' }, field: 'attempt' },
    { name: 'an unknown field', body: { status: 'succeeded', attempt: 1, extra: true }, field: 'extra' },
  ])('$name is 400 naming field $field and changes nothing', async ({ body, field }) => {
    const { api: client, queue } = api();
    await awaitingJob();
    const before = await tableItems(queue);
    const response = await client.post('/v1/jobs/hooks/job-1', body);
    expect(response.status).toBe(400);
    expect(response.body.error.details).toContainEqual({ field, message: expect.any(String) });
    expect(await tableItems(queue)).toEqual(before);
  });

  // A 250 KiB result beside 200 KiB of data would not fit DynamoDB's 400 KB item;
  // results are capped (lib/domain/job.ts MAX_RESULT_BYTES) so the callback is refused cleanly.
  test('a result over the result cap is 413 naming result and the job stays awaiting_callback', async () => {
    const { api: client, queue } = api();
    await awaitingJob('job-1', 'x'.repeat(200 * 1024));
    const before = await tableItems(queue);
    const response = await client.post('/v1/jobs/hooks/job-1', { status: 'succeeded', attempt: 1, result: 'y'.repeat(250 * 1024) });
    expect(response.status).toBe(413);
    expect(response.body.error.details).toContainEqual({ field: 'result', message: expect.any(String) });
    expect(await tableItems(queue)).toEqual(before);
  });

  test('a result just under the 64 KiB cap is stored', async () => {
    const { api: client } = api();
    await awaitingJob();
    const result = 'r'.repeat(64 * 1024 - 2);
    const response = await client.post('/v1/jobs/hooks/job-1', { status: 'succeeded', attempt: 1, result });
    expect(response.status).toBe(200);
    expect(response.body.result).toBe(result);
  });

  test('a result with a number above 2^53 is stored as JSON holds it', async () => {
    const { api: client } = api();
    await awaitingJob();
    const response = await client.post('/v1/jobs/hooks/job-1', '{"status": "succeeded", "attempt": 1, "result": {"n": 1e300}}');
    expect(response.status).toBe(200);
    expect(response.body.status).toBe('succeeded');
    expect(response.body.result).toEqual({ n: 1e300 });
  });

  test('an unknown job is 404', async () => {
    const response = await api().api.post('/v1/jobs/hooks/nope', { status: 'succeeded', attempt: 1 });
    expect(response.status).toBe(404);
    expect(response.body.error.code).toBe('not_found');
  });
});

describe('POST /v1/jobs/{type}/{id}/heartbeat', () => {
  test('extends a running claim: 200 and claimed_until moves forward', async () => {
    const { api: client, queue } = api();
    await client.put('/v1/jobs/hooks/job-1', { data: 1 });
    const job = await claim('hooks', 'job-1');
    expect(job.claimedUntilMs).toBe(T0 + 30_000);
    queue.clock.advance(20_000);
    const response = await client.post('/v1/jobs/hooks/job-1/heartbeat', { attempt: 1, extend_s: 60 });
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ status: 'running', attempt: 1, claimed_until: new Date(T0 + 80_000).toISOString() });
    expect((await client.get('/v1/jobs/hooks/job-1')).body.claimed_until).toBe(new Date(T0 + 80_000).toISOString());
  });

  test('without extend_s extends by the visibility timeout from now', async () => {
    const { api: client, queue } = api();
    await client.put('/v1/jobs/hooks/job-1', { data: 1 });
    await claim('hooks', 'job-1');
    queue.clock.advance(20_000);
    const response = await client.post('/v1/jobs/hooks/job-1/heartbeat', { attempt: 1 });
    expect(response.status).toBe(200);
    expect(response.body.claimed_until).toBe(new Date(T0 + 50_000).toISOString());
  });

  test('a wrong attempt is 409 conflict and changes nothing', async () => {
    const { api: client, queue } = api();
    await client.put('/v1/jobs/hooks/job-1', { data: 1 });
    await claim('hooks', 'job-1');
    queue.clock.advance(20_000);
    const before = await tableItems(queue);
    const response = await client.post('/v1/jobs/hooks/job-1/heartbeat', { attempt: 2, extend_s: 60 });
    expect(response.status).toBe(409);
    expect(response.body.error.code).toBe('conflict');
    expect(await tableItems(queue)).toEqual(before);
  });

  test('a queued job is 409 conflict and changes nothing', async () => {
    const { api: client, queue } = api();
    await client.put('/v1/jobs/hooks/job-1', { data: 1 });
    const before = await tableItems(queue);
    const response = await client.post('/v1/jobs/hooks/job-1/heartbeat', { attempt: 1 });
    expect(response.status).toBe(409);
    expect(await tableItems(queue)).toEqual(before);
  });

  test('a finished job is 409 conflict', async () => {
    const { api: client } = api();
    await awaitingJob();
    await client.post('/v1/jobs/hooks/job-1', { status: 'succeeded', attempt: 1 });
    const response = await client.post('/v1/jobs/hooks/job-1/heartbeat', { attempt: 1 });
    expect(response.status).toBe(409);
  });

  test('extend_s over 12 hours is 400 naming extend_s', async () => {
    const { api: client } = api();
    await client.put('/v1/jobs/hooks/job-1', { data: 1 });
    await claim('hooks', 'job-1');
    const response = await client.post('/v1/jobs/hooks/job-1/heartbeat', { attempt: 1, extend_s: 43_201 });
    expect(response.status).toBe(400);
    expect(response.body.error.details).toContainEqual({ field: 'extend_s', message: expect.any(String) });
  });

  test('an unknown job is 404', async () => {
    const response = await api().api.post('/v1/jobs/hooks/nope/heartbeat', { attempt: 1 });
    expect(response.status).toBe(404);
  });
});

describe('cancel and the claim', () => {
  test('a running job’s cancel is 202: it stays running, cancel_requested_at set, until its attempt ends', async () => {
    const { api: client } = api();
    await client.put('/v1/jobs/hooks/job-1', { data: 1 });
    await claim('hooks', 'job-1');
    const response = await client.delete('/v1/jobs/hooks/job-1');
    expect(response.status).toBe(202);
    expect(response.body).toMatchObject({ status: 'running', cancel_requested_at: expect.any(String) });
    expect((await client.get('/v1/jobs/hooks/job-1')).body).toMatchObject({ status: 'running', cancel_requested_at: response.body.cancel_requested_at });
  });

  test.each([
    { id: '__proto__', status: 400 },
    { id: 'constructor', status: 404 },
    { id: 'x'.repeat(129), status: 400 },
  ])('a cancel of job $id is $status and writes nothing', async ({ id, status }) => {
    const { api: client, queue } = api();
    const before = await tableItems(queue);
    const response = await client.delete(`/v1/jobs/hooks/${id}`);
    expect(response.status).toBe(status);
    if (status === 400) expect(response.body.error.details).toContainEqual(expect.objectContaining({ field: 'id' }));
    expect(await tableItems(queue)).toEqual(before);
  });

  test('a job awaiting its callback is cancelled at once: 200, and its callback is then 409', async () => {
    const { api: client } = api();
    await client.put('/v1/jobs/hooks/job-1', { data: 1 });
    await claimAndRun('hooks', 'job-1');
    const response = await client.delete('/v1/jobs/hooks/job-1');
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ status: 'cancelled', cancel_requested_at: null, history: [expect.objectContaining({ outcome: 'cancelled' })] });
    expect((await client.post('/v1/jobs/hooks/job-1', { status: 'succeeded', attempt: 1 })).status).toBe(409);
  });
});
