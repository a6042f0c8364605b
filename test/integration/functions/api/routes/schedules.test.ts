/** `/v1/schedules` through the authorizer and the api: define, read, list, pause, resume, delete, scopes, bad input. */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { fireDueSchedules } from '../../../../../lib/queue/schedules/fire-schedules.js';
import { listJobTypes } from '../../../../../lib/queue/catalog/job-types.js';
import { createApiClient, createTestApi, tableItems, type ApiClient } from '../../../../support/api.js';
import { createTestQueue, type TestQueue } from '../../../../support/queue.js';

const ECHO_TYPE = { target: { kind: 'handler', name: 'echo' } };
const EVERY_MINUTE = { cron: '* * * * *', job_type: 'emails' };

let queue: TestQueue;
let admin: ApiClient;

beforeAll(async () => {
  queue = await createTestQueue();
  admin = createTestApi(queue);
  for (const type of ['emails', 'invoices']) expect((await admin.put(`/v1/job-types/${type}`, ECHO_TYPE)).status).toBe(201);
});
afterAll(async () => {
  await queue.drop();
});

async function clientWith(...scopes: string[]): Promise<ApiClient> {
  const created = await admin.post('/v1/keys', { scopes });
  expect(created.status).toBe(201);
  return createApiClient(admin.handler, created.body.key);
}

describe('PUT /v1/schedules/{name}', () => {
  test('creates a schedule: 201, UTC and the defaults, the next five fire times', async () => {
    const response = await admin.put('/v1/schedules/created', { cron: '0 5 * * 1-5', tz: 'America/New_York', job_type: 'emails', data: { to: 'ops' } });
    expect(response.status).toBe(201);
    expect(response.body).toMatchObject({
      name: 'created',
      cron: '0 5 * * 1-5',
      tz: 'America/New_York',
      job_type: 'emails',
      data: { to: 'ops' },
      overlap: 'allow',
      catch_up: 'latest',
      paused: false,
      // 2026-11-21 is a Saturday: the next weekday at 05:00 EST is Monday's.
      next_fire_at: '2026-11-23T10:00:00.000Z',
      last_fire: null,
    });
    expect(response.body.next_fires).toEqual([
      '2026-11-23T10:00:00.000Z',
      '2026-11-24T10:00:00.000Z',
      '2026-11-25T10:00:00.000Z',
      '2026-11-26T10:00:00.000Z',
      '2026-11-27T10:00:00.000Z',
    ]);
  });

  test('the same body again is 200 and keeps the next fire time; tz defaults to UTC', async () => {
    const first = await admin.put('/v1/schedules/again', EVERY_MINUTE);
    expect(first.status).toBe(201);
    // Due by now: a repeated PUT must not skip it.
    queue.clock.advance(90_000);
    const again = await admin.put('/v1/schedules/again', EVERY_MINUTE);
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ tz: 'UTC', next_fire_at: first.body.next_fire_at, created_at: first.body.created_at });
  });
});

describe('GET /v1/schedules/{name}', () => {
  test('shows the last fire with the job it made and that job status', async () => {
    expect((await admin.put('/v1/schedules/shown', EVERY_MINUTE)).status).toBe(201);
    queue.clock.advance(61_000);
    await fireDueSchedules(queue.as('poller'), await listJobTypes(queue.ctx));
    const response = await admin.get('/v1/schedules/shown');
    expect(response.status).toBe(200);
    const jobId = response.body.last_fire.job_id as string;
    expect(jobId).toMatch(/^shown@2026-11-21T\d\d:\d\d:00Z$/);
    expect(response.body.last_fire).toMatchObject({ skipped: null, job_status: 'queued' });
    const listed = (await admin.get('/v1/schedules?limit=100')).body.schedules.find((schedule: { name: string }) => schedule.name === 'shown');
    expect(listed.last_fire).toMatchObject({ job_id: jobId, job_status: 'queued' });
    const job = await admin.get(`/v1/jobs/emails/${jobId}`);
    expect(job.status).toBe(200);
    expect(job.body.schedule).toBe('shown');
  });

  test('an unknown schedule is 404', async () => {
    expect((await admin.get('/v1/schedules/nowhere')).status).toBe(404);
  });
});

describe('GET /v1/schedules', () => {
  test('pages through the schedules with a cursor', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: { status: number; body: { schedules: { name: string }[]; next_cursor: string | null } } = await admin.get(
        `/v1/schedules?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      );
      expect(page.status).toBe(200);
      expect(page.body.schedules.length).toBeLessThanOrEqual(2);
      seen.push(...page.body.schedules.map((schedule) => schedule.name));
      cursor = page.body.next_cursor;
    } while (cursor);
    const all = (await admin.get('/v1/schedules?limit=100')).body.schedules.map((schedule: { name: string }) => schedule.name);
    expect(seen.sort()).toEqual(all.sort());
    expect(all.length).toBeGreaterThan(2);
  });

  test('a cursor the API did not return is 400', async () => {
    const response = await admin.get('/v1/schedules?cursor=bm90LWEtY3Vyc29y');
    expect(response.status).toBe(400);
    expect(response.body.error.details).toEqual([{ field: 'cursor', message: 'is not a cursor this API returned' }]);
  });
});

describe('pause, resume, delete', () => {
  test('pause and resume say so; delete removes the schedule', async () => {
    expect((await admin.put('/v1/schedules/paused', EVERY_MINUTE)).status).toBe(201);
    expect((await admin.post('/v1/schedules/paused/pause')).body.paused).toBe(true);
    expect((await admin.get('/v1/schedules/paused')).body.paused).toBe(true);
    expect((await admin.post('/v1/schedules/paused/resume')).body.paused).toBe(false);
    expect((await admin.delete('/v1/schedules/paused')).status).toBe(200);
    expect((await admin.get('/v1/schedules/paused')).status).toBe(404);
    expect((await admin.delete('/v1/schedules/paused')).status).toBe(404);
    expect((await admin.post('/v1/schedules/paused/pause')).status).toBe(404);
  });
});

describe('bad input changes nothing', () => {
  const refused: [string, string, unknown, number, string | undefined][] = [
    ['a cron with four fields', 'bad', { ...EVERY_MINUTE, cron: '* * * *' }, 400, 'cron'],
    ['a cron out of range', 'bad', { ...EVERY_MINUTE, cron: '61 * * * *' }, 400, 'cron'],
    ['a cron that never fires', 'bad', { ...EVERY_MINUTE, cron: '0 0 31 2 *' }, 400, 'cron'],
    ['a huge cron', 'bad', { ...EVERY_MINUTE, cron: `${'1,'.repeat(50_000)}1 * * * *` }, 400, 'cron'],
    ['a nested cron', 'bad', { ...EVERY_MINUTE, cron: { minute: { every: [1, [2, [3]]] } } }, 400, 'cron'],
    ['an unknown zone', 'bad', { ...EVERY_MINUTE, tz: 'Mars/Olympus_Mons' }, 400, 'tz'],
    ['end_at before start_at', 'bad', { ...EVERY_MINUTE, start_at: '2027-01-02T00:00:00Z', end_at: '2027-01-01T00:00:00Z' }, 400, 'end_at'],
    ['a start_at far in the future', 'bad', { ...EVERY_MINUTE, start_at: '9999-12-31T00:00:00Z' }, 400, 'start_at'],
    ['an unknown catch_up', 'bad', { ...EVERY_MINUTE, catch_up: 'sometimes' }, 400, 'catch_up'],
    ['an unknown field', 'bad', { ...EVERY_MINUTE, every: 'minute' }, 400, 'every'],
    ['an unknown job type', 'bad', { ...EVERY_MINUTE, job_type: 'nowhere' }, 404, undefined],
    ['data over 16 KiB', 'bad', { ...EVERY_MINUTE, data: 'x'.repeat(17 * 1024) }, 413, 'data'],
    ['a name with a space', 'a%20b', EVERY_MINUTE, 400, 'name'],
    ['a name with a slash', 'a%2Fb', EVERY_MINUTE, 400, 'name'],
    ['a name with an at sign', 'a%40b', EVERY_MINUTE, 400, 'name'],
    // The URL resolves `..` away: no schedule route is left to match.
    ['a name of dots', '..', EVERY_MINUTE, 404, undefined],
    ['a name in another script', encodeURIComponent('расписание'), EVERY_MINUTE, 400, 'name'],
    ['a name too long', 'n'.repeat(65), EVERY_MINUTE, 400, 'name'],
  ];

  test.each(refused)('%s is refused', async (_, name, body, status, field) => {
    const before = await tableItems(queue);
    const response = await admin.put(`/v1/schedules/${name}`, body);
    expect(response.status).toBe(status);
    if (field !== undefined) expect(response.body.error.details.map((issue: { field: string }) => issue.field)).toContain(field);
    expect(await tableItems(queue)).toEqual(before);
  });
});

describe('scopes', () => {
  test('schedule:<type> manages schedules of that type only', async () => {
    const scheduler = await clientWith('schedule:emails');
    expect((await scheduler.put('/v1/schedules/scoped', EVERY_MINUTE)).status).toBe(201);
    expect((await scheduler.post('/v1/schedules/scoped/pause')).status).toBe(200);
    expect((await scheduler.put('/v1/schedules/scoped-invoices', { ...EVERY_MINUTE, job_type: 'invoices' })).status).toBe(403);
    // Nor may it move a schedule of another type onto its own: the name is taken, by nothing it may see.
    expect((await admin.put('/v1/schedules/invoicing', { ...EVERY_MINUTE, job_type: 'invoices' })).status).toBe(201);
    expect((await scheduler.put('/v1/schedules/invoicing', EVERY_MINUTE)).status).toBe(409);
    expect((await scheduler.delete('/v1/schedules/invoicing')).status).toBe(404);
  });

  test('read:<type> reads schedules of that type, and manages none', async () => {
    expect((await admin.put('/v1/schedules/readable', EVERY_MINUTE)).status).toBe(201);
    const reader = await clientWith('read:emails');
    expect((await reader.get('/v1/schedules/readable')).status).toBe(200);
    expect((await reader.put('/v1/schedules/readable', EVERY_MINUTE)).status).toBe(403);
    expect((await reader.post('/v1/schedules/readable/pause')).status).toBe(403);
    const listed = (await reader.get('/v1/schedules?limit=100')).body.schedules.map((schedule: { job_type: string }) => schedule.job_type);
    expect(new Set(listed)).toEqual(new Set(['emails']));
    const otherReader = await clientWith('read:invoices');
    expect((await otherReader.get('/v1/schedules/readable')).status).toBe(404);
  });

  test('a key with no schedule: or read: scope is refused', async () => {
    const producer = await clientWith('enqueue:emails');
    expect((await producer.put('/v1/schedules/nope', EVERY_MINUTE)).status).toBe(403);
    expect((await producer.get('/v1/schedules')).status).toBe(403);
  });
});
