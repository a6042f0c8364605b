/**
 * docs/reference/http-api.md: every route but GET /health and the dashboard needs a key; a refused key gets API Gateway's own
 * answers, locally as behind API Gateway; refused requests change nothing; error bodies are clean.
 */
import { describe, expect, test } from 'vitest';
import { authorizerOf, KEY_AUTHORIZER_CACHE_TTL_S } from '../../../../infra/api-gateway.js';
import { createApiClient, freshApiPerTest, leaksInternals, tableItems, type HttpMethod } from '../../../support/api.js';

const api = freshApiPerTest();

const ECHO_TYPE = { target: { kind: 'handler', name: 'echo' } };

/** API Gateway's answers: a missing Authorization header never reaches the authorizer; a refused key does. */
const NO_KEY = { status: 401, body: { message: 'Unauthorized' } };
const REFUSED = { status: 403, body: { message: 'Forbidden' } };

/** A type and a queued job, so that any route that slipped past the check would have something to change. */
async function seed(): Promise<void> {
  const { api: client } = api();
  expect((await client.put('/v1/job-types/emails', ECHO_TYPE)).status).toBe(201);
  expect((await client.put('/v1/jobs/emails/job-1', { data: { to: 'a@example.com' } })).status).toBe(201);
}

const PROTECTED_ROUTES: { method: HttpMethod; path: string; body?: unknown }[] = [
  { method: 'GET', path: '/v1/job-types' },
  { method: 'GET', path: '/v1/job-types/emails' },
  { method: 'PUT', path: '/v1/job-types/emails', body: { target: { kind: 'handler', name: 'fail' } } },
  { method: 'PUT', path: '/v1/job-types/other', body: ECHO_TYPE },
  { method: 'POST', path: '/v1/jobs/emails', body: { data: { n: 1 } } },
  { method: 'PUT', path: '/v1/jobs/emails/job-2', body: { data: { n: 2 } } },
  { method: 'PUT', path: '/v1/jobs/emails/job-1', body: { data: { changed: true } } },
  { method: 'GET', path: '/v1/jobs/emails/job-1' },
  { method: 'POST', path: '/v1/jobs/emails/job-1', body: { status: 'succeeded', attempt: 1 } },
  { method: 'POST', path: '/v1/jobs/emails/job-1/heartbeat', body: { attempt: 1 } },
  { method: 'POST', path: '/v1/jobs/emails/job-1/replay' },
  { method: 'DELETE', path: '/v1/jobs/emails/job-1' },
  { method: 'GET', path: '/v1/no-such-route' },
];

const routeName = (route: { method: string; path: string }): string => `${route.method} ${route.path}`;

describe('authentication', () => {
  test('GET /health answers 200 without a token', async () => {
    const response = await api().api.get('/health', { token: null });
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ status: 'ok' });
  });

  test('GET /health answers 200 with a wrong token too', async () => {
    const response = await api().api.get('/health', { token: 'not-the-token' });
    expect(response.status).toBe(200);
  });

  describe.each(PROTECTED_ROUTES.map((route) => ({ ...route, name: routeName(route) })))('$name', (route) => {
    // Status callbacks and heartbeats run the authorizer even without a header, for callback tokens.
    const withoutHeader = authorizerOf(route.method, route.path) === 'callback' ? REFUSED : NO_KEY;
    test.each([
      { how: 'without a token', options: { token: null }, answer: withoutHeader },
      { how: 'with a wrong token', options: { token: 'wrong-token' }, answer: REFUSED },
    ])('is $answer.status $answer.body.message $how and changes nothing', async ({ options, answer }) => {
      await seed();
      const { api: client, queue } = api();
      const before = await tableItems(queue);
      const response = await client.request(route.method, route.path, {
        ...options,
        ...(route.body !== undefined ? { body: route.body } : {}),
      });
      expect({ status: response.status, body: response.body }).toEqual(answer);
      expect(await tableItems(queue)).toEqual(before);
    });
  });

  test.each([
    { how: 'a token that is a prefix of the right one', options: { token: 'test-admin' } },
    { how: 'the right token with a suffix', options: { token: 'test-admin-token-0123456789x' } },
    { how: 'the right token under another scheme', options: { token: null, headers: { authorization: 'Basic test-admin-token-0123456789' } } },
    { how: 'an empty bearer token', options: { token: null, headers: { authorization: 'Bearer ' } } },
  ])('DELETE of a queued job with $how is 403 Forbidden and leaves it queued', async ({ options }) => {
    await seed();
    const { api: client } = api();
    const response = await client.delete('/v1/jobs/emails/job-1', options);
    expect({ status: response.status, body: response.body }).toEqual(REFUSED);
    expect((await client.get('/v1/jobs/emails/job-1')).body.status).toBe('queued');
  });

  test('the right token is accepted whatever the case of the header name and scheme', async () => {
    const response = await api().api.get('/v1/job-types', {
      token: null,
      headers: { Authorization: 'bearer test-admin-token-0123456789' },
    });
    expect(response.status).toBe(200);
  });
});

describe('a refused key', () => {
  /** A key made through the api, and a client sending it. */
  async function keyFor(body: Record<string, unknown>) {
    const created = await api().api.post('/v1/keys', { scopes: ['admin'], ...body });
    expect(created.status).toBe(201);
    return { id: created.body.id as string, client: createApiClient(api().api.handler, created.body.key) };
  }

  test('an unknown key is 403 {"message":"Forbidden"}', async () => {
    const response = await api().api.get('/v1/job-types', { token: `djq_0000000000000000_${'A'.repeat(43)}` });
    expect({ status: response.status, body: response.body }).toEqual(REFUSED);
  });

  test('an expired key is 403 {"message":"Forbidden"}', async () => {
    const { client } = await keyFor({ expires_at: new Date(api().queue.clock.nowMs() + 60_000).toISOString() });
    expect((await client.get('/v1/job-types')).status).toBe(200);
    api().queue.clock.advance(60_000);
    const response = await client.get('/v1/job-types');
    expect({ status: response.status, body: response.body }).toEqual(REFUSED);
  });

  test('a revoked key is 403 {"message":"Forbidden"} once the gateway no longer keeps its last answer', async () => {
    const { id, client } = await keyFor({});
    expect((await client.get('/v1/job-types')).status).toBe(200);
    expect((await api().api.delete(`/v1/keys/${id}`)).status).toBe(200);
    expect((await client.get('/v1/job-types')).status).toBe(200);
    api().queue.clock.advance(KEY_AUTHORIZER_CACHE_TTL_S * 1000);
    const response = await client.get('/v1/job-types');
    expect({ status: response.status, body: response.body }).toEqual(REFUSED);
  });
});

describe('routing', () => {
  test('an unknown path is 404 not_found', async () => {
    const response = await api().api.get('/v1/no-such-route');
    expect(response.status).toBe(404);
    expect(response.body.error.code).toBe('not_found');
  });

  test('a known path with a method it does not serve is 404 not_found', async () => {
    const response = await api().api.request('PATCH', '/v1/job-types/emails', { body: ECHO_TYPE });
    expect(response.status).toBe(404);
    expect(response.body.error.code).toBe('not_found');
  });

  test('a path below a known route is 404 not_found', async () => {
    const response = await api().api.post('/v1/jobs/emails/job-1/replay/again');
    expect(response.status).toBe(404);
    expect(response.body.error.code).toBe('not_found');
  });
});

describe('error bodies', () => {
  /** One request per error status the api produces, each checked for the error shape and for leaks. */
  const failing: { name: string; status: number; send: () => Promise<{ status: number; body: unknown; text: string }> }[] = [
    { name: '400 invalid JSON', status: 400, send: () => api().api.put('/v1/job-types/emails', '{"target":') },
    { name: '400 invalid field', status: 400, send: () => api().api.put('/v1/job-types/emails', { ...ECHO_TYPE, attempts: 0 }) },
    { name: '404 unknown job type', status: 404, send: () => api().api.get('/v1/job-types/nope') },
    { name: '404 unknown route', status: 404, send: () => api().api.get('/nope') },
    { name: '409 different body for an existing id', status: 409, send: () => api().api.put('/v1/jobs/emails/job-1', { data: { other: 1 } }) },
    {
      name: '413 data over 256 KiB',
      status: 413,
      send: () => api().api.put('/v1/jobs/emails/big', { data: 'x'.repeat(257 * 1024) }),
    },
    {
      name: '415 not JSON',
      status: 415,
      send: () => api().api.put('/v1/jobs/emails/plain', { data: 1 }, { headers: { 'content-type': 'text/plain' } }),
    },
  ];

  test.each(failing)('$name has error.code, error.message, error.details and no stack trace', async ({ status, send }) => {
    await seed();
    const response = await send();
    expect(response.status).toBe(status);
    const body = response.body as { error: { code: unknown; message: unknown; details: unknown } };
    expect(typeof body.error.code).toBe('string');
    expect(typeof body.error.message).toBe('string');
    expect(Array.isArray(body.error.details)).toBe(true);
    for (const detail of body.error.details as unknown[]) {
      expect(detail).toEqual({ field: expect.any(String), message: expect.any(String) });
    }
    expect(leaksInternals(response.text)).toBe(false);
    expect(response.text).not.toMatch(/\bat \S*\//);
    expect(response.text).not.toContain('node_modules');
    expect(response.text).not.toMatch(/\.ts:\d+/);
  });
});
