/**
 * Holes found past the scope matrix and the hostile edges, one test each: a
 * repeated enqueue that answered what the key may not read, cursors forged to a bucket or an index key
 * the API never wrote, a client job standing in for a schedule's fire, credentials in target URLs the name list
 * missed, names that are not well-formed UTF-16, and a schedule change checked on an earlier read than it writes over.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { registry } from '../../../../functions/worker/handlers/index.js';
import { claimJob } from '../../../../lib/queue/attempt/claim.js';
import { ForbiddenError, NotFoundError } from '../../../../lib/domain/errors.js';
import { enqueueJob } from '../../../../lib/queue/enqueue/enqueue.js';
import { fireDueSchedules } from '../../../../lib/queue/schedules/fire-schedules.js';
import { putJobType, requireJobType } from '../../../../lib/queue/catalog/job-types.js';
import { deleteSchedule, putSchedule, setSchedulePaused } from '../../../../lib/queue/schedules/manage-schedules.js';
import { runClaimedJob } from '../../../../lib/queue/attempt/run-batch.js';
import { parseJobTypeDefinition } from '../../../../lib/wire/job-types.js';
import { parseWith } from '../../../../lib/wire/parse.js';
import { scheduleDefinitionFromInput, scheduleInputSchema } from '../../../../lib/wire/schedules.js';
import { createApiClient, createTestApi, type ApiClient } from '../../../support/api.js';
import { createTestQueue, type TestQueue } from '../../../support/queue.js';

const WORKER = { id: 'worker-1', host: 'host-a' };
const AWAITING_TYPE = { target: { kind: 'handler', name: 'await_callback' }, timeout_s: 600, retry: { kind: 'fixed', delay_s: 10 } };
const SECRET = { card: 'alpha-card-9911' };

let queue: TestQueue;
let admin: ApiClient;

async function clientWith(scopes: readonly string[]): Promise<ApiClient> {
  const created = await admin.post('/v1/keys', { scopes });
  expect(created.status).toBe(201);
  return createApiClient(admin.handler, created.body.key);
}

/** Claims the job and runs it through the worker: `await_callback` leaves it awaiting its callback at attempt 1. */
async function awaitCallback(type: string, id: string): Promise<void> {
  const jobType = await requireJobType(queue.ctx, type);
  const claimed = await claimJob(queue.ctx, { type, id }, jobType);
  if (claimed.kind !== 'claimed') throw new Error(`could not claim ${type}/${id}`);
  expect(await runClaimedJob(queue.as('worker'), claimed.job, jobType, { registry, worker: WORKER })).toBe('awaiting_callback');
}

/** An alpha job that ran and succeeded with a result, its history and progress what its run said. */
async function succeededAlphaJob(id: string, data: unknown): Promise<void> {
  expect((await admin.put(`/v1/jobs/alpha/${id}`, { data })).status).toBe(201);
  await awaitCallback('alpha', id);
  expect((await admin.post(`/v1/jobs/alpha/${id}`, { status: 'succeeded', attempt: 1, result: SECRET })).status).toBe(200);
}

const cursorOf = (position: unknown): string => Buffer.from(JSON.stringify(position), 'utf8').toString('base64url');

beforeAll(async () => {
  queue = await createTestQueue();
  admin = createTestApi(queue);
  expect((await admin.put('/v1/job-types/alpha', AWAITING_TYPE)).status).toBe(201);
});
afterAll(async () => {
  await queue?.drop();
});

describe('a repeated enqueue answers what the key may read', () => {
  const withheld = { data: null, result: null, progress: null, history: [], changes: [], throttle_key: null, correlation_key: null };

  test('PUT of the same body again answers an enqueue-only key 200 without the result and history of the job that ran', async () => {
    await succeededAlphaJob('ran-once', { q: 1 });
    const enqueuer = await clientWith(['enqueue:alpha']);
    const response = await enqueuer.put('/v1/jobs/alpha/ran-once', { data: { q: 1 } });
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ id: 'ran-once', status: 'succeeded', ...withheld });
    expect(response.text).not.toContain(SECRET.card);
  });

  test('a batch item sent again answers an enqueue-only key 200 without the result and history of the job that ran', async () => {
    await succeededAlphaJob('ran-in-batch', { q: 2 });
    const enqueuer = await clientWith(['enqueue:alpha']);
    const response = await enqueuer.post('/v1/jobs/alpha/batch', { jobs: [{ id: 'ran-in-batch', data: { q: 2 } }] });
    expect(response.status).toBe(200);
    expect(response.body.results[0]).toMatchObject({ status: 200, job: { id: 'ran-in-batch', status: 'succeeded', ...withheld } });
    expect(response.text).not.toContain(SECRET.card);
  });

  test('a new job is answered 201 with the data the enqueue-only key sent', async () => {
    const enqueuer = await clientWith(['enqueue:alpha']);
    const response = await enqueuer.put('/v1/jobs/alpha/fresh-one', { data: { mine: 7 } });
    expect(response.status).toBe(201);
    expect(response.body.data).toEqual({ mine: 7 });
  });

  test('a key that may read the type is answered the repeated job whole', async () => {
    await succeededAlphaJob('ran-for-reader', { q: 3 });
    const reader = await clientWith(['enqueue:alpha', 'read:alpha']);
    const response = await reader.put('/v1/jobs/alpha/ran-for-reader', { data: { q: 3 } });
    expect(response.status).toBe(200);
    expect(response.body.result).toEqual(SECRET);
  });
});

describe('forged cursors are a 400 naming cursor', () => {
  let reader: ApiClient;
  beforeAll(async () => {
    reader = await clientWith(['read:alpha']);
  });

  /** The lane bucket of now, where the cursors of alpha's queued jobs due now lie. */
  const nowBucket = () => Math.floor(queue.clock.nowMs() / queue.ctx.settings.bucketMs);

  test.each([
    ['a bucket far before the epoch', () => ({ status: 'queued', bucket: -1_099_511_627_776, sortKey: '' })],
    ['a bucket before the type was created', () => ({ status: 'queued', bucket: nowBucket() - 20_000_000, sortKey: '' })],
    ['a bucket beyond the latest time the API takes', () => ({ status: 'queued', bucket: Number.MAX_SAFE_INTEGER, sortKey: '' })],
    ['a lane cursor without a bucket', () => ({ status: 'queued', sortKey: '' })],
    ['a sort key the index never holds', () => ({ status: 'queued', bucket: nowBucket(), sortKey: 'not-a-sort-key' })],
    ['a cursor that is not an object', () => 'queued'],
  ])('a job listing cursor with %s', async (_case, position) => {
    const response = await reader.get(`/v1/jobs/alpha?status=queued&limit=1&cursor=${cursorOf(position())}`);
    expect(response.status).toBe(400);
    expect(response.body.error.details).toEqual([expect.objectContaining({ field: 'cursor' })]);
  });

  test('a finished listing cursor carrying a bucket is refused', async () => {
    const response = await reader.get(`/v1/jobs/alpha?status=cancelled&cursor=${cursorOf({ status: 'cancelled', bucket: 0, sortKey: '' })}`);
    expect(response.status).toBe(400);
    expect(response.body.error.details[0].field).toBe('cursor');
  });

  test.each([
    ['empty index key and name', { gsi1sk: '', name: '' }],
    ['a name no schedule may have', { gsi1sk: 'PAUSED#../x', name: '../x' }],
    ['an index key of another name', { gsi1sk: 'PAUSED#other', name: 'nightly' }],
    ['an index key of no known form', { gsi1sk: 'SOON#nightly', name: 'nightly' }],
  ])('a schedule listing cursor with %s', async (_case, position) => {
    const response = await reader.get(`/v1/schedules?cursor=${cursorOf(position)}`);
    expect(response.status).toBe(400);
    expect(response.body.error.details).toEqual([expect.objectContaining({ field: 'cursor' })]);
  });

  test('the cursors the API returns still page on: queued jobs due next year, and schedules', async () => {
    const nextYear = new Date(queue.clock.nowMs() + 365 * 86_400_000).toISOString();
    for (const id of ['later-1', 'later-2']) expect((await admin.put(`/v1/jobs/alpha/${id}`, { run_after: nextYear })).status).toBe(201);
    const ids: string[] = [];
    for (let cursor: string | null = '', pages = 0; cursor !== null && pages < 10; pages++) {
      const page = await reader.get(`/v1/jobs/alpha?status=queued&limit=1${cursor ? `&cursor=${cursor}` : ''}`);
      expect(page.status).toBe(200);
      ids.push(...page.body.jobs.map((job: { id: string }) => job.id));
      cursor = page.body.next_cursor;
    }
    expect(ids.filter((id) => id.startsWith('later-'))).toEqual(['later-1', 'later-2']);
    for (const name of ['paged-a', 'paged-b']) expect((await admin.put(`/v1/schedules/${name}`, { cron: '0 4 * * *', job_type: 'alpha' })).status).toBe(201);
    expect((await admin.post('/v1/schedules/paged-b/pause')).status).toBe(200);
    const page = await reader.get('/v1/schedules?limit=1');
    const rest = await reader.get(`/v1/schedules?limit=1&cursor=${page.body.next_cursor}`);
    expect(rest.status).toBe(200);
    expect([...page.body.schedules, ...rest.body.schedules].map((schedule: { name: string }) => schedule.name)).toEqual(['paged-a', 'paged-b']);
    for (const name of ['paged-a', 'paged-b']) expect((await admin.delete(`/v1/schedules/${name}`)).status).toBe(200);
  });
});

describe("a schedule's fires are its own", () => {
  test("an enqueue with an id of a schedule's form is 400 naming id, and makes no job", async () => {
    expect((await admin.put('/v1/schedules/nightly', { cron: '0 3 * * *', job_type: 'alpha' })).status).toBe(201);
    const enqueuer = await clientWith(['enqueue:alpha']);
    const response = await enqueuer.put('/v1/jobs/alpha/nightly@2026-11-22T03:00:00Z', { data: { attacker: true } });
    expect(response.status).toBe(400);
    expect(response.body.error.details[0].field).toBe('id');
    expect((await admin.get('/v1/jobs/alpha/nightly@2026-11-22T03:00:00Z')).status).toBe(404);
    expect((await admin.delete('/v1/schedules/nightly')).status).toBe(200);
  });

  test("a batch item with an id of a schedule's form is 400 naming its id", async () => {
    const response = await admin.post('/v1/jobs/alpha/batch', { jobs: [{ id: 'nightly@2026-11-22T03:00:00Z', data: 1 }] });
    expect(response.body.results[0]).toMatchObject({ status: 400, error: { details: [expect.objectContaining({ field: 'jobs.0.id' })] } });
  });

  test("a job the schedule did not make under its fire's id (enqueued before such ids were refused) is not taken for the fire's: the fire is skipped, saying why", async () => {
    expect((await admin.put('/v1/schedules/hourly', { cron: '0 * * * *', job_type: 'alpha' })).status).toBe(201);
    const jobType = await requireJobType(queue.ctx, 'alpha');
    const squatted = 'hourly@2026-11-21T11:00:00Z';
    expect((await enqueueJob(queue.ctx, jobType, squatted, { data: { attacker: true }, priority: 100, weight: 1 })).created).toBe(true);
    queue.clock.set(Date.parse('2026-11-21T11:00:00.500Z'));
    await fireDueSchedules(queue.as('poller'), [jobType]);
    const schedule = (await admin.get('/v1/schedules/hourly')).body;
    expect(schedule.last_fire).toMatchObject({ job_id: null, skipped: expect.stringContaining('was not made by this schedule') });
    expect((await admin.get(`/v1/jobs/alpha/${squatted}`)).body.data).toEqual({ attacker: true });
    // The job still answers to its id: read and cancelled.
    expect((await admin.delete(`/v1/jobs/alpha/${squatted}`)).status).toBe(200);
    expect((await admin.delete('/v1/schedules/hourly')).status).toBe(200);
  });
});

describe('names that are not well-formed UTF-16 are refused where they would name a counter', () => {
  /** `\ud800` escaped in the JSON text, so the body is valid UTF-8 and the string parsed from it holds a lone surrogate. */
  const LONE = 'east-\\ud800';

  test.each([
    ['PUT /v1/jobs/alpha/{id}', 'PUT', '/v1/jobs/alpha/lone-key', `{"data": 1, "throttle_key": "${LONE}"}`, 'throttle_key'],
    ['a batch item', 'POST', '/v1/jobs/alpha/batch', `{"jobs": [{"id": "lone-batch", "throttle_key": "${LONE}"}]}`, 'jobs.0.throttle_key'],
    ['PUT /v1/schedules/{name}', 'PUT', '/v1/schedules/lone-sched', `{"cron": "0 3 * * *", "job_type": "alpha", "throttle_key": "${LONE}"}`, 'throttle_key'],
    ['POST /v1/jobs/{type}/bulk', 'POST', '/v1/jobs/alpha/bulk', `{"action": "cancel", "status": "queued", "throttle_key": "${LONE}"}`, 'throttle_key'],
    ['a limit of PUT /v1/job-types/{name}', 'PUT', '/v1/job-types/lone-type', `{"target": {"kind": "handler", "name": "echo"}, "throttle": {"key_field": "r", "limits": {"${LONE}": {"limit": 1}}}}`, 'throttle.limits.east-\ud800'],
  ] as const)('a throttle key with an unpaired surrogate in %s is 400 naming it', async (_route, method, path, body, field) => {
    const response = await admin.request(method, path, { body });
    const error = method === 'POST' && path.endsWith('/batch') ? response.body.results[0].error : response.body.error;
    expect(method === 'POST' && path.endsWith('/batch') ? response.body.results[0].status : response.status).toBe(400);
    expect(error.details).toEqual([expect.objectContaining({ field })]);
  });

  test('the same key with its surrogate paired is taken', async () => {
    const response = await admin.request('PUT', '/v1/jobs/alpha/paired-key', { body: '{"data": 1, "throttle_key": "east-\\ud83d\\ude00"}' });
    expect(response.status).toBe(201);
    expect(response.body.throttle_key).toBe('east-\u{1F600}');
  });

  test("a value with an unpaired surrogate at the type's key_field gives the job no throttle key, as a value too long does", async () => {
    const body = { target: { kind: 'handler', name: 'echo' }, throttle: { key_field: 'region', limits: { east: { limit: 1 } } } };
    expect((await admin.put('/v1/job-types/keyed', body)).status).toBe(201);
    const response = await admin.request('PUT', '/v1/jobs/keyed/lone-data', { body: `{"data": {"region": "${LONE}"}}` });
    expect(response.status).toBe(201);
    expect(response.body.throttle_key).toBeNull();
  });
});

describe('credentials in target URLs a name list misses', () => {
  test.each([
    ['an S3 presigned credential', 'https://bucket.s3.amazonaws.com/hook?X-Amz-Credential=AKIA%2F20261121&X-Amz-Signature=abc'],
    ['an S3 session token', 'https://bucket.s3.amazonaws.com/hook?X-Amz-Security-Token=tok'],
    ['an Azure function code', 'https://fn.azurewebsites.net/api/hook?code=azure-secret'],
    ['a GitLab private token', 'https://gitlab.example.com/api/v4/hook?private_token=glpat-1'],
    ['a JWT', 'https://example.com/hook?jwt=eyJhbGciOi'],
    ['a session id', 'https://example.com/hook?session_id=s-1'],
    ['a fragment', 'https://example.com/hook#access_token=t-1'],
  ])('%s is refused when a type is defined, 400 naming target.url', async (_case, url) => {
    const response = await admin.put('/v1/job-types/creds', { target: { kind: 'http', url } });
    expect(response.status).toBe(400);
    expect(response.body.error.details).toEqual([expect.objectContaining({ field: 'target.url' })]);
    expect((await admin.get('/v1/job-types/creds')).status).toBe(404);
  });

  test('a key that reads the type sees every query value hidden, the admin sees them as given', async () => {
    const url = 'https://example.com/hooks/run?region=eu&ticket=t-4477';
    expect((await admin.put('/v1/job-types/hooked', { target: { kind: 'http', url } })).status).toBe(201);
    const reader = await clientWith(['read:hooked']);
    expect((await reader.get('/v1/job-types/hooked')).body.target.url).toBe('https://example.com/hooks/run?region=***&ticket=***');
    const listed = (await reader.get('/v1/job-types')).body.job_types.find((type: { name: string }) => type.name === 'hooked');
    expect(listed.target.url).toBe('https://example.com/hooks/run?region=***&ticket=***');
    expect((await admin.get('/v1/job-types/hooked')).body.target.url).toBe(url);
  });

  test('a type stored with a presigned URL and a fragment before they were refused shows neither to a reader nor to the admin', async () => {
    const url = 'https://bucket.s3.amazonaws.com/out?X-Amz-Signature=sig-99&part=2#access_token=frag-77';
    await putJobType(queue.ctx, 'presigned', parseJobTypeDefinition({ target: { kind: 'http', url } }));
    const reader = await clientWith(['read:presigned']);
    expect((await reader.get('/v1/job-types/presigned')).body.target.url).toBe('https://bucket.s3.amazonaws.com/out?X-Amz-Signature=***&part=***#***');
    expect((await admin.get('/v1/job-types/presigned')).body.target.url).toBe('https://bucket.s3.amazonaws.com/out?X-Amz-Signature=***&part=2#***');
  });
});

/**
 * A schedule's route checks the caller's scope on the schedule's type, then changes it. Between the two, a PUT
 * by another key may move it to a type the caller holds nothing on; the change must check again on what it
 * writes over. Here the move has happened after the route's check: the check the route passes along still refuses.
 */
describe('a schedule moved to another type between the route’s check and its write (review, lower priority)', () => {
  const onlyAlpha = (existing: { jobType: string }): void => {
    if (existing.jobType !== 'alpha') throw new ForbiddenError(`this route needs scope schedule:${existing.jobType}`);
  };

  async function movedToOther(name: string): Promise<void> {
    expect((await admin.put('/v1/job-types/other', AWAITING_TYPE)).status).toBeLessThan(300);
    expect((await admin.put(`/v1/schedules/${name}`, { cron: '0 6 * * *', job_type: 'alpha' })).status).toBe(201);
    expect((await admin.put(`/v1/schedules/${name}`, { cron: '0 6 * * *', job_type: 'other' })).status).toBe(200);
  }

  test('a pause checked on the alpha schedule does not pause it as moved', async () => {
    await movedToOther('moved-pause');
    await expect(setSchedulePaused(queue.ctx, 'moved-pause', true, onlyAlpha)).rejects.toBeInstanceOf(ForbiddenError);
    expect((await admin.get('/v1/schedules/moved-pause')).body.paused).toBe(false);
  });

  test('a replacement checked on the alpha schedule does not replace it as moved', async () => {
    await movedToOther('moved-put');
    const definition = scheduleDefinitionFromInput(parseWith(scheduleInputSchema, { cron: '0 7 * * *', job_type: 'alpha' }));
    await expect(putSchedule(queue.ctx, 'moved-put', definition, await requireJobType(queue.ctx, 'alpha'), onlyAlpha)).rejects.toBeInstanceOf(ForbiddenError);
    expect((await admin.get('/v1/schedules/moved-put')).body).toMatchObject({ job_type: 'other', cron: '0 6 * * *' });
  });

  test('a delete checked on the alpha schedule is a 404 to it once moved, and the schedule stays', async () => {
    await movedToOther('moved-delete');
    await expect(deleteSchedule(queue.ctx, 'moved-delete', 'alpha')).rejects.toBeInstanceOf(NotFoundError);
    expect((await admin.get('/v1/schedules/moved-delete')).body.job_type).toBe('other');
  });
});
