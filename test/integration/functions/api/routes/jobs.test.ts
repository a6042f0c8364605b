/** docs/reference/http-api.md: enqueue (client and server ids), read, replay and cancel through the api handler. */
import { beforeEach, describe, expect, test } from 'vitest';
import { jobKey } from '../../../../../lib/store/keys.js';
import { freshApiPerTest, itemsWithPk, tableItems } from '../../../../support/api.js';

const api = freshApiPerTest();

const T0_ISO = '2026-11-21T10:00:00.000Z';

beforeEach(async () => {
  const response = await api().api.put('/v1/job-types/emails', { target: { kind: 'handler', name: 'echo' }, attempts: 4 });
  expect(response.status).toBe(201);
});

/** Everything but the job type item: what an enqueue may have written. */
async function jobItems(): Promise<Record<string, unknown>[]> {
  return (await tableItems(api().queue)).filter((item) => String(item.pk).startsWith('JOB#'));
}

describe('PUT /v1/jobs/{type}/{id}', () => {
  test('a new id is 201 with the queued job', async () => {
    const response = await api().api.put('/v1/jobs/emails/job-1', { data: { to: 'a@example.com' } });
    expect(response.status).toBe(201);
    expect(response.body).toMatchObject({
      id: 'job-1',
      type: 'emails',
      status: 'queued',
      data: { to: 'a@example.com' },
      attempt: 0,
      max_attempts: 4,
      run_after: T0_ISO,
      priority: 100,
      weight: 1,
    });
  });

  test('the same body again is 200 with the same job, and the table holds one item for it', async () => {
    const { api: client, queue } = api();
    const body = { data: { to: 'a@example.com', n: [1, 2] }, run_after: '2026-11-21T12:00:00+02:00', priority: 5 };
    const first = await client.put('/v1/jobs/emails/job-1', body);
    queue.clock.advance(1_000);
    const second = await client.put('/v1/jobs/emails/job-1', body);
    expect(first.status).toBe(201);
    expect(second.status).toBe(200);
    expect(second.body).toEqual(first.body);
    expect(await itemsWithPk(queue, jobKey('emails', 'job-1').pk)).toHaveLength(1);
    expect(await jobItems()).toHaveLength(1);
  });

  test('the same body with its keys in another order is the same job (200)', async () => {
    const { api: client } = api();
    await client.put('/v1/jobs/emails/job-1', { data: { a: 1, b: 2 }, priority: 5 });
    const again = await client.put('/v1/jobs/emails/job-1', { priority: 5, data: { b: 2, a: 1 } });
    expect(again.status).toBe(200);
  });

  test('a different body for an existing id is 409 conflict and the stored job is unchanged', async () => {
    const { api: client, queue } = api();
    await client.put('/v1/jobs/emails/job-1', { data: { to: 'a@example.com' } });
    const before = await tableItems(queue);
    const response = await client.put('/v1/jobs/emails/job-1', { data: { to: 'b@example.com' } });
    expect(response.status).toBe(409);
    expect(response.body.error.code).toBe('conflict');
    expect(await tableItems(queue)).toEqual(before);
    expect((await client.get('/v1/jobs/emails/job-1')).body.data).toEqual({ to: 'a@example.com' });
  });

  test('the same data with another priority is 409 conflict', async () => {
    const { api: client } = api();
    await client.put('/v1/jobs/emails/job-1', { data: 1 });
    expect((await client.put('/v1/jobs/emails/job-1', { data: 1, priority: 7 })).status).toBe(409);
  });

  test('the same id under another type is another job', async () => {
    const { api: client } = api();
    await client.put('/v1/job-types/sms', { target: { kind: 'handler', name: 'echo' } });
    expect((await client.put('/v1/jobs/emails/job-1', { data: 1 })).status).toBe(201);
    expect((await client.put('/v1/jobs/sms/job-1', { data: 2 })).status).toBe(201);
  });

  test('an unknown type is 404 not_found and stores nothing', async () => {
    const response = await api().api.put('/v1/jobs/nope/job-1', { data: 1 });
    expect(response.status).toBe(404);
    expect(response.body.error.code).toBe('not_found');
    expect(await jobItems()).toEqual([]);
  });

  const invalid: { name: string; path?: string; body: unknown; field: string }[] = [
    { name: 'run_after without an offset', body: { run_after: '2026-11-21T12:00:00' }, field: 'run_after' },
    { name: 'run_after that is not a date', body: { run_after: 'tomorrow' }, field: 'run_after' },
    { name: 'expires_at before run_after', body: { run_after: '2026-11-21T12:00:00Z', expires_at: '2026-11-21T11:00:00Z' }, field: 'expires_at' },
    { name: 'priority 1001', body: { priority: 1001 }, field: 'priority' },
    { name: 'priority -1', body: { priority: -1 }, field: 'priority' },
    { name: 'a non-integer priority', body: { priority: 1.5 }, field: 'priority' },
    { name: 'a negative weight', body: { weight: -1 }, field: 'weight' },
    { name: 'an unknown field', body: { data: 1, id: 'job-9' }, field: 'id' },
    { name: 'a body that is not an object', body: [1, 2], field: 'body' },
    { name: 'an invalid id in the path', path: '/v1/jobs/emails/bad%20id', body: { data: 1 }, field: 'id' },
    { name: 'an invalid type in the path', path: '/v1/jobs/bad%23type/job-1', body: { data: 1 }, field: 'type' },
  ];

  test.each(invalid)('$name is 400 naming field $field and stores nothing', async ({ path, body, field }) => {
    const response = await api().api.put(path ?? '/v1/jobs/emails/job-1', body);
    expect(response.status).toBe(400);
    expect(response.body.error.code).toBe('invalid_request');
    expect(response.body.error.details).toContainEqual({ field, message: expect.any(String) });
    expect(await jobItems()).toEqual([]);
  });

  test('data over 256 KiB is 413 naming data (or body) and stores nothing', async () => {
    const response = await api().api.put('/v1/jobs/emails/job-1', { data: { blob: 'x'.repeat(256 * 1024) } });
    expect(response.status).toBe(413);
    expect(response.body.error.code).toBe('payload_too_large');
    expect(['data', 'body']).toContain(response.body.error.details[0]?.field);
    expect(await jobItems()).toEqual([]);
  });

  test('a body far over the cap is 413 naming body and stores nothing', async () => {
    const response = await api().api.put('/v1/jobs/emails/job-1', { data: 'x'.repeat(400 * 1024) });
    expect(response.status).toBe(413);
    expect(['data', 'body']).toContain(response.body.error.details[0]?.field);
    expect(await jobItems()).toEqual([]);
  });

  test('data of exactly 256 KiB is accepted', async () => {
    // JSON.stringify adds the two quotes around the string.
    const response = await api().api.put('/v1/jobs/emails/job-1', { data: 'x'.repeat(256 * 1024 - 2) });
    expect(response.status).toBe(201);
  });

  test('a text/plain body is 415 and stores nothing', async () => {
    const response = await api().api.put('/v1/jobs/emails/job-1', { data: 1 }, { headers: { 'content-type': 'text/plain' } });
    expect(response.status).toBe(415);
    expect(response.body.error.code).toBe('unsupported_media_type');
    expect(await jobItems()).toEqual([]);
  });

  test('a body without a content-type is 415', async () => {
    const response = await api().api.put('/v1/jobs/emails/job-1', '{"data":1}', { headers: { 'content-type': '' } });
    expect(response.status).toBe(415);
  });

  test('application/json with a charset is accepted', async () => {
    const response = await api().api.put('/v1/jobs/emails/job-1', { data: 1 }, {
      headers: { 'content-type': 'application/json; charset=utf-8' },
    });
    expect(response.status).toBe(201);
  });

  test('a base64-encoded JSON body is decoded', async () => {
    const response = await api().api.put('/v1/jobs/emails/job-1', { data: { n: 1 } }, { base64: true });
    expect(response.status).toBe(201);
    expect(response.body.data).toEqual({ n: 1 });
  });

  test('invalid JSON is 400 naming field body and stores nothing', async () => {
    const response = await api().api.put('/v1/jobs/emails/job-1', '{"data": ');
    expect(response.status).toBe(400);
    expect(response.body.error.details).toContainEqual({ field: 'body', message: expect.any(String) });
    expect(await jobItems()).toEqual([]);
  });

  test('an empty body enqueues a job with null data', async () => {
    const response = await api().api.put('/v1/jobs/emails/job-1');
    expect(response.status).toBe(201);
    expect(response.body.data).toBeNull();
  });

  test('data with a number above 2^53 is stored as JSON holds it', async () => {
    const response = await api().api.put('/v1/jobs/emails/job-1', '{"data": {"n": 100000000000000000000}}');
    expect(response.status).toBe(201);
    expect(response.body.data).toEqual({ n: 1e20 });
  });

  test('data nested 40 levels deep, beyond what a DynamoDB map allows, is stored and returned exactly', async () => {
    let data: unknown = 1;
    for (let level = 0; level < 40; level++) data = { a: data };
    const response = await api().api.put('/v1/jobs/emails/job-1', { data });
    expect(response.status).toBe(201);
    expect((await api().api.get('/v1/jobs/emails/job-1')).body.data).toEqual(data);
  });

  test('a body nested deeper than 100 levels is 400 naming body, and nothing is stored', async () => {
    const response = await api().api.put('/v1/jobs/emails/job-1', `{"data": ${'['.repeat(5000)}${']'.repeat(5000)}}`);
    expect(response.status).toBe(400);
    expect(response.body.error.details).toContainEqual({ field: 'body', message: expect.stringMatching(/nested deeper/) });
    expect(await jobItems()).toEqual([]);
  });

  test('data with an empty-string object key is stored and returned exactly', async () => {
    const response = await api().api.put('/v1/jobs/emails/job-1', { data: { '': 1 } });
    expect(response.status).toBe(201);
    expect(response.body.data).toEqual({ '': 1 });
  });
});

describe('POST /v1/jobs/{type}', () => {
  test('is 201 with a server id starting job_', async () => {
    const response = await api().api.post('/v1/jobs/emails', { data: { to: 'a@example.com' } });
    expect(response.status).toBe(201);
    expect(response.body.id).toMatch(/^job_[0-9a-z]+$/);
    expect(response.body).toMatchObject({ type: 'emails', status: 'queued', data: { to: 'a@example.com' } });
  });

  test('two posts of the same body give two jobs with different ids', async () => {
    const { api: client } = api();
    const first = await client.post('/v1/jobs/emails', { data: 1 });
    const second = await client.post('/v1/jobs/emails', { data: 1 });
    expect(first.status).toBe(201);
    expect(second.status).toBe(201);
    expect(second.body.id).not.toBe(first.body.id);
    expect(await jobItems()).toHaveLength(2);
  });

  test('ids are time-ordered: a later post sorts after an earlier one', async () => {
    const { api: client, queue } = api();
    const first = await client.post('/v1/jobs/emails', { data: 1 });
    queue.clock.advance(1);
    const second = await client.post('/v1/jobs/emails', { data: 2 });
    expect(String(second.body.id) > String(first.body.id)).toBe(true);
  });

  test('the job is readable under the id it was given', async () => {
    const { api: client } = api();
    const { body } = await client.post('/v1/jobs/emails', { data: 3 });
    const read = await client.get(`/v1/jobs/emails/${String(body.id)}`);
    expect(read.status).toBe(200);
    expect(read.body).toEqual(body);
  });

  test('an unknown type is 404', async () => {
    const response = await api().api.post('/v1/jobs/nope', { data: 1 });
    expect(response.status).toBe(404);
    expect(await jobItems()).toEqual([]);
  });

  test('an invalid body is 400 and stores nothing', async () => {
    const response = await api().api.post('/v1/jobs/emails', { priority: 1001 });
    expect(response.status).toBe(400);
    expect(response.body.error.details).toContainEqual({ field: 'priority', message: expect.any(String) });
    expect(await jobItems()).toEqual([]);
  });
});

describe('GET /v1/jobs/{type}/{id}', () => {
  test('returns the job in the shape docs/reference/http-api.md shows', async () => {
    const { api: client } = api();
    await client.put('/v1/jobs/emails/job-1', {
      data: { shipmentId: 'shp_123' },
      run_after: '2026-11-21T10:05:00Z',
      expires_at: '2026-11-22T10:00:00+01:00',
      priority: 7,
      weight: 2,
    });
    const response = await client.get('/v1/jobs/emails/job-1');
    expect(response.status).toBe(200);
    for (const key of [
      'id', 'type', 'status', 'data', 'attempt', 'max_attempts', 'run_after', 'expires_at', 'priority', 'weight',
      'throttle_key', 'correlation_key', 'created_at', 'updated_at', 'finished_at', 'result', 'history',
    ]) {
      expect(response.body).toHaveProperty(key);
    }
    expect(response.body).toMatchObject({
      id: 'job-1',
      type: 'emails',
      status: 'queued',
      data: { shipmentId: 'shp_123' },
      attempt: 0,
      max_attempts: 4,
      run_after: '2026-11-21T10:05:00.000Z',
      expires_at: '2026-11-22T09:00:00.000Z',
      priority: 7,
      weight: 2,
      throttle_key: null,
      correlation_key: null,
      created_at: T0_ISO,
      updated_at: T0_ISO,
      finished_at: null,
      result: null,
      history: [],
    });
  });

  test('an unknown id is 404 not_found', async () => {
    const response = await api().api.get('/v1/jobs/emails/nope');
    expect(response.status).toBe(404);
    expect(response.body.error.code).toBe('not_found');
  });

  test('an unknown type is 404 not_found', async () => {
    const response = await api().api.get('/v1/jobs/nope/job-1');
    expect(response.status).toBe(404);
  });
});

describe('POST /v1/jobs/{type}/{id}/replay', () => {
  test('is 201 with a new queued job with a new id and the same data', async () => {
    const { api: client } = api();
    await client.put('/v1/jobs/emails/job-1', { data: { to: 'a@example.com' }, priority: 9, weight: 3 });
    const response = await client.post('/v1/jobs/emails/job-1/replay');
    expect(response.status).toBe(201);
    expect(response.body.id).not.toBe('job-1');
    expect(response.body.id).toMatch(/^job_/);
    expect(response.body).toMatchObject({ type: 'emails', status: 'queued', data: { to: 'a@example.com' }, priority: 9, weight: 3, attempt: 0 });
    expect((await client.get(`/v1/jobs/emails/${String(response.body.id)}`)).status).toBe(200);
    expect((await client.get('/v1/jobs/emails/job-1')).body.status).toBe('queued');
  });

  test('replaying a cancelled job gives a new queued job', async () => {
    const { api: client } = api();
    await client.put('/v1/jobs/emails/job-1', { data: 1 });
    await client.delete('/v1/jobs/emails/job-1');
    const response = await client.post('/v1/jobs/emails/job-1/replay');
    expect(response.status).toBe(201);
    expect(response.body.status).toBe('queued');
  });

  test('an unknown job is 404 and stores nothing', async () => {
    const response = await api().api.post('/v1/jobs/emails/nope/replay');
    expect(response.status).toBe(404);
    expect(response.body.error.code).toBe('not_found');
    expect(await jobItems()).toEqual([]);
  });
});

describe('DELETE /v1/jobs/{type}/{id}', () => {
  test('cancels a queued job: 200 with status cancelled, finished_at set', async () => {
    const { api: client, queue } = api();
    await client.put('/v1/jobs/emails/job-1', { data: 1 });
    queue.clock.advance(2_000);
    const response = await client.delete('/v1/jobs/emails/job-1');
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ id: 'job-1', status: 'cancelled', finished_at: '2026-11-21T10:00:02.000Z' });
    expect((await client.get('/v1/jobs/emails/job-1')).body.status).toBe('cancelled');
  });

  test('the cancelled job leaves the waiting lane for the cancelled listing', async () => {
    const { api: client, queue } = api();
    await client.put('/v1/jobs/emails/job-1', { data: 1 });
    await client.delete('/v1/jobs/emails/job-1');
    const [item] = await itemsWithPk(queue, jobKey('emails', 'job-1').pk);
    expect(item).toBeDefined();
    expect(String(item?.gsi1pk)).toMatch(/^F#emails#cancelled#\d+$/);
  });

  test('a second cancel is 409 conflict and changes nothing', async () => {
    const { api: client, queue } = api();
    await client.put('/v1/jobs/emails/job-1', { data: 1 });
    await client.delete('/v1/jobs/emails/job-1');
    const before = await tableItems(queue);
    queue.clock.advance(1_000);
    const response = await client.delete('/v1/jobs/emails/job-1');
    expect(response.status).toBe(409);
    expect(response.body.error.code).toBe('conflict');
    expect(await tableItems(queue)).toEqual(before);
  });

  test('an unknown job is 404 not_found and creates nothing', async () => {
    const response = await api().api.delete('/v1/jobs/emails/nope');
    expect(response.status).toBe(404);
    expect(response.body.error.code).toBe('not_found');
    expect(await jobItems()).toEqual([]);
  });
});
