/**
 * The typed client against the real api over HTTP (in-process, on DynamoDB
 * Local): every method, errors as typed exceptions with the API's code, named
 * fields and request id, and retries only of requests that are safe to repeat.
 */
import { afterEach, beforeEach, describe, expect, test, vi, type MockInstance } from 'vitest';
import { STATIC_ADMIN_KEY_ID } from '../../../../functions/authorizer/app.js';
import { registry } from '../../../../functions/worker/handlers/index.js';
import {
  ConflictError,
  createClient,
  ForbiddenError,
  InvalidRequestError,
  NotFoundError,
  PayloadTooLargeError,
  QueueApiError,
  QueueNetworkError,
  ServerError,
  UnauthorizedError,
  type ClientOptions,
  type QueueClient,
} from '../../../../lib/client/index.js';
import { claimJob } from '../../../../lib/queue/attempt/claim.js';
import { requireJobType } from '../../../../lib/queue/catalog/job-types.js';
import { runClaimedJob } from '../../../../lib/queue/attempt/run-batch.js';
import { serveTestApi, type HttpTestApi } from '../../../support/http-api.js';
import { asFunction, createTestQueue, manualClock, type TestQueue } from '../../../support/queue.js';
import { tableItems } from '../../../support/api.js';

const T0 = Math.floor(Date.now() / 60_000) * 60_000;
const iso = (epochMs: number): string => new Date(epochMs).toISOString();
const ECHO = { target: { kind: 'handler' as const, name: 'echo' } };
const HOOKS = { target: { kind: 'handler' as const, name: 'await_callback' }, attempts: 3, retry: { kind: 'fixed' as const, delay_s: 10 } };

let queue: TestQueue;
let server: HttpTestApi;
let client: QueueClient;
let consoleError: MockInstance<typeof console.error>;
let consoleLog: MockInstance<typeof console.log>;

/** A client of the test's server; retries without waiting, so tests do not sleep. */
function clientWith(options: Partial<ClientOptions> = {}): QueueClient {
  return createClient({ url: server.url, token: server.adminToken, sleep: async () => undefined, ...options });
}

beforeEach(async () => {
  // The api and authorizer log refusals; the tests read nothing from them.
  consoleError = vi.spyOn(console, 'error').mockImplementation(() => undefined);
  consoleLog = vi.spyOn(console, 'log').mockImplementation(() => undefined);
  queue = await createTestQueue({ clock: manualClock(T0) });
  server = await serveTestApi(queue);
  client = clientWith();
  await client.defineType('emails', ECHO);
  await client.defineType('hooks', HOOKS);
});
afterEach(async () => {
  consoleError.mockRestore();
  consoleLog.mockRestore();
  await server.close();
  await queue.drop();
});

/** Claims the job and runs it through the real worker: a `hooks` job is then awaiting its callback. */
async function runAttempt(type: string, id: string): Promise<string> {
  const { ctx } = queue;
  const jobType = await requireJobType(ctx, type);
  const claimed = await claimJob(ctx, { type, id }, jobType);
  if (claimed.kind !== 'claimed') throw new Error(`could not claim ${type}/${id}: ${claimed.kind}`);
  return runClaimedJob(asFunction(ctx, 'worker'), claimed.job, jobType, { registry, worker: { id: 'w-1', host: 'host' } });
}

/**
 * A fetch that hands each request to the real one, but the first `count` times fails in the given way:
 * `network` throws before sending, `503` answers without sending, `lost` sends and throws the answer away.
 */
function flakyFetch(count: number, how: 'network' | '503' | 'lost') {
  const calls: { method: string; url: string }[] = [];
  const fetchImpl: typeof fetch = async (input, init) => {
    calls.push({ method: init?.method ?? 'GET', url: String(input) });
    if (calls.length <= count) {
      if (how === 'network') throw new TypeError('fetch failed');
      if (how === '503') return new Response(JSON.stringify({ message: 'Service Unavailable' }), { status: 503 });
      await fetch(input, init);
      throw new TypeError('fetch failed: socket hang up');
    }
    return fetch(input, init);
  };
  return { fetchImpl, calls };
}

const jobItems = async (type: string): Promise<unknown[]> =>
  (await tableItems(queue)).filter((item) => String(item.pk).startsWith(`JOB#${type}#`));

describe('job types', () => {
  test('defineType creates and replaces a type and returns it snake_case', async () => {
    const created = await client.defineType('reports', { ...ECHO, concurrency: 4 });
    expect(created).toMatchObject({ name: 'reports', concurrency: 4, paused: false, delivery_strategy: 'at_least_once', attempts: 3 });
    expect((await client.defineType('reports', { ...ECHO, timeout_s: 90 })).timeout_s).toBe(90);
  });

  test('getType and listTypes read them back', async () => {
    expect((await client.getType('emails')).target).toEqual({ kind: 'handler', name: 'echo' });
    expect((await client.listTypes()).map((type) => type.name)).toEqual(['emails', 'hooks']);
  });

  test('pause and resume set paused, and stats shows it', async () => {
    expect((await client.pause('emails')).paused).toBe(true);
    expect((await client.stats()).job_types.find((type) => type.name === 'emails')?.paused).toBe(true);
    expect((await client.resume('emails')).paused).toBe(false);
  });
});

describe('enqueue', () => {
  test('with an id and run_after as a Date: the job, due then; the same again is the same job', async () => {
    const runAfter = new Date(T0 + 5 * 60_000);
    const job = await client.enqueue('emails', { data: { to: 'ada' }, run_after: runAfter }, { id: 'welcome-1' });
    expect(job).toMatchObject({ id: 'welcome-1', type: 'emails', status: 'queued', data: { to: 'ada' }, run_after: iso(runAfter.getTime()) });
    expect(await client.enqueue('emails', { data: { to: 'ada' }, run_after: runAfter }, { id: 'welcome-1' })).toEqual(job);
  });

  test('expires_at as an ISO string is sent as given', async () => {
    const job = await client.enqueue('emails', { expires_at: '2099-01-01T00:00:00+01:00' }, { id: 'e-1' });
    expect(job.expires_at).toBe('2098-12-31T23:00:00.000Z');
  });

  test('without an id: a new job with a server id', async () => {
    const job = await client.enqueue('emails', { data: 1 });
    expect(job.id).toMatch(/^job_/);
    expect((await client.get('emails', job.id)).data).toBe(1);
  });

  test('a different body under the same id is a ConflictError with code conflict', async () => {
    await client.enqueue('emails', { data: 1 }, { id: 'x' });
    const error = await client.enqueue('emails', { data: 2 }, { id: 'x' }).catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(ConflictError);
    expect(error).toMatchObject({ status: 409, code: 'conflict', kind: 'conflict' });
  });

  test('an invalid field is an InvalidRequestError naming it, with the request id', async () => {
    const error = await client.enqueue('emails', { priority: 5_000 }, { id: 'x' }).catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(InvalidRequestError);
    expect(error).toBeInstanceOf(QueueApiError);
    const invalid = error as InvalidRequestError;
    expect(invalid).toMatchObject({ status: 400, code: 'invalid_request', tries: 1 });
    expect(invalid.details.map((issue) => issue.field)).toEqual(['priority']);
    expect(invalid.detailFor('priority')).toMatch(/1000/);
    expect(invalid.requestId).toMatch(/^[0-9a-f-]{36}$/);
  });

  test('data over 256 KiB is a PayloadTooLargeError naming data', async () => {
    const error = await client.enqueue('emails', { data: 'x'.repeat(270 * 1024) }, { id: 'big' }).catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(PayloadTooLargeError);
    expect((error as PayloadTooLargeError).details.map((issue) => issue.field)).toEqual(['data']);
  });

  test('enqueueBatch gives a result per item, a refused item in its result', async () => {
    const { results } = await client.enqueueBatch('emails', [
      { id: 'b-1', data: 1, run_after: new Date(T0 + 60_000) },
      { id: 'b-2', priority: -1 },
    ]);
    expect(results[0]).toMatchObject({ index: 0, id: 'b-1', status: 201, job: { run_after: iso(T0 + 60_000) } });
    expect(results[1]).toMatchObject({ index: 1, id: 'b-2', status: 400, error: { code: 'invalid_request', details: [{ field: 'jobs.1.priority' }] } });
  });
});

describe('jobs', () => {
  test('get of an unknown job is a NotFoundError with code not_found', async () => {
    const error = await client.get('emails', 'nope').catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(NotFoundError);
    expect(error).toMatchObject({ status: 404, code: 'not_found' });
  });

  test('list pages through a status and listAll walks every page', async () => {
    await client.defineType('listed', ECHO);
    for (const id of ['l-1', 'l-2', 'l-3']) await client.enqueue('listed', {}, { id });
    const first = await client.list('listed', { status: 'queued', limit: 2 });
    expect(first.jobs.map((job) => job.id)).toEqual(['l-1', 'l-2']);
    expect(first.next_cursor).toEqual(expect.any(String));
    const ids: string[] = [];
    for await (const job of client.listAll('listed', { status: 'queued', limit: 2 })) ids.push(job.id);
    expect(ids).toEqual(['l-1', 'l-2', 'l-3']);
  });

  test('cancel cancels a queued job; a second cancel is a ConflictError', async () => {
    await client.enqueue('emails', {}, { id: 'c-1' });
    expect((await client.cancel('emails', 'c-1')).status).toBe('cancelled');
    await expect(client.cancel('emails', 'c-1')).rejects.toBeInstanceOf(ConflictError);
  });

  test('cancel of a running job answers it still running, with cancel_requested_at: its worker is stopping it', async () => {
    await client.enqueue('emails', {}, { id: 'c-run' });
    const claimed = await claimJob(queue.ctx, { type: 'emails', id: 'c-run' }, await requireJobType(queue.ctx, 'emails'));
    expect(claimed.kind).toBe('claimed');
    const answer = await client.cancel('emails', 'c-run');
    expect(answer.status).toBe('running');
    if (answer.status === 'running') expect(Date.parse(answer.cancel_requested_at)).toBe(T0);
  });

  test('cancel of a job awaiting its callback answers it cancelled', async () => {
    await client.enqueue('hooks', {}, { id: 'c-wait' });
    expect(await runAttempt('hooks', 'c-wait')).toBe('awaiting_callback');
    expect(await client.cancel('hooks', 'c-wait')).toMatchObject({ status: 'cancelled', cancel_requested_at: null });
  });

  test('a cancelled job names the key that cancelled it', async () => {
    await client.enqueue('emails', {}, { id: 'c-by' });
    await client.cancel('emails', 'c-by');
    expect((await client.get('emails', 'c-by')).cancelled_by).toBe(STATIC_ADMIN_KEY_ID);
  });

  test('complete ends the attempt with its result; replay makes a new job with the same data', async () => {
    await client.enqueue('hooks', { data: { order: 7 } }, { id: 'h-1' });
    expect(await runAttempt('hooks', 'h-1')).toBe('awaiting_callback');
    const done = await client.complete('hooks', 'h-1', { attempt: 1, result: { receipt: 'r-1' } });
    expect(done).toMatchObject({ status: 'succeeded', result: { receipt: 'r-1' } });
    const replayed = await client.replay('hooks', 'h-1');
    expect(replayed).toMatchObject({ status: 'queued', data: { order: 7 } });
    expect(replayed.id).not.toBe('h-1');
  });

  test('fail with retryable false ends the job failed, its error in the history', async () => {
    await client.enqueue('hooks', {}, { id: 'h-2' });
    await runAttempt('hooks', 'h-2');
    const failed = await client.fail('hooks', 'h-2', { attempt: 1, retryable: false, error: { class: 'CardDeclined', message: 'no' } });
    expect(failed.status).toBe('failed');
    expect(failed.history[0]).toMatchObject({ attempt: 1, outcome: 'failed', error: { class: 'CardDeclined', message: 'no' } });
  });

  test('a callback for a stale attempt is a ConflictError and changes nothing', async () => {
    await client.enqueue('hooks', {}, { id: 'h-3' });
    await runAttempt('hooks', 'h-3');
    await expect(client.complete('hooks', 'h-3', { attempt: 2 })).rejects.toBeInstanceOf(ConflictError);
    expect((await client.get('hooks', 'h-3')).status).toBe('awaiting_callback');
  });

  test('heartbeat extends a running attempt', async () => {
    await client.enqueue('hooks', {}, { id: 'h-4' });
    await runAttempt('hooks', 'h-4');
    expect((await client.heartbeat('hooks', 'h-4', { attempt: 1, extend_s: 120 })).claimed_until).toBe(iso(T0 + 120_000));
  });

  test('stats and metrics answer in their shapes', async () => {
    await client.enqueue('emails', {}, { id: 's-1' });
    expect((await client.stats()).job_types).toContainEqual(expect.objectContaining({ name: 'emails', due: 1 }));
    const metrics = await client.metrics({ minutes: 5 });
    expect(metrics.minutes).toHaveLength(5);
    expect(metrics.job_types.map((type) => type.name)).toEqual(['emails', 'hooks']);
  });
});

describe('job control', () => {
  test('change moves a queued job to now and changes its priority, the change recorded', async () => {
    await client.enqueue('emails', { run_after: new Date(T0 + 86_400_000) }, { id: 'p-1' });
    const changed = await client.change('emails', 'p-1', { run_after: 'now', priority: 5 });
    expect(changed).toMatchObject({ status: 'queued', run_after: iso(T0), priority: 5 });
    expect(changed.changes).toEqual([expect.objectContaining({ by: 'API_TOKEN', priority: { from: 100, to: 5 } })]);
    const expiring = await client.change('emails', 'p-1', { expires_at: new Date(T0 + 60_000) });
    expect(expiring.expires_at).toBe(iso(T0 + 60_000));
    await expect(client.change('emails', 'p-1', {})).rejects.toMatchObject({ status: 400, details: [expect.objectContaining({ field: 'body' })] });
  });

  test('change of a job that has started is a ConflictError', async () => {
    await client.enqueue('hooks', {}, { id: 'p-2' });
    await runAttempt('hooks', 'p-2');
    await expect(client.change('hooks', 'p-2', { priority: 1 })).rejects.toBeInstanceOf(ConflictError);
  });

  test('completeByKey and failByKey end the open attempt of the job holding the key, without its number', async () => {
    await client.enqueue('hooks', { correlation_key: 'psp:1' }, { id: 'k-1' });
    await runAttempt('hooks', 'k-1');
    expect(await client.failByKey('psp:1', { error: { message: 'declined' } })).toMatchObject({ status: 'queued', attempt: 1 });
    queue.clock.advance(10_000);
    await runAttempt('hooks', 'k-1');
    await expect(client.completeByKey('psp:1', { attempt: 1 })).rejects.toBeInstanceOf(ConflictError);
    expect(await client.completeByKey('psp:1', { result: { paid: true } })).toMatchObject({ status: 'succeeded', attempt: 2, result: { paid: true } });
    await expect(client.completeByKey('psp:1')).rejects.toBeInstanceOf(NotFoundError);
  });

  test('a callback by key without attempt is not retried; with it, it is', async () => {
    await client.enqueue('hooks', { correlation_key: 'psp:2' }, { id: 'k-2' });
    await runAttempt('hooks', 'k-2');
    const without = flakyFetch(1, '503');
    await expect(clientWith({ fetch: without.fetchImpl }).completeByKey('psp:2')).rejects.toBeInstanceOf(ServerError);
    expect(without.calls).toHaveLength(1);
    const withAttempt = flakyFetch(1, '503');
    expect((await clientWith({ fetch: withAttempt.fetchImpl }).completeByKey('psp:2', { attempt: 1 })).status).toBe('succeeded');
    expect(withAttempt.calls).toHaveLength(2);
  });

  test('reportProgress and heartbeat record how far a running attempt got', async () => {
    await client.enqueue('hooks', {}, { id: 'g-1' });
    await runAttempt('hooks', 'g-1');
    const reported = await client.reportProgress('hooks', 'g-1', { attempt: 1, progress: { percent: 30, message: 'a third' } });
    expect(reported.progress).toEqual({ percent: 30, message: 'a third', data: null, attempt: 1, at: iso(T0) });
    const beat = await client.heartbeat('hooks', 'g-1', { attempt: 1, extend_s: 120, progress: { data: { step: 2 } } });
    expect(beat.progress).toMatchObject({ percent: null, data: { step: 2 } });
    await expect(client.reportProgress('hooks', 'g-1', { attempt: 1, progress: { percent: 101 } })).rejects.toBeInstanceOf(InvalidRequestError);
  });
});

describe('credentials', () => {
  test("a wrong token is an UnauthorizedError, from the gateway's 403 Forbidden", async () => {
    const error = await clientWith({ token: 'not-a-key' }).stats().catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(UnauthorizedError);
    expect(error).toMatchObject({ status: 403, message: 'Forbidden', tries: 1 });
  });

  test('a revoked key is an UnauthorizedError, not a ForbiddenError', async () => {
    const created = await server.api.post('/v1/keys', { scopes: ['read:emails'] });
    expect((await server.api.delete(`/v1/keys/${created.body.id}`)).status).toBe(200);
    const error = await clientWith({ token: created.body.key }).stats().catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(UnauthorizedError);
  });

  test('a key without admin is a ForbiddenError on pause', async () => {
    const created = await server.api.post('/v1/keys', { scopes: ['read:emails'] });
    const error = await clientWith({ token: created.body.key }).pause('emails').catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(ForbiddenError);
    expect(error).toMatchObject({ status: 403, code: 'forbidden' });
  });
});

describe('retries', () => {
  test('a GET is retried after network errors and 503s, and succeeds', async () => {
    await client.enqueue('emails', {}, { id: 'r-1' });
    for (const how of ['network', '503'] as const) {
      const flaky = flakyFetch(2, how);
      expect((await clientWith({ fetch: flaky.fetchImpl }).get('emails', 'r-1')).id).toBe('r-1');
      expect(flaky.calls).toHaveLength(3);
    }
  });

  test('a PUT with an id whose answer was lost is sent again and gives the one job', async () => {
    const flaky = flakyFetch(1, 'lost');
    const job = await clientWith({ fetch: flaky.fetchImpl }).enqueue('emails', { data: 1 }, { id: 'r-2' });
    expect(job.id).toBe('r-2');
    expect(flaky.calls.map((call) => call.method)).toEqual(['PUT', 'PUT']);
    expect(await jobItems('emails')).toHaveLength(1);
  });

  test('a POST with a server id is never sent again: its answer lost, the error says so and one job exists', async () => {
    const flaky = flakyFetch(1, 'lost');
    const error = await clientWith({ fetch: flaky.fetchImpl }).enqueue('emails', { data: 1 }).catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(QueueNetworkError);
    expect(flaky.calls).toHaveLength(1);
    expect(await jobItems('emails')).toHaveLength(1);
  });

  test('a POST with a server id is not retried on a 503 either', async () => {
    const flaky = flakyFetch(1, '503');
    const error = await clientWith({ fetch: flaky.fetchImpl }).enqueue('emails', {}).catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(ServerError);
    expect(error).toMatchObject({ status: 503, code: 'internal', message: 'Service Unavailable', tries: 1 });
    expect(flaky.calls).toHaveLength(1);
  });

  test('a batch is retried when every job has an id, not when one has none', async () => {
    const withIds = flakyFetch(1, 'network');
    await clientWith({ fetch: withIds.fetchImpl }).enqueueBatch('emails', [{ id: 'b-1' }, { id: 'b-2' }]);
    expect(withIds.calls).toHaveLength(2);
    const withoutIds = flakyFetch(1, 'network');
    await expect(clientWith({ fetch: withoutIds.fetchImpl }).enqueueBatch('emails', [{ id: 'b-3' }, {}])).rejects.toBeInstanceOf(QueueNetworkError);
    expect(withoutIds.calls).toHaveLength(1);
  });

  test('replay is not retried: each try would make a new job', async () => {
    await client.enqueue('hooks', {}, { id: 'h-5' });
    await runAttempt('hooks', 'h-5');
    await client.complete('hooks', 'h-5', { attempt: 1 });
    const flaky = flakyFetch(1, '503');
    await expect(clientWith({ fetch: flaky.fetchImpl }).replay('hooks', 'h-5')).rejects.toBeInstanceOf(ServerError);
    expect(flaky.calls).toHaveLength(1);
  });

  test('a 4xx is never retried', async () => {
    const flaky = flakyFetch(0, 'network');
    await expect(clientWith({ fetch: flaky.fetchImpl }).get('emails', 'nope')).rejects.toBeInstanceOf(NotFoundError);
    expect(flaky.calls).toHaveLength(1);
  });

  test('retries are bounded: after 1 + retries tries the last error is thrown, with the count', async () => {
    const flaky = flakyFetch(100, '503');
    const error = await clientWith({ fetch: flaky.fetchImpl, retries: 2 }).stats().catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(ServerError);
    expect(error).toMatchObject({ tries: 3 });
    expect(flaky.calls).toHaveLength(3);
  });

  test('the backoff between tries grows and is jittered within its ceiling', async () => {
    const delays: number[] = [];
    const flaky = flakyFetch(3, 'network');
    await clientWith({
      fetch: flaky.fetchImpl,
      retries: { retries: 3, baseDelayMs: 100, maxDelayMs: 250 },
      random: () => 0.5,
      sleep: async (ms) => void delays.push(ms),
    }).stats();
    expect(delays).toEqual([50, 100, 125]);
  });

  test('complete whose answer was lost: the retry is answered 409, and the client gives the completed job', async () => {
    await client.enqueue('hooks', {}, { id: 'h-6' });
    await runAttempt('hooks', 'h-6');
    const flaky = flakyFetch(1, 'lost');
    const job = await clientWith({ fetch: flaky.fetchImpl }).complete('hooks', 'h-6', { attempt: 1, result: 'ok' });
    expect(job).toMatchObject({ status: 'succeeded', result: 'ok' });
    expect(flaky.calls.map((call) => call.method)).toEqual(['POST', 'POST', 'GET']);
  });

  test('cancel whose answer was lost gives the cancelled job', async () => {
    await client.enqueue('emails', {}, { id: 'c-2' });
    const flaky = flakyFetch(1, 'lost');
    expect((await clientWith({ fetch: flaky.fetchImpl }).cancel('emails', 'c-2')).status).toBe('cancelled');
  });
});
