/**
 * Keys and scopes through the authorizer and the api together, as API Gateway
 * runs them: the key routes, what each scope opens, revocation, and callbacks
 * admitted by their per-job, per-attempt callback tokens.
 */
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import { createAuthorizer } from '../../../../functions/authorizer/app.js';
import { SecretNotCreatedError } from '../../../../lib/aws/secrets.js';
import { createCallbackToken } from '../../../../lib/domain/callback-tokens.js';
import { toAuthorizerEvent } from '../../../../infra/local/aws/gateway.js';
import { KEY_AUTHORIZER_CACHE_TTL_S } from '../../../../infra/api-gateway.js';
import { claimJob } from '../../../../lib/queue/attempt/claim.js';
import { requireJobType } from '../../../../lib/queue/catalog/job-types.js';
import { ADMIN_TOKEN, buildHttpApiEvent, createApiClient, createTestApi, tableItems, type ApiClient } from '../../../support/api.js';
import { createTestQueue, type TestQueue } from '../../../support/queue.js';

const ECHO_TYPE = { target: { kind: 'handler', name: 'echo' } };

const CALLBACK_SECRET = 'callback-secret-for-tests';
const tokenFor = (id: string, attempt: number): string => encodeURIComponent(createCallbackToken(CALLBACK_SECRET, { type: 'emails', id, attempt }));

let queue: TestQueue;
let admin: ApiClient;

beforeEach(async () => {
  queue = await createTestQueue();
  admin = createTestApi(queue, { callbackTokenSecret: CALLBACK_SECRET });
  for (const type of ['emails', 'invoices']) expect((await admin.put(`/v1/job-types/${type}`, ECHO_TYPE)).status).toBe(201);
});
afterEach(async () => {
  await queue.drop();
});

/** A client sending a new key with `scopes`, created through POST /v1/keys. */
async function clientWith(...scopes: string[]): Promise<ApiClient> {
  const created = await admin.post('/v1/keys', { scopes });
  expect(created.status).toBe(201);
  return createApiClient(admin.handler, created.body.key);
}

describe('the key routes', () => {
  test('POST /v1/keys is 201 with the key, shown this once, and its scopes', async () => {
    const response = await admin.post('/v1/keys', { scopes: ['enqueue:emails'], name: 'producer' });
    expect(response.status).toBe(201);
    expect(response.body).toEqual({
      id: expect.stringMatching(/^[0-9a-f]{16}$/),
      key: expect.stringMatching(/^djq_[0-9a-f]{16}_/),
      name: 'producer',
      scopes: ['enqueue:emails'],
      created_at: expect.any(String),
      expires_at: null,
      last_used_at: null,
      revoked_at: null,
    });
  });

  test('GET /v1/keys lists ids, scopes and times, never a secret', async () => {
    const created = await admin.post('/v1/keys', { scopes: ['read:*'] });
    const response = await admin.get('/v1/keys');
    expect(response.status).toBe(200);
    const { key: _shownOnce, ...listed } = created.body;
    expect(response.body.keys).toEqual([listed]);
    expect(response.text).not.toContain(created.body.key);
  });

  test('GET /v1/keys shows when a key was last used', async () => {
    const producer = await clientWith('enqueue:emails');
    expect((await producer.put('/v1/jobs/emails/j1', { data: 1 })).status).toBe(201);
    const [listed] = (await admin.get('/v1/keys')).body.keys;
    expect(listed.last_used_at).toBe(new Date(queue.clock.nowMs()).toISOString());
  });

  test('DELETE /v1/keys/{id} revokes: the key is refused, 403 Forbidden, once the gateway no longer keeps its last answer', async () => {
    const created = await admin.post('/v1/keys', { scopes: ['read:*'] });
    const reader = createApiClient(admin.handler, created.body.key);
    expect((await reader.get('/v1/job-types')).status).toBe(200);
    const revoked = await admin.delete(`/v1/keys/${created.body.id}`);
    expect(revoked.status).toBe(200);
    expect(revoked.body.revoked_at).toEqual(expect.any(String));
    queue.clock.advance(KEY_AUTHORIZER_CACHE_TTL_S * 1000);
    const refused = await reader.get('/v1/job-types');
    expect({ status: refused.status, body: refused.body }).toEqual({ status: 403, body: { message: 'Forbidden' } });
  });

  test('DELETE /v1/keys/{id} of an unknown key is 404', async () => {
    expect((await admin.delete('/v1/keys/0000000000000000')).status).toBe(404);
  });

  test('a key with scope admin made by the API can make keys too', async () => {
    const second = await clientWith('admin');
    expect((await second.post('/v1/keys', { scopes: ['read:*'] })).status).toBe(201);
  });

  test('an unknown scope is 400 naming it and creates no key', async () => {
    const response = await admin.post('/v1/keys', { scopes: ['read:*', 'root'] });
    expect(response.status).toBe(400);
    expect(response.body.error.details).toEqual([{ field: 'scopes.1', message: expect.any(String) }]);
    expect((await admin.get('/v1/keys')).body.keys).toEqual([]);
  });
});

describe('what each scope opens', () => {
  test('enqueue:emails enqueues, replays and cancels emails jobs, and nothing else', async () => {
    const producer = await clientWith('enqueue:emails');
    expect((await producer.put('/v1/jobs/emails/j1', { data: 1 })).status).toBe(201);
    expect((await producer.post('/v1/jobs/emails', { data: 2 })).status).toBe(201);
    expect((await producer.post('/v1/jobs/emails/j1/replay')).status).toBe(201);
    expect((await producer.delete('/v1/jobs/emails/j1')).status).toBe(200);
    expect((await producer.put('/v1/jobs/invoices/j1', { data: 1 })).status).toBe(403);
    expect((await producer.get('/v1/jobs/emails/j1')).status).toBe(403);
    expect((await producer.get('/v1/job-types')).status).toBe(403);
  });

  test('read:emails reads emails jobs and types, and lists only the emails type', async () => {
    await admin.put('/v1/jobs/emails/j1', { data: 1 });
    await admin.put('/v1/jobs/invoices/j1', { data: 1 });
    const reader = await clientWith('read:emails');
    expect((await reader.get('/v1/jobs/emails/j1')).status).toBe(200);
    expect((await reader.get('/v1/job-types/emails')).status).toBe(200);
    expect((await reader.get('/v1/job-types')).body.job_types.map((t: { name: string }) => t.name)).toEqual(['emails']);
    expect((await reader.get('/v1/jobs/invoices/j1')).status).toBe(403);
    expect((await reader.put('/v1/jobs/emails/j2', { data: 1 })).status).toBe(403);
  });

  test('read:* lists every type', async () => {
    const reader = await clientWith('read:*');
    expect((await reader.get('/v1/job-types')).body.job_types).toHaveLength(2);
  });

  test('a 403 names the scope the route needs and changes nothing', async () => {
    const reader = await clientWith('read:*');
    expect((await reader.get('/v1/job-types')).status).toBe(200); // its first use, recorded as last use
    const before = await tableItems(queue);
    const response = await reader.put('/v1/job-types/emails', { target: { kind: 'handler', name: 'fail' } });
    expect(response.status).toBe(403);
    expect(response.body.error).toMatchObject({ code: 'forbidden', message: 'this route needs scope admin' });
    expect(await tableItems(queue)).toEqual(before);
  });

  test('callback:emails may report on an emails job but not enqueue one', async () => {
    await admin.put('/v1/jobs/emails/j1', { data: 1 });
    const worker = await clientWith('callback:emails');
    expect((await worker.post('/v1/jobs/emails/j1', { status: 'succeeded', attempt: 1 })).status).toBe(409);
    expect((await worker.put('/v1/jobs/emails/j2', { data: 1 })).status).toBe(403);
  });

  test('only admin manages keys', async () => {
    const everything = await clientWith('enqueue:*', 'read:*', 'callback:*');
    expect((await everything.get('/v1/keys')).status).toBe(403);
    expect((await everything.post('/v1/keys', { scopes: ['admin'] })).status).toBe(403);
  });
});

describe('callback tokens', () => {
  async function runningJob(id: string): Promise<void> {
    expect((await admin.put(`/v1/jobs/emails/${id}`, { data: 1 })).status).toBe(201);
    const claimed = await claimJob(queue.ctx, { type: 'emails', id }, await requireJobType(queue.ctx, 'emails'));
    expect(claimed.kind).toBe('claimed');
  }

  test("a token for the job's attempt completes it without an Authorization header", async () => {
    await runningJob('j1');
    const response = await admin.post(`/v1/jobs/emails/j1?token=${tokenFor('j1', 1)}`, { status: 'succeeded', attempt: 1 }, { token: null });
    expect(response.status).toBe(200);
    expect(response.body.status).toBe('succeeded');
  });

  test('a token extends the claim through the heartbeat route', async () => {
    await runningJob('j1');
    const response = await admin.post(`/v1/jobs/emails/j1/heartbeat?token=${tokenFor('j1', 1)}`, { attempt: 1 }, { token: null });
    expect(response.status).toBe(200);
  });

  test('a token reporting another attempt than its own is 409 and changes nothing', async () => {
    await runningJob('j1');
    const before = await tableItems(queue);
    const response = await admin.post(`/v1/jobs/emails/j1?token=${tokenFor('j1', 2)}`, { status: 'succeeded', attempt: 1 }, { token: null });
    expect(response.status).toBe(409);
    expect(await tableItems(queue)).toEqual(before);
  });

  test('a forged token is refused by the authorizer: 403 Forbidden', async () => {
    await runningJob('j1');
    const response = await admin.post('/v1/jobs/emails/j1?token=bad', { status: 'succeeded', attempt: 1 }, { token: null });
    expect({ status: response.status, body: response.body }).toEqual({ status: 403, body: { message: 'Forbidden' } });
  });

  test('a token opens no other route of its job: without a header they are 401, the authorizer never asked', async () => {
    await runningJob('j1');
    expect((await admin.get(`/v1/jobs/emails/j1?token=${tokenFor('j1', 1)}`, { token: null })).status).toBe(401);
    expect((await admin.post(`/v1/jobs/emails/j1/replay?token=${tokenFor('j1', 1)}`, undefined, { token: null })).status).toBe(401);
  });

  test('with an Authorization header the key decides and the token is not consulted', async () => {
    await runningJob('j1');
    const response = await admin.post(`/v1/jobs/emails/j1?token=${tokenFor('j1', 1)}`, { status: 'succeeded', attempt: 1 }, { token: 'wrong' });
    expect(response.status).toBe(403);
  });

  test('a token for another job is 403', async () => {
    await runningJob('j1');
    const response = await admin.post(`/v1/jobs/emails/j1?token=${tokenFor('j2', 1)}`, { status: 'succeeded', attempt: 1 }, { token: null });
    expect(response.status).toBe(403);
  });

  test('while the callback token parameter does not exist yet (no worker signed a token) a token is refused, not an error', async () => {
    await runningJob('j1');
    const notCreated = { versions: () => Promise.reject(new SecretNotCreatedError('not created')) };
    const path = `/v1/jobs/emails/j1?token=${tokenFor('j1', 1)}`;
    const authorized = await createAuthorizer({ ctx: queue.as('authorizer'), callbackTokenSecret: notCreated })(toAuthorizerEvent(buildHttpApiEvent('POST', path, { token: null }), []));
    expect(authorized.isAuthorized).toBe(false);
  });

  test('without the callback secret a token admits nothing', async () => {
    await runningJob('j1');
    const plain = createTestApi(queue);
    const response = await plain.post(`/v1/jobs/emails/j1?token=${tokenFor('j1', 1)}`, { status: 'succeeded', attempt: 1 }, { token: null });
    expect(response.status).toBe(403);
  });
});

describe('the authorizer', () => {
  const authorize = (authorization: string | null) =>
    createAuthorizer({ ctx: queue.as('authorizer'), staticAdminToken: ADMIN_TOKEN })(
      toAuthorizerEvent(buildHttpApiEvent('GET', '/v1/job-types', { token: authorization }), authorization ? [`Bearer ${authorization}`] : []),
    );

  test('admits API_TOKEN as admin, without a key in the table', async () => {
    expect(await authorize(ADMIN_TOKEN)).toEqual({
      isAuthorized: true,
      context: { principal: 'key', key_id: 'API_TOKEN', scopes: 'admin' },
    });
  });

  test("admits a key with its id, scopes and expiry in the context, for the api to check per route", async () => {
    const expiresAt = new Date(queue.clock.nowMs() + 3_600_000);
    const created = await admin.post('/v1/keys', { scopes: ['read:emails', 'enqueue:*'], expires_at: expiresAt.toISOString() });
    expect(await authorize(created.body.key)).toEqual({
      isAuthorized: true,
      context: { principal: 'key', key_id: created.body.id, scopes: 'read:emails enqueue:*', expires_at_ms: expiresAt.getTime() },
    });
  });

  test('refuses a request without a key', async () => {
    expect((await authorize(null)).isAuthorized).toBe(false);
  });

  test('its answer does not depend on the route, since API Gateway caches it per Authorization header', async () => {
    const created = await admin.post('/v1/keys', { scopes: ['read:emails'] });
    const authorizer = createAuthorizer({ ctx: queue.as('authorizer') });
    const answers = await Promise.all(
      ['/v1/keys', '/v1/jobs/invoices/x', '/v1/job-types'].map((path) =>
        authorizer(toAuthorizerEvent(buildHttpApiEvent('POST', path, { token: created.body.key }), [`Bearer ${created.body.key}`])),
      ),
    );
    expect(new Set(answers.map((answer) => JSON.stringify(answer))).size).toBe(1);
  });
});
