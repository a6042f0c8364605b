/** docs/reference/http-api.md: PUT/GET /v1/job-types, validated field by field against the worker's registry. */
import { describe, expect, test } from 'vitest';
import { MAX_WORKER_ATTEMPT_S } from '../../../../../lib/domain/limits.js';
import { JOB_TYPES_REFRESH_MS, putJobType } from '../../../../../lib/queue/catalog/job-types.js';
import { parseJobTypeDefinition } from '../../../../../lib/wire/job-types.js';
import { trackConsumedCapacity } from '../../../../../infra/local/aws/capacity-meter.js';
import { freshApiPerTest, tableItems } from '../../../../support/api.js';

const api = freshApiPerTest();

const ECHO = { target: { kind: 'handler', name: 'echo' } };

describe('PUT /v1/job-types/{name}', () => {
  test('creates a new type: 201 with the type and its defaults', async () => {
    const { api: client } = api();
    const response = await client.put('/v1/job-types/emails', ECHO);
    expect(response.status).toBe(201);
    expect(response.body).toMatchObject({
      name: 'emails',
      delivery_strategy: 'at_least_once',
      attempts: 3,
      concurrency: null,
      visibility_timeout_s: 30,
      timeout_s: 60,
      target: { kind: 'handler', name: 'echo' },
      created_at: '2026-11-21T10:00:00.000Z',
      updated_at: '2026-11-21T10:00:00.000Z',
    });
  });

  test('updates an existing type: 200, the new settings stored, created_at kept', async () => {
    const { api: client, queue } = api();
    await client.put('/v1/job-types/emails', ECHO);
    queue.clock.advance(5_000);
    const response = await client.put('/v1/job-types/emails', { ...ECHO, attempts: 7, visibility_timeout_s: 90 });
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({
      attempts: 7,
      visibility_timeout_s: 90,
      created_at: '2026-11-21T10:00:00.000Z',
      updated_at: '2026-11-21T10:00:05.000Z',
    });
    expect((await client.get('/v1/job-types/emails')).body).toMatchObject({ attempts: 7, visibility_timeout_s: 90 });
  });

  test('accepts a custom retry policy the worker defines', async () => {
    const response = await api().api.put('/v1/job-types/emails', {
      ...ECHO,
      retry: { kind: 'custom', name: 'linear_on_transient' },
    });
    expect(response.status).toBe(201);
    expect(response.body.retry).toEqual({ kind: 'custom', name: 'linear_on_transient' });
  });

  test('at_most_once with attempts 1 is accepted', async () => {
    const response = await api().api.put('/v1/job-types/emails', { ...ECHO, delivery_strategy: 'at_most_once', attempts: 1 });
    expect(response.status).toBe(201);
    expect(response.body).toMatchObject({ delivery_strategy: 'at_most_once', attempts: 1 });
  });

  const invalid: { name: string; path?: string; body: unknown; field: string }[] = [
    { name: 'an unknown field', body: { ...ECHO, colour: 'blue' }, field: 'colour' },
    { name: 'an unknown field inside target', body: { target: { kind: 'handler', name: 'echo', extra: 1 } }, field: 'target.extra' },
    { name: 'attempts 0', body: { ...ECHO, attempts: 0 }, field: 'attempts' },
    { name: 'attempts 101', body: { ...ECHO, attempts: 101 }, field: 'attempts' },
    { name: 'at_most_once with attempts 3', body: { ...ECHO, delivery_strategy: 'at_most_once', attempts: 3 }, field: 'attempts' },
    { name: 'a non-integer visibility_timeout_s', body: { ...ECHO, visibility_timeout_s: 1.5 }, field: 'visibility_timeout_s' },
    { name: 'timeout_s over 86 400', body: { ...ECHO, timeout_s: 86_401 }, field: 'timeout_s' },
    {
      name: 'a lambda target with a timeout_s the worker function cannot run',
      body: { target: { kind: 'lambda', function: 'charge-card' }, timeout_s: MAX_WORKER_ATTEMPT_S + 1 },
      field: 'timeout_s',
    },
    {
      name: 'an http target with a request_timeout_s the worker function cannot wait out',
      body: { target: { kind: 'http', url: 'https://example.com/jobs', request_timeout_s: MAX_WORKER_ATTEMPT_S + 1 } },
      field: 'target.request_timeout_s',
    },
    { name: 'an unknown delivery_strategy', body: { ...ECHO, delivery_strategy: 'exactly_once' }, field: 'delivery_strategy' },
    { name: 'no target', body: { attempts: 2 }, field: 'target' },
    { name: 'a target handler the worker does not have', body: { target: { kind: 'handler', name: 'nope' } }, field: 'target.name' },
    { name: "a target handler named after an object's own methods", body: { target: { kind: 'handler', name: 'toString' } }, field: 'target.name' },
    { name: 'a custom retry policy the worker does not have', body: { ...ECHO, retry: { kind: 'custom', name: 'nope' } }, field: 'retry.name' },
    { name: 'a negative fixed retry delay', body: { ...ECHO, retry: { kind: 'fixed', delay_s: -1 } }, field: 'retry.delay_s' },
    { name: 'an invalid name in the path', path: '/v1/job-types/bad%23name', body: ECHO, field: 'name' },
    { name: 'a name in the path longer than 64 characters', path: `/v1/job-types/${'a'.repeat(65)}`, body: ECHO, field: 'name' },
  ];

  test.each(invalid)('$name is 400 naming field $field and stores nothing', async ({ path, body, field }) => {
    const { api: client, queue } = api();
    const response = await client.put(path ?? '/v1/job-types/emails', body);
    expect(response.status).toBe(400);
    expect(response.body.error.code).toBe('invalid_request');
    expect(response.body.error.details).toContainEqual({ field, message: expect.any(String) });
    expect(await tableItems(queue)).toEqual([]);
  });

  test('an http target may wait for its callback longer than the worker function runs', async () => {
    const response = await api().api.put('/v1/job-types/hooks', { target: { kind: 'http', url: 'https://example.com/jobs' }, timeout_s: 3_600 });
    expect(response.status).toBe(201);
    expect(response.body).toMatchObject({ timeout_s: 3_600 });
  });

  test('an invalid update leaves the stored type unchanged', async () => {
    const { api: client } = api();
    await client.put('/v1/job-types/emails', { ...ECHO, attempts: 4 });
    const before = (await client.get('/v1/job-types/emails')).body;
    const response = await client.put('/v1/job-types/emails', { ...ECHO, attempts: 0 });
    expect(response.status).toBe(400);
    expect((await client.get('/v1/job-types/emails')).body).toEqual(before);
  });

  test('invalid JSON is 400 naming field body', async () => {
    const response = await api().api.put('/v1/job-types/emails', '{"target": {');
    expect(response.status).toBe(400);
    expect(response.body.error.details).toContainEqual({ field: 'body', message: expect.any(String) });
  });

  test('a text/plain body is 415', async () => {
    const response = await api().api.put('/v1/job-types/emails', ECHO, { headers: { 'content-type': 'text/plain' } });
    expect(response.status).toBe(415);
    expect(response.body.error.code).toBe('unsupported_media_type');
  });
});

describe('GET /v1/job-types', () => {
  test('lists every type, sorted by name', async () => {
    const { api: client } = api();
    await client.put('/v1/job-types/reports', { target: { kind: 'handler', name: 'sleep' } });
    await client.put('/v1/job-types/emails', ECHO);
    const response = await client.get('/v1/job-types');
    expect(response.status).toBe(200);
    expect(response.body.job_types.map((type: { name: string }) => type.name)).toEqual(['emails', 'reports']);
    expect(response.body.job_types[1]).toMatchObject({ name: 'reports', target: { kind: 'handler', name: 'sleep' } });
  });

  test('lists nothing when no type exists', async () => {
    const response = await api().api.get('/v1/job-types');
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ job_types: [] });
  });
});

describe('GET /v1/job-types/{name}', () => {
  test('reads a type as it was stored', async () => {
    const { api: client } = api();
    const created = await client.put('/v1/job-types/emails', { ...ECHO, attempts: 5, retry: { kind: 'fixed', delay_s: 2 } });
    const response = await client.get('/v1/job-types/emails');
    expect(response.status).toBe(200);
    expect(response.body).toEqual({
      ...created.body,
      stats: { due: 0, scheduled: 0, running: 0, awaiting_callback: 0, oldest_due_lag_ms: 0, in_flight_weight: null },
    });
    expect(response.body.retry).toEqual({ kind: 'fixed', delay_s: 2, retry_on: null });
  });

  test('an unknown type is 404 not_found', async () => {
    const response = await api().api.get('/v1/job-types/nope');
    expect(response.status).toBe(404);
    expect(response.body.error.code).toBe('not_found');
  });

  test('an invalid name is 400 naming field name', async () => {
    const response = await api().api.get('/v1/job-types/bad%23name');
    expect(response.status).toBe(400);
    expect(response.body.error.details).toContainEqual({ field: 'name', message: expect.any(String) });
  });
});

describe('the job types the api acts on', () => {
  const typeReads = (totals: ReturnType<typeof trackConsumedCapacity>): number => totals.byCommand.GetItemCommand?.calls ?? 0;

  test('an enqueue reads its type once per refresh period, not once per job', async () => {
    const { api: client, queue } = api();
    await client.put('/v1/job-types/emails', ECHO);
    const calls = trackConsumedCapacity(queue.clientsOf('api').base);
    for (const id of ['j1', 'j2', 'j3']) expect((await client.put(`/v1/jobs/emails/${id}`, { data: 1 })).status).toBe(201);
    queue.clock.advance(JOB_TYPES_REFRESH_MS);
    expect((await client.put('/v1/jobs/emails/j4', { data: 1 })).status).toBe(201);
    expect(typeReads(calls)).toBe(1);
  });

  test('a type changed through the api applies to the next enqueue at once', async () => {
    const { api: client } = api();
    await client.put('/v1/job-types/emails', ECHO);
    await client.put('/v1/jobs/emails/j1', { data: 1 });
    await client.put('/v1/job-types/emails', { ...ECHO, attempts: 7 });
    expect((await client.put('/v1/jobs/emails/j2', { data: 1 })).body.max_attempts).toBe(7);
  });

  test('a type changed by another process applies within the refresh period', async () => {
    const { api: client, queue } = api();
    await client.put('/v1/job-types/emails', ECHO);
    await client.put('/v1/jobs/emails/j1', { data: 1 });
    await putJobType(queue.ctx, 'emails', parseJobTypeDefinition({ ...ECHO, attempts: 7 }));
    queue.clock.advance(JOB_TYPES_REFRESH_MS);
    expect((await client.put('/v1/jobs/emails/j2', { data: 1 })).body.max_attempts).toBe(7);
  });

  test('a type made by another process is found at once: a type that did not exist is not remembered', async () => {
    const { api: client, queue } = api();
    expect((await client.put('/v1/jobs/emails/j1', { data: 1 })).status).toBe(404);
    await putJobType(queue.ctx, 'emails', parseJobTypeDefinition(ECHO));
    expect((await client.put('/v1/jobs/emails/j1', { data: 1 })).status).toBe(201);
  });
});
