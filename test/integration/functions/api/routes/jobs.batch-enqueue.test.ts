/**
 * `POST /v1/jobs/{type}/batch`: up to 100 jobs in one request, a result per
 * item, each item idempotent on its own (type, id). A bad envelope enqueues
 * nothing; a bad or failed item fails alone.
 */
import { beforeEach, describe, expect, test } from 'vitest';
import { freshApiPerTest, leaksInternals, tableItems } from '../../../../support/api.js';
import { refuseCalls } from '../../../../support/faults.js';

const api = freshApiPerTest();

beforeEach(async () => {
  const { api: client } = api();
  for (const type of ['emails', 'other']) {
    expect((await client.put(`/v1/job-types/${type}`, { target: { kind: 'handler', name: 'echo' }, concurrency: 0 })).status).toBe(201);
  }
});

/** The jobs in the table as `type/id`, sorted. */
async function storedJobs(): Promise<string[]> {
  return (await tableItems(api().queue))
    .filter((item) => String(item.pk).startsWith('JOB#'))
    .map((item) => `${String(item.type)}/${String(item.id)}`)
    .sort();
}

const fieldsOf = (result: { error: { details: { field: string }[] } }): string[] => result.error.details.map((detail) => detail.field);

describe('a valid batch', () => {
  test('enqueues every job: 200 with a 201 result per item, in request order', async () => {
    const { api: client } = api();
    const response = await client.post('/v1/jobs/emails/batch', {
      jobs: [{ id: 'a', data: { n: 1 } }, { id: 'b', data: { n: 2 }, priority: 5 }, { id: 'c' }],
    });
    expect(response.status).toBe(200);
    expect(response.body.results.map((r: any) => [r.index, r.id, r.status])).toEqual([
      [0, 'a', 201],
      [1, 'b', 201],
      [2, 'c', 201],
    ]);
    expect(response.body.results[1].job).toMatchObject({ id: 'b', type: 'emails', status: 'queued', data: { n: 2 }, priority: 5 });
    expect((await client.get('/v1/jobs/emails/b')).body).toEqual(response.body.results[1].job);
    expect(await storedJobs()).toEqual(['emails/a', 'emails/b', 'emails/c']);
  });

  test('items without an id get distinct server ids, in request order', async () => {
    const { api: client } = api();
    const response = await client.post('/v1/jobs/emails/batch', { jobs: [{ data: 1 }, { data: 2 }, { data: 3 }] });
    const ids = response.body.results.map((r: any) => r.id);
    expect(ids.every((id: string) => /^job_[0-9a-z]{26}$/.test(id))).toBe(true);
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(3);
    expect(response.body.results.map((r: any) => r.job.id)).toEqual(ids);
  });

  test('the same batch again is 200 for every item and changes nothing', async () => {
    const { api: client, queue } = api();
    const jobs = Array.from({ length: 30 }, (_, i) => ({ id: `replay-${i}`, data: { i }, ...(i % 3 === 0 ? { correlation_key: `corr-${i}` } : {}) }));
    const first = await client.post('/v1/jobs/emails/batch', { jobs });
    expect(first.body.results.map((r: any) => r.status)).toEqual(jobs.map(() => 201));
    const before = await tableItems(queue);
    const again = await client.post('/v1/jobs/emails/batch', { jobs });
    expect(again.status).toBe(200);
    expect(again.body.results.map((r: any) => r.status)).toEqual(jobs.map(() => 200));
    expect(again.body.results.map((r: any) => r.job)).toEqual(first.body.results.map((r: any) => r.job));
    expect(await tableItems(queue)).toEqual(before);
  });

  test('a body over the single-job cap of 300 KiB is accepted up to the batch cap of 2 MiB', async () => {
    const { api: client } = api();
    const jobs = Array.from({ length: 7 }, (_, i) => ({ id: `big-${i}`, data: 'x'.repeat(250 * 1024) }));
    const response = await client.post('/v1/jobs/emails/batch', { jobs });
    expect(response.status).toBe(200);
    expect(response.body.results.map((r: any) => r.status)).toEqual(jobs.map(() => 201));
  });
});

test('100 mixed items: the right result for each, and exactly the right jobs exist', async () => {
  const { api: client } = api();
  for (let i = 0; i < 15; i++) expect((await client.put(`/v1/jobs/emails/old-${i}`, { data: { i } })).status).toBe(201);
  expect((await client.put('/v1/jobs/other/holder', { correlation_key: 'held' })).status).toBe(201);
  const before = await storedJobs();

  type Expected = { status: number; fields?: string[]; id?: string };
  const items: { item: unknown; expected: Expected }[] = [];
  const add = (item: unknown, expected: Expected) => items.push({ item, expected });
  for (let i = 0; i < 40; i++) add({ id: `new-${i}`, data: { i } }, { status: 201, id: `new-${i}` });
  for (let i = 0; i < 10; i++) add({ id: `old-${i}`, data: { i } }, { status: 200, id: `old-${i}` });
  for (let i = 10; i < 15; i++) add({ id: `old-${i}`, data: { changed: true } }, { status: 409, id: `old-${i}` });
  add({ id: 'bad-1', priority: -1 }, { status: 400, fields: ['priority'], id: 'bad-1' });
  add({ id: 'bad-2', dta: 1 }, { status: 400, fields: ['dta'], id: 'bad-2' });
  add({ id: 'bad 3' }, { status: 400, fields: ['id'] });
  add({ id: 42 }, { status: 400, fields: ['id'] });
  add({ id: 'batch' }, { status: 400, fields: ['id'] });
  add({ run_after: '2026-11-21' }, { status: 400, fields: ['run_after'] });
  add({ id: 'bad-7', run_after: '2030-01-02T00:00:00Z', expires_at: '2030-01-01T00:00:00Z' }, { status: 400, fields: ['expires_at'], id: 'bad-7' });
  add('not an object', { status: 400, fields: [''] });
  add(null, { status: 400, fields: [''] });
  add({ id: 'bad-10', correlation_key: 'a b', weight: 'heavy' }, { status: 400, fields: ['weight', 'correlation_key'], id: 'bad-10' });
  for (let i = 0; i < 3; i++) add({ id: `huge-${i}`, data: 'x'.repeat(257 * 1024) }, { status: 413, fields: ['data'], id: `huge-${i}` });
  add({ id: 'dup', data: 'same' }, { status: 201, id: 'dup' });
  add({ id: 'dup', data: 'same' }, { status: 200, id: 'dup' });
  add({ id: 'dup2', data: 'first' }, { status: 201, id: 'dup2' });
  add({ id: 'dup2', data: 'second' }, { status: 409, id: 'dup2' });
  add({ id: 'corr-1', correlation_key: 'fresh' }, { status: 201, id: 'corr-1' });
  add({ id: 'corr-2', correlation_key: 'fresh' }, { status: 409, fields: ['correlation_key'], id: 'corr-2' });
  // Correlation keys are unique per type: another type's holder does not block this one.
  add({ id: 'corr-3', correlation_key: 'held' }, { status: 201, id: 'corr-3' });
  while (items.length < 100) add({ data: { serverId: items.length } }, { status: 201 });
  expect(items).toHaveLength(100);

  const response = await client.post('/v1/jobs/emails/batch', { jobs: items.map(({ item }) => item) });
  expect(response.status).toBe(200);
  const { results } = response.body;
  expect(results).toHaveLength(100);
  const created: string[] = [];
  results.forEach((result: any, index: number) => {
    const { expected } = items[index]!;
    expect({ index: result.index, status: result.status }).toEqual({ index, status: expected.status });
    if (expected.id !== undefined) expect(result.id).toBe(expected.id);
    if (expected.status < 300) {
      expect(result.job.id).toBe(result.id);
      expect(result.error).toBeUndefined();
    } else {
      expect(result.job).toBeUndefined();
      expect(result.error.code).toBe({ 400: 'invalid_request', 409: 'conflict', 413: 'payload_too_large' }[expected.status as 400 | 409 | 413]);
      const path = `jobs.${index}`;
      if (expected.fields) expect(fieldsOf(result).sort()).toEqual(expected.fields.map((field) => (field ? `${path}.${field}` : path)).sort());
    }
    if (expected.status === 201) created.push(`emails/${result.id}`);
  });
  // An invalid item without a usable id of its own is given none: nothing was enqueued for it.
  expect(results.filter((result: any) => result.status === 400 && result.id === null)).toHaveLength(6);
  expect(await storedJobs()).toEqual([...before, ...created].sort());
});

describe('an invalid envelope enqueues nothing', () => {
  test.each([
    ['not JSON', 400, 'body', '{"jobs": ['],
    ['no jobs field', 400, 'jobs', {}],
    ['jobs not an array', 400, 'jobs', { jobs: { id: 'a' } }],
    ['an empty batch', 400, 'jobs', { jobs: [] }],
    ['101 jobs', 400, 'jobs', { jobs: Array.from({ length: 101 }, (_, i) => ({ id: `j${i}` })) }],
    ['an unknown field beside jobs', 400, 'type', { jobs: [{ id: 'a' }], type: 'other' }],
    ['a key given twice inside an item', 400, 'jobs.0.id', '{"jobs": [{"id": "a", "id": "b"}]}'],
    ['a body over 2 MiB', 413, 'body', { jobs: Array.from({ length: 9 }, (_, i) => ({ id: `j${i}`, data: 'x'.repeat(250 * 1024) })) }],
  ])('%s is %i naming %s', async (_name, status, field, body) => {
    const { api: client } = api();
    const before = await storedJobs();
    const response = await client.post('/v1/jobs/emails/batch', body);
    expect(response.status).toBe(status);
    expect(response.body.error.details.map((detail: { field: string }) => detail.field)).toContain(field);
    expect(await storedJobs()).toEqual(before);
  });

  test('a body that is not declared JSON is 415', async () => {
    const { api: client } = api();
    const response = await client.post('/v1/jobs/emails/batch', JSON.stringify({ jobs: [{ id: 'a' }] }), { headers: { 'content-type': 'text/plain' } });
    expect(response.status).toBe(415);
    expect(await storedJobs()).toEqual([]);
  });

  test('a job type that does not exist is 404', async () => {
    const response = await api().api.post('/v1/jobs/nope/batch', { jobs: [{ id: 'a' }] });
    expect(response.status).toBe(404);
    expect(response.body.error.message).toContain('nope');
  });
});

test('a dependency failure on one item is a 500 for that item alone, and the others are enqueued', async () => {
  const { api: client, queue } = api();
  // DynamoDB refuses the api's write of job `doomed` with an error the SDK does not retry.
  refuseCalls(
    queue.clientsOf('api').base,
    ({ commandName, input }) => commandName === 'PutItemCommand' && (input as { Item?: { pk?: { S?: string } } }).Item?.pk?.S === 'JOB#emails#doomed',
    () =>
      Object.assign(new Error('injected: the table is unavailable at /var/task/node_modules/x.js'), {
        name: 'InternalFailure',
        $fault: 'client',
        $metadata: { httpStatusCode: 400 },
      }),
  );
  const response = await client.post('/v1/jobs/emails/batch', { jobs: [{ id: 'before' }, { id: 'doomed' }, { id: 'after' }] });
  expect(response.status).toBe(200);
  expect(response.body.results.map((r: any) => [r.id, r.status])).toEqual([
    ['before', 201],
    ['doomed', 500],
    ['after', 201],
  ]);
  expect(response.body.results[1].error).toMatchObject({ code: 'internal', message: expect.stringContaining('may or may not') });
  expect(leaksInternals(response.text)).toBe(false);
  expect(response.text).not.toContain('injected');
  expect(await storedJobs()).toEqual(['emails/after', 'emails/before']);
});

test('PUT /v1/jobs/{type}/batch is 400: "batch" is no job id, since POST to that path enqueues a batch', async () => {
  const response = await api().api.put('/v1/jobs/emails/batch', { data: 1 });
  expect(response.status).toBe(400);
  expect(response.body.error.details.map((detail: { field: string }) => detail.field)).toEqual(['id']);
});
