/**
 * GET /v1/stats and the stats of GET /v1/job-types/{name} over the HTTP API,
 * through the authorizer: due counts and lag per readable type, and the
 * roster of live pollers and workers.
 */
import { afterEach, beforeEach, describe, expect, test, vi, type MockInstance } from 'vitest';
import { holdAwake } from '../../../../support/wake.js';
import { createPollerHandler } from '../../../../../functions/poller/app.js';
import { createWorkerHandler } from '../../../../../functions/worker/app.js';
import { registry } from '../../../../../functions/worker/handlers/index.js';
import { createApiClient, createTestApi, type ApiClient } from '../../../../support/api.js';
import { createTestQueue, manualClock, type TestQueue } from '../../../../support/queue.js';
import { RecordingInvoker } from '../../../../support/lib-fixtures.js';

const ECHO_TYPE = { target: { kind: 'handler', name: 'echo' } };
/** Now, not a fixed date: DynamoDB Local applies the roster's TTL by the real clock. */
const T0 = Math.floor(Date.now() / 1000) * 1000;
const iso = (epochMs: number): string => new Date(epochMs).toISOString();

let queue: TestQueue;
let admin: ApiClient;
/** The poller and worker handlers log every run; kept out of the test output. */
let consoleLog: MockInstance<typeof console.log>;

beforeEach(async () => {
  consoleLog = vi.spyOn(console, 'log').mockImplementation(() => undefined);
  queue = await createTestQueue({ clock: manualClock(T0), settings: { pollerRunMs: 0 } });
  admin = createTestApi(queue);
  for (const type of ['emails', 'invoices']) expect((await admin.put(`/v1/job-types/${type}`, ECHO_TYPE)).status).toBe(201);
});
afterEach(async () => {
  consoleLog.mockRestore();
  await queue.drop();
});

async function clientWith(...scopes: string[]): Promise<ApiClient> {
  const created = await admin.post('/v1/keys', { scopes });
  expect(created.status).toBe(201);
  return createApiClient(admin.handler, created.body.key);
}

describe('GET /v1/stats', () => {
  test('gives each type its due, scheduled and running counts and oldest due lag', async () => {
    for (const id of ['e1', 'e2']) await admin.put(`/v1/jobs/emails/${id}`, { data: {} });
    await admin.put('/v1/jobs/emails/later', { data: {}, run_after: iso(T0 + 60_000) });
    queue.clock.advance(2_500);

    const response = await admin.get('/v1/stats');

    expect(response.status).toBe(200);
    expect(response.body.job_types).toEqual([
      { name: 'emails', due: 2, scheduled: 1, running: 0, awaiting_callback: 0, oldest_due_lag_ms: 2_500, in_flight_weight: null, concurrency: null, paused: false },
      { name: 'invoices', due: 0, scheduled: 0, running: 0, awaiting_callback: 0, oldest_due_lag_ms: 0, in_flight_weight: null, concurrency: null, paused: false },
    ]);
  });

  test('lists the live pollers with their shards and the live workers, snake_case', async () => {
    await holdAwake(queue.ctx);
    const poller = createPollerHandler({ ctx: queue.as('poller'), invoker: new RecordingInvoker(), identity: { id: 'p-1', host: 'host-a' } });
    await poller({ shards: [1, 3] }, { getRemainingTimeInMillis: () => 60_000 });
    queue.clock.advance(1_000);
    await createWorkerHandler({ ctx: queue.as('worker'), registry, worker: { id: 'w-1', host: 'host-b' } })({ jobs: [], jobTypes: {} });

    const { body } = await admin.get('/v1/stats');

    expect(body.pollers).toEqual([{ id: 'p-1', host: 'host-a', shards: [1, 3], started_at: iso(T0), last_seen_at: iso(T0) }]);
    expect(body.workers).toEqual([{ id: 'w-1', host: 'host-b', started_at: iso(T0 + 1_000), last_seen_at: iso(T0 + 1_000) }]);
  });

  test('leaves out a poller not seen for over a minute', async () => {
    await holdAwake(queue.ctx);
    await createPollerHandler({ ctx: queue.as('poller'), invoker: new RecordingInvoker(), identity: { id: 'p-1', host: 'host-a' } })({}, { getRemainingTimeInMillis: () => 60_000 });
    queue.clock.advance(60_001);
    expect((await admin.get('/v1/stats')).body.pollers).toEqual([]);
  });
});

describe('GET /v1/job-types/{name}', () => {
  test('carries the live stats of the type', async () => {
    await admin.put('/v1/jobs/emails/e1', { data: {} });
    queue.clock.advance(4_000);
    const response = await admin.get('/v1/job-types/emails');
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ name: 'emails', stats: { due: 1, oldest_due_lag_ms: 4_000 } });
  });
});

describe('scopes', () => {
  test('read:emails sees the stats of emails only, and the roster', async () => {
    const reader = await clientWith('read:emails');
    const response = await reader.get('/v1/stats');
    expect(response.status).toBe(200);
    expect(response.body).toEqual({
      job_types: [{ name: 'emails', due: 0, scheduled: 0, running: 0, awaiting_callback: 0, oldest_due_lag_ms: 0, in_flight_weight: null, concurrency: null, paused: false }],
      pollers: [],
      workers: [],
    });
  });

  test('read:* sees every type', async () => {
    const reader = await clientWith('read:*');
    expect((await reader.get('/v1/stats')).body.job_types.map((t: { name: string }) => t.name)).toEqual(['emails', 'invoices']);
  });

  test('a key without a read scope is 403 naming the scope it needs', async () => {
    const producer = await clientWith('enqueue:*', 'callback:*');
    const response = await producer.get('/v1/stats');
    expect(response.status).toBe(403);
    expect(response.body.error).toMatchObject({ code: 'forbidden', message: 'this route needs a read: scope' });
  });

  test('a request without a key is 401', async () => {
    expect((await admin.get('/v1/stats', { token: null })).status).toBe(401);
  });
});
