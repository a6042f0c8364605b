/**
 * POST /v1/job-types/{name}/pause and /resume: a paused type's jobs wait
 * queued, nothing lost and nothing claimed, whichever poller looks; resuming
 * lets them run; replacing the type keeps it paused; only admin may do either.
 */
import { afterEach, beforeEach, describe, expect, test, vi, type MockInstance } from 'vitest';
import { createPollerHandler } from '../../../../../functions/poller/app.js';
import { requireJobType } from '../../../../../lib/queue/catalog/job-types.js';
import { createApiClient, createTestApi, type ApiClient } from '../../../../support/api.js';
import { createTestQueue, manualClock, type TestQueue } from '../../../../support/queue.js';
import { RecordingInvoker } from '../../../../support/lib-fixtures.js';

const ECHO_TYPE = { target: { kind: 'handler', name: 'echo' }, concurrency: 5 };
/** Now, not a fixed date: DynamoDB Local applies the roster's and the history's TTL by the real clock. */
const T0 = Math.floor(Date.now() / 1000) * 1000;
const lambdaContext = { getRemainingTimeInMillis: () => 60_000 };

let queue: TestQueue;
let admin: ApiClient;
/** The poller handler logs every run; kept out of the test output. */
let consoleLog: MockInstance<typeof console.log>;

beforeEach(async () => {
  consoleLog = vi.spyOn(console, 'log').mockImplementation(() => undefined);
  // One poll per invocation: the manual clock does not move, so a longer run would never end.
  queue = await createTestQueue({ clock: manualClock(T0), settings: { pollerRunMs: 0 } });
  admin = createTestApi(queue);
  expect((await admin.put('/v1/job-types/emails', ECHO_TYPE)).status).toBe(201);
});
afterEach(async () => {
  consoleLog.mockRestore();
  await queue.drop();
});

/** Two pollers, each with its own process state, both over every shard. */
function twoPollers(): { invokers: RecordingInvoker[]; pollBoth: () => Promise<void> } {
  const invokers = [new RecordingInvoker(), new RecordingInvoker()];
  const handlers = invokers.map((invoker, i) => createPollerHandler({ ctx: queue.as('poller'), invoker, identity: { id: `p-${i}`, host: 'host' } }));
  return {
    invokers,
    pollBoth: async () => {
      for (const handler of handlers) await handler({}, lambdaContext);
    },
  };
}

async function enqueueThree(): Promise<void> {
  for (const id of ['a', 'b', 'c']) expect((await admin.put(`/v1/jobs/emails/${id}`, { data: { id } })).status).toBe(201);
}

describe('pause', () => {
  test('is 200 with the type, paused: true, and its concurrency unchanged', async () => {
    const response = await admin.post('/v1/job-types/emails/pause');
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ name: 'emails', paused: true, concurrency: 5 });
    expect((await admin.get('/v1/job-types/emails')).body).toMatchObject({ paused: true });
  });

  test("a paused type's due jobs stay queued across polls by two pollers", async () => {
    await enqueueThree();
    await admin.post('/v1/job-types/emails/pause');
    const { invokers, pollBoth } = twoPollers();

    await pollBoth();
    queue.clock.advance(10_000);
    await pollBoth();

    expect(invokers.flatMap((invoker) => invoker.jobs)).toEqual([]);
    for (const id of ['a', 'b', 'c']) expect((await admin.get(`/v1/jobs/emails/${id}`)).body).toMatchObject({ status: 'queued', attempt: 0 });
    expect((await admin.get('/v1/stats')).body.job_types).toEqual([expect.objectContaining({ name: 'emails', due: 3, paused: true })]);
  });

  test('pausing twice is the same as once', async () => {
    await admin.post('/v1/job-types/emails/pause');
    const again = await admin.post('/v1/job-types/emails/pause');
    expect(again.status).toBe(200);
    expect(again.body.paused).toBe(true);
  });

  test('an unknown type is 404 and creates nothing', async () => {
    const response = await admin.post('/v1/job-types/nope/pause');
    expect(response.status).toBe(404);
    expect(response.body.error.code).toBe('not_found');
    expect((await admin.get('/v1/job-types/nope')).status).toBe(404);
  });

  test('a malformed type name is 400 naming name', async () => {
    const response = await admin.post('/v1/job-types/bad%20name/pause');
    expect(response.status).toBe(400);
    expect(response.body.error.details).toEqual([expect.objectContaining({ field: 'name' })]);
  });
});

describe('resume', () => {
  test('is 200 with paused: false, and the waiting jobs are claimed at the next poll', async () => {
    await enqueueThree();
    await admin.post('/v1/job-types/emails/pause');
    const { invokers, pollBoth } = twoPollers();
    await pollBoth();

    const response = await admin.post('/v1/job-types/emails/resume');
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ name: 'emails', paused: false, concurrency: 5 });
    await pollBoth();

    expect(invokers.flatMap((invoker) => invoker.jobs).map((job) => job.id).sort()).toEqual(['a', 'b', 'c']);
  });
});

describe('PUT /v1/job-types/{name} and the paused state', () => {
  test('replacing a paused type without `paused` keeps it paused', async () => {
    await admin.post('/v1/job-types/emails/pause');
    const replaced = await admin.put('/v1/job-types/emails', { ...ECHO_TYPE, timeout_s: 120 });
    expect(replaced.status).toBe(200);
    expect(replaced.body).toMatchObject({ paused: true, timeout_s: 120 });
    expect((await requireJobType(queue.ctx, 'emails')).paused).toBe(true);
  });

  test('`paused` in the body sets it: a type can be created paused, and replaced running', async () => {
    const created = await admin.put('/v1/job-types/reports', { ...ECHO_TYPE, paused: true });
    expect(created.status).toBe(201);
    expect(created.body.paused).toBe(true);
    const replaced = await admin.put('/v1/job-types/reports', { ...ECHO_TYPE, paused: false });
    expect(replaced.body.paused).toBe(false);
  });

  test('a new type is not paused', async () => {
    expect((await admin.get('/v1/job-types/emails')).body.paused).toBe(false);
  });

  test('`paused` that is not a boolean is 400 naming paused', async () => {
    const response = await admin.put('/v1/job-types/emails', { ...ECHO_TYPE, paused: 'yes' });
    expect(response.status).toBe(400);
    expect(response.body.error.details).toEqual([expect.objectContaining({ field: 'paused' })]);
  });
});

describe('scopes', () => {
  test('pause and resume need admin: a read or enqueue key of the type is 403 and changes nothing', async () => {
    for (const scope of ['read:emails', 'enqueue:emails']) {
      const created = await admin.post('/v1/keys', { scopes: [scope] });
      const client = createApiClient(admin.handler, created.body.key);
      for (const action of ['pause', 'resume']) {
        const response = await client.post(`/v1/job-types/emails/${action}`);
        expect(response.status).toBe(403);
        expect(response.body.error.code).toBe('forbidden');
      }
    }
    expect((await requireJobType(queue.ctx, 'emails')).paused).toBe(false);
  });

  test('without a key it is 401', async () => {
    expect((await admin.post('/v1/job-types/emails/pause', undefined, { token: null })).status).toBe(401);
  });
});
