/** `POST /jobber/queue`: the compatibility route, `{type, payload}` → 201 `{"job-id"}`, a job with `payload` as its data. */
import { beforeEach, expect, test } from 'vitest';
import { createApiClient, freshApiPerTest, tableItems, type ApiClient } from '../../../../support/api.js';

const api = freshApiPerTest();

beforeEach(async () => {
  const { api: client } = api();
  for (const type of ['emails', 'invoices']) {
    expect((await client.put(`/v1/job-types/${type}`, { target: { kind: 'handler', name: 'echo' }, concurrency: 0 })).status).toBe(201);
  }
});

async function clientWith(...scopes: string[]): Promise<ApiClient> {
  const { api: admin } = api();
  const created = await admin.post('/v1/keys', { scopes });
  expect(created.status).toBe(201);
  return createApiClient(admin.handler, created.body.key);
}

const jobItems = async () => (await tableItems(api().queue)).filter((item) => String(item.pk).startsWith('JOB#'));

test('enqueues a job of the type with the payload as its data: 201 with only its id', async () => {
  const { api: client } = api();
  const response = await client.post('/jobber/queue', { type: 'emails', payload: { to: 'ada@example.com' } });
  expect(response.status).toBe(201);
  expect(response.body).toEqual({ 'job-id': expect.stringMatching(/^job_[0-9a-z]{26}$/) });
  const job = await client.get(`/v1/jobs/emails/${response.body['job-id']}`);
  expect(job.body).toMatchObject({ type: 'emails', status: 'queued', data: { to: 'ada@example.com' }, priority: 100, weight: 1 });
});

test('each request is a new job; a missing payload is data null', async () => {
  const { api: client } = api();
  const first = await client.post('/jobber/queue', { type: 'emails' });
  const second = await client.post('/jobber/queue', { type: 'emails' });
  expect(first.body['job-id']).not.toBe(second.body['job-id']);
  expect((await client.get(`/v1/jobs/emails/${first.body['job-id']}`)).body.data).toBeNull();
});

test('a type that does not exist is 404 naming it, and nothing is enqueued', async () => {
  const response = await api().api.post('/jobber/queue', { type: 'nope', payload: 1 });
  expect(response.status).toBe(404);
  expect(response.body.error.message).toContain('"nope"');
  expect(await jobItems()).toEqual([]);
});

test.each([
  ['no type', { payload: 1 }, 'type'],
  ['a type that is no type name', { type: '../keys', payload: 1 }, 'type'],
  ['a type that is not a string', { type: 7 }, 'type'],
  ['an unknown field', { type: 'emails', payload: 1, run_after: '2030-01-01T00:00:00Z' }, 'run_after'],
])('%s is 400 naming it', async (_name, body, field) => {
  const response = await api().api.post('/jobber/queue', body);
  expect(response.status).toBe(400);
  expect(response.body.error.details.map((detail: { field: string }) => detail.field)).toEqual([field]);
  expect(await jobItems()).toEqual([]);
});

test('a payload over 256 KiB is 413 naming payload', async () => {
  const response = await api().api.post('/jobber/queue', { type: 'emails', payload: 'x'.repeat(257 * 1024) });
  expect(response.status).toBe(413);
  expect(response.body.error.details.map((detail: { field: string }) => detail.field)).toEqual(['payload']);
  expect(await jobItems()).toEqual([]);
});

test('needs enqueue:<type> of the type in the body, as enqueueing that type does', async () => {
  const emailsProducer = await clientWith('enqueue:emails');
  expect((await emailsProducer.post('/jobber/queue', { type: 'emails', payload: 1 })).status).toBe(201);
  const refused = await emailsProducer.post('/jobber/queue', { type: 'invoices', payload: 1 });
  expect(refused.status).toBe(403);
  expect(refused.body.error.message).toContain('enqueue:invoices');
  // Refused before the type is looked up, so a 403 says nothing about which types exist.
  expect((await emailsProducer.post('/jobber/queue', { type: 'nope', payload: 1 })).status).toBe(403);
  expect((await (await clientWith('enqueue:*')).post('/jobber/queue', { type: 'invoices', payload: 1 })).status).toBe(201);
  expect((await (await clientWith('read:*', 'callback:*')).post('/jobber/queue', { type: 'emails', payload: 1 })).status).toBe(403);
  expect((await api().api.post('/jobber/queue', { type: 'emails', payload: 1 }, { token: null })).status).toBe(401);
  expect((await jobItems()).map((item) => item.type).sort()).toEqual(['emails', 'invoices']);
});
