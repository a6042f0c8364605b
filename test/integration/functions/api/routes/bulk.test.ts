/**
 * `POST /v1/jobs/{type}/bulk` and `GET /v1/operations/{id}`: a bulk retry replays a type's failed or expired jobs,
 * a bulk cancel cancels its queued ones, selected by status, time range and throttle key; the request only records
 * the operation, the sweepers run it page by page, and its progress is read back.
 */
import { beforeEach, describe, expect, test } from 'vitest';
import { createSweeperHandler } from '../../../../../functions/sweeper/app.js';
import { registry as builtinRegistry } from '../../../../../functions/worker/handlers/index.js';
import { BULK_PAGE_SIZE } from '../../../../../lib/domain/bulk.js';
import { runOperationPage } from '../../../../../lib/queue/bulk/run-bulk-operations.js';
import { requireJobType } from '../../../../../lib/queue/catalog/job-types.js';
import { createApiClient, freshApiPerTest, tableItems, type ApiClient } from '../../../../support/api.js';
import { runToEnd, seedFinished, seedQueued } from '../../../../support/bulk-fixtures.js';

const api = freshApiPerTest();
const T0 = Date.parse('2026-11-21T10:00:00.000Z');
const HOUR = 3_600_000;
const iso = (epochMs: number): string => new Date(epochMs).toISOString();
const ECHO = { target: { kind: 'handler', name: 'echo' } };

beforeEach(async () => {
  for (const type of ['emails', 'invoices']) expect((await api().api.put(`/v1/job-types/${type}`, ECHO)).status).toBe(201);
  api().queue.clock.advance(HOUR);
});

const sweeperCtx = () => api().queue.as('sweeper');
const typeOf = (name: string) => requireJobType(api().queue.ctx, name);
const ids = (body: { jobs: { id: string }[] }): string[] => body.jobs.map((job) => job.id).sort();

/** Every job of the type in the status, page after page (a page of the queued lane covers 50 buckets at most). */
async function listed(type: string, status: string, client: ApiClient = api().api): Promise<{ id: string; data: unknown }[]> {
  const jobs: { id: string; data: unknown }[] = [];
  let cursor: string | null = null;
  do {
    const response = await client.get(`/v1/jobs/${type}?status=${status}&limit=100${cursor ? `&cursor=${cursor}` : ''}`);
    expect(response.status).toBe(200);
    jobs.push(...response.body.jobs);
    cursor = response.body.next_cursor;
  } while (cursor !== null);
  return jobs;
}

async function start(type: string, body: unknown, client: ApiClient = api().api) {
  return client.post(`/v1/jobs/${type}/bulk`, body);
}

describe('a bulk retry', () => {
  test('replays each failed job finished in the range once, leaving the originals failed, and says so when done', async () => {
    await seedFinished(api().queue, await typeOf('emails'), [
      { id: 'f1', status: 'failed', finishedAtMs: T0 + 10 * 60_000 },
      { id: 'f2', status: 'failed', finishedAtMs: T0 + 20 * 60_000 },
      { id: 'early', status: 'failed', finishedAtMs: T0 - HOUR },
      { id: 'x1', status: 'expired', finishedAtMs: T0 + 10 * 60_000 },
    ]);
    const started = await start('emails', { action: 'retry', status: 'failed', from: iso(T0) });
    expect(started.status).toBe(202);
    expect(started.body).toMatchObject({ id: expect.stringMatching(/^op_/), type: 'emails', state: 'running', matched: 0, done: 0, to: iso(T0 + HOUR) });
    expect(await listed('emails', 'queued')).toEqual([]);

    await runToEnd(sweeperCtx(), started.body.id);
    const operation = await api().api.get(`/v1/operations/${started.body.id}`);
    expect(operation.body).toMatchObject({ state: 'succeeded', matched: 2, done: 2, skipped: 0, failed: 0, finished_at: iso(T0 + HOUR) });
    const replays = await listed('emails', 'queued');
    expect(replays.map((job) => job.data)).toEqual(expect.arrayContaining([{ id: 'f1' }, { id: 'f2' }]));
    expect(replays).toHaveLength(2);
    expect(ids({ jobs: await listed('emails', 'failed') })).toEqual(['early', 'f1', 'f2']);
  });

  test('of expired jobs with a throttle key replays only those', async () => {
    await seedFinished(api().queue, await typeOf('emails'), [
      { id: 'east', status: 'expired', finishedAtMs: T0, throttleKey: 'east' },
      { id: 'west', status: 'expired', finishedAtMs: T0, throttleKey: 'west' },
      { id: 'failed-east', status: 'failed', finishedAtMs: T0, throttleKey: 'east' },
    ]);
    const started = await start('emails', { action: 'retry', status: 'expired', throttle_key: 'east' });
    await runToEnd(sweeperCtx(), started.body.id);
    expect((await api().api.get(`/v1/operations/${started.body.id}`)).body).toMatchObject({ state: 'succeeded', matched: 1, done: 1 });
    expect((await listed('emails', 'queued')).map((job) => job.data)).toEqual([{ id: 'east' }]);
  });

  test('shows its progress page by page while it runs', async () => {
    const failed = Array.from({ length: BULK_PAGE_SIZE * 2 + 5 }, (_, index) => ({ id: `f${index}`, status: 'failed' as const, finishedAtMs: T0 + index }));
    await seedFinished(api().queue, await typeOf('emails'), failed);
    const { body } = await start('emails', { action: 'retry', status: 'failed' });
    await runOperationPage(sweeperCtx(), body.id);
    expect((await api().api.get(`/v1/operations/${body.id}`)).body).toMatchObject({ state: 'running', pages: 1, matched: BULK_PAGE_SIZE, done: BULK_PAGE_SIZE });
    expect(await runToEnd(sweeperCtx(), body.id)).toBe(2);
    expect((await api().api.get(`/v1/operations/${body.id}`)).body).toMatchObject({ state: 'succeeded', pages: 3, matched: failed.length, done: failed.length });
  });
});

describe('a bulk cancel', () => {
  test('cancels the queued jobs due in the range with the throttle key, and no other', async () => {
    await seedQueued(api().queue.ctx, await typeOf('emails'), [
      { id: 'now-east', throttleKey: 'east' },
      { id: 'tomorrow-east', runAfterMs: T0 + 25 * HOUR, throttleKey: 'east' },
      { id: 'next-week-east', runAfterMs: T0 + 7 * 24 * HOUR, throttleKey: 'east' },
      { id: 'tomorrow-west', runAfterMs: T0 + 25 * HOUR, throttleKey: 'west' },
    ]);
    await seedQueued(api().queue.ctx, await typeOf('invoices'), [{ id: 'tomorrow-east', runAfterMs: T0 + 25 * HOUR, throttleKey: 'east' }]);
    const range = { from: iso(T0 + 2 * HOUR), to: iso(T0 + 2 * 24 * HOUR) };
    const started = await start('emails', { action: 'cancel', status: 'queued', ...range, throttle_key: 'east' });
    expect(started.status).toBe(202);
    await runToEnd(sweeperCtx(), started.body.id);
    expect((await api().api.get(`/v1/operations/${started.body.id}`)).body).toMatchObject({ state: 'succeeded', matched: 1, done: 1 });
    expect(ids({ jobs: await listed('emails', 'cancelled') })).toEqual(['tomorrow-east']);
    expect(ids({ jobs: await listed('emails', 'queued') })).toEqual(['next-week-east', 'now-east', 'tomorrow-west']);
    expect(ids({ jobs: await listed('invoices', 'queued') })).toEqual(['tomorrow-east']);
  });
});

test('a job a bulk cancel cancelled names the operation as who cancelled it', async () => {
  await seedQueued(api().queue.ctx, await typeOf('emails'), [{ id: 'doomed' }]);
  const started = await start('emails', { action: 'cancel', status: 'queued' });
  await runToEnd(sweeperCtx(), started.body.id);
  expect((await api().api.get('/v1/jobs/emails/doomed')).body).toMatchObject({ status: 'cancelled', cancelled_by: started.body.id });
});

test('the sweeper runs every running operation a page at a time between its sweeps', async () => {
  await seedFinished(api().queue, await typeOf('emails'), Array.from({ length: BULK_PAGE_SIZE + 1 }, (_, index) => ({ id: `f${index}`, status: 'failed' as const, finishedAtMs: T0 })));
  await seedQueued(api().queue.ctx, await typeOf('invoices'), [{ id: 'i1' }]);
  const retry = await start('emails', { action: 'retry', status: 'failed' });
  const cancel = await start('invoices', { action: 'cancel', status: 'queued' });
  // No run time: one sweep, then one round of pages.
  const sweep = createSweeperHandler({ ctx: api().queue.as('sweeper'), registry: builtinRegistry });
  await sweep({}, { getRemainingTimeInMillis: () => 0 });
  expect((await api().api.get(`/v1/operations/${retry.body.id}`)).body).toMatchObject({ state: 'running', pages: 1, done: BULK_PAGE_SIZE });
  // The queued lane's first page covers the 50 buckets since the type was made, the job due now beyond them.
  expect((await api().api.get(`/v1/operations/${cancel.body.id}`)).body).toMatchObject({ state: 'running', pages: 1, done: 0 });
  await sweep({}, { getRemainingTimeInMillis: () => 0 });
  expect((await api().api.get(`/v1/operations/${retry.body.id}`)).body).toMatchObject({ state: 'succeeded', done: BULK_PAGE_SIZE + 1 });
  expect((await api().api.get(`/v1/operations/${cancel.body.id}`)).body).toMatchObject({ state: 'succeeded', done: 1 });
});

test('a bulk cancel with to stops at the first job due after it rather than walking the rest of the lane', async () => {
  const later = Array.from({ length: BULK_PAGE_SIZE * 2 }, (_, index) => ({ id: `later${index}`, runAfterMs: T0 + 3 * HOUR + index }));
  await seedQueued(api().queue.ctx, await typeOf('emails'), [{ id: 'soon', runAfterMs: T0 + 2 * HOUR }, ...later]);
  const bounded = await start('emails', { action: 'cancel', status: 'queued', to: iso(T0 + 2 * HOUR) });
  await runToEnd(sweeperCtx(), bounded.body.id);
  // The same walk without to, selecting nothing, lists every later job.
  const whole = await start('emails', { action: 'cancel', status: 'queued', throttle_key: 'no-such-key' });
  await runToEnd(sweeperCtx(), whole.body.id);
  const [boundedOperation, wholeOperation] = await Promise.all([bounded, whole].map(async ({ body }) => (await api().api.get(`/v1/operations/${body.id}`)).body));
  expect(boundedOperation).toMatchObject({ state: 'succeeded', matched: 1, done: 1 });
  expect(wholeOperation).toMatchObject({ state: 'succeeded', matched: 0 });
  expect(boundedOperation.pages).toBeLessThan(wholeOperation.pages);
  expect(ids({ jobs: await listed('emails', 'cancelled') })).toEqual(['soon']);
});

describe('starting the same operation again', () => {
  test('while it runs or after it ended answers 200 with the same operation and replays nothing twice', async () => {
    await seedFinished(api().queue, await typeOf('emails'), [{ id: 'f1', status: 'failed', finishedAtMs: T0 }]);
    const body = { action: 'retry', status: 'failed', from: '2026-11-21T09:00:00Z' };
    const first = await start('emails', body);
    // The same instant written in another offset is the same request.
    const again = await start('emails', { ...body, from: '2026-11-21T10:00:00+01:00' });
    expect([first.status, again.status]).toEqual([202, 200]);
    expect(again.body.id).toBe(first.body.id);
    await runToEnd(sweeperCtx(), first.body.id);
    const afterEnd = await start('emails', body);
    expect(afterEnd.status).toBe(200);
    expect(afterEnd.body).toMatchObject({ id: first.body.id, state: 'succeeded', done: 1 });
    await runToEnd(sweeperCtx(), first.body.id);
    expect(await listed('emails', 'queued')).toHaveLength(1);
  });

  test('with another range is another operation', async () => {
    const first = await start('emails', { action: 'retry', status: 'failed' });
    const other = await start('emails', { action: 'retry', status: 'failed', to: iso(T0) });
    expect(other.status).toBe(202);
    expect(other.body.id).not.toBe(first.body.id);
  });
});

describe('bad requests change nothing', () => {
  test.each([
    { name: 'an unknown field', body: { action: 'retry', status: 'failed', limit: 5 }, field: 'limit' },
    { name: 'no action', body: { status: 'failed' }, field: 'action' },
    { name: 'an unknown action', body: { action: 'delete', status: 'failed' }, field: 'action' },
    { name: 'a retry of queued jobs', body: { action: 'retry', status: 'queued' }, field: 'status' },
    { name: 'a cancel of failed jobs', body: { action: 'cancel', status: 'failed' }, field: 'status' },
    { name: 'a retry of succeeded jobs', body: { action: 'retry', status: 'succeeded' }, field: 'status' },
    { name: 'from after to', body: { action: 'retry', status: 'failed', from: '2026-11-22T00:00:00Z', to: '2026-11-21T00:00:00Z' }, field: 'from' },
    { name: 'a date without an offset', body: { action: 'cancel', status: 'queued', to: '2026-11-21T00:00:00' }, field: 'to' },
    { name: 'a date before 1970', body: { action: 'cancel', status: 'queued', from: '1969-12-31T23:59:59Z' }, field: 'from' },
    { name: 'an empty throttle key', body: { action: 'cancel', status: 'queued', throttle_key: '' }, field: 'throttle_key' },
  ])('$name is 400 naming $field', async ({ body, field }) => {
    const before = await tableItems(api().queue);
    const response = await start('emails', body);
    expect(response.status).toBe(400);
    expect(response.body.error.details.map((detail: { field: string }) => detail.field)).toContain(field);
    expect(await tableItems(api().queue)).toEqual(before);
  });

  test('a body that is not JSON is 415, an unknown type 404', async () => {
    const before = await tableItems(api().queue);
    expect((await api().api.post('/v1/jobs/emails/bulk', 'action=retry', { headers: { 'content-type': 'text/plain' } })).status).toBe(415);
    expect((await start('parcels', { action: 'retry', status: 'failed' })).status).toBe(404);
    expect(await tableItems(api().queue)).toEqual(before);
  });

  test('an operation id of the wrong shape is 400 naming id, an unknown one 404', async () => {
    expect((await api().api.get('/v1/operations/nope')).body.error.details[0].field).toBe('id');
    expect((await api().api.get(`/v1/operations/op_${'0'.repeat(32)}`)).status).toBe(404);
  });

  test('a job may not take the id bulk: its callbacks would reach the bulk route', async () => {
    const response = await api().api.put('/v1/jobs/emails/bulk', { data: 1 });
    expect(response.status).toBe(400);
    expect(response.body.error.details[0].field).toBe('id');
  });
});

describe('ranges of any size', () => {
  test('from 1970 to 2100 is accepted and paged from the lane cursor, not walked bucket by bucket', async () => {
    const queued = Array.from({ length: BULK_PAGE_SIZE + 3 }, (_, index) => ({ id: `q${index}`, runAfterMs: T0 + HOUR + index * 60_000 }));
    await seedQueued(api().queue.ctx, await typeOf('emails'), queued);
    const started = await start('emails', { action: 'cancel', status: 'queued', from: '1970-01-01T00:00:00Z', to: '2100-01-01T00:00:00Z' });
    expect(started.status).toBe(202);
    expect(await runToEnd(sweeperCtx(), started.body.id, 20)).toBeGreaterThan(1);
    expect((await api().api.get(`/v1/operations/${started.body.id}`)).body).toMatchObject({ state: 'succeeded', matched: queued.length, done: queued.length });
  });
});

describe('scopes', () => {
  async function clientWith(...scopes: string[]): Promise<ApiClient> {
    const created = await api().api.post('/v1/keys', { scopes });
    expect(created.status).toBe(201);
    return createApiClient(api().api.handler, created.body.key);
  }

  test('a key scoped to one type starts operations on that type only, and they touch only its jobs', async () => {
    for (const type of ['emails', 'invoices']) await seedQueued(api().queue.ctx, await typeOf(type), [{ id: 'j1' }, { id: 'j2' }]);
    const emailsOnly = await clientWith('enqueue:emails', 'read:emails');
    expect((await start('invoices', { action: 'cancel', status: 'queued' }, emailsOnly)).status).toBe(403);
    const started = await start('emails', { action: 'cancel', status: 'queued' }, emailsOnly);
    expect(started.status).toBe(202);
    await runToEnd(sweeperCtx(), started.body.id);
    expect((await emailsOnly.get(`/v1/operations/${started.body.id}`)).body).toMatchObject({ state: 'succeeded', done: 2, type: 'emails' });
    expect(await listed('emails', 'queued')).toEqual([]);
    expect(ids({ jobs: await listed('invoices', 'queued') })).toEqual(['j1', 'j2']);
  });

  test("reading an operation needs read scope on its type; to a key with no scope on it, it is missing", async () => {
    const started = await start('emails', { action: 'cancel', status: 'queued' });
    const invoicesReader = await clientWith('read:invoices');
    const response = await invoicesReader.get(`/v1/operations/${started.body.id}`);
    expect(response.status).toBe(404);
    expect(response.text).not.toContain('emails');
    const emailsProducer = await clientWith('enqueue:emails', 'read:invoices');
    const forbidden = await emailsProducer.get(`/v1/operations/${started.body.id}`);
    expect(forbidden.status).toBe(403);
    expect(forbidden.body.error.message).toContain('read:emails');
  });
});
