/**
 * What a key may read: for every route the api serves and every kind of scope, a key for type
 * alpha learns nothing of type bravo (its job data, ids, schedule names, operations, correlation keys), in
 * bodies, cursors, counts or errors, and bravo's resource answers exactly like a missing one. The routes are
 * enumerated from the router's own table (functions/api/operations.ts and the dashboard's paths), so a route
 * added without a row here fails this file. Then the findings the matrix grew from, one test each.
 */
import { DeleteCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { registry } from '../../../../functions/worker/handlers/index.js';
import { OPERATIONS, type RouteName } from '../../../../functions/api/operations.js';
import { DASHBOARD_PATHS } from '../../../../functions/shared/public-paths.js';
import { claimJob } from '../../../../lib/queue/attempt/claim.js';
import { requireJobType } from '../../../../lib/queue/catalog/job-types.js';
import { runClaimedJob } from '../../../../lib/queue/attempt/run-batch.js';
import { correlationItemKey, untypedCorrelationItemKey } from '../../../../lib/store/keys.js';
import { lambdaContext } from '../../../../infra/local/http-server.js';
import { buildHttpApiEvent, createTestApi, tableItems, type ApiClient, type HttpMethod } from '../../../support/api.js';
import { createTestQueue, type TestQueue } from '../../../support/queue.js';

const WORKER = { id: 'worker-1', host: 'host-a' };
const AWAITING_TYPE = { target: { kind: 'handler', name: 'await_callback' }, timeout_s: 600, retry: { kind: 'fixed', delay_s: 10 } };

/** What bravo holds, none of which a key for alpha may ever see unless it sent it itself. */
const BRAVO = {
  type: 'bravo',
  secret: 'tango-secret-data',
  jobId: 'j-7f3a',
  doneJobId: 'j-done-3c',
  schedules: ['nightly-a', 'nightly-b', 'nightly-c'],
  correlationKey: 'psp-91',
  throttleKey: 'region-x',
  keyName: 'producer-x',
};
const MISSING_OPERATION_ID = `op_${'0'.repeat(32)}`;

let queue: TestQueue;
let admin: ApiClient;
let bravoOperationId: string;
let bravoKeyId: string;

/**
 * Only for alpha, one key per kind of scope (lib/domain/api-key.ts), and one with every scope on alpha. `admin`
 * and `<action>:*` cover every type: for them there is no other type to keep apart.
 */
const SCOPE_KINDS = {
  read: ['read:alpha'],
  enqueue: ['enqueue:alpha'],
  callback: ['callback:alpha'],
  schedule: ['schedule:alpha'],
  'every scope on alpha': ['read:alpha', 'enqueue:alpha', 'callback:alpha', 'schedule:alpha'],
} as const;
type ScopeKind = keyof typeof SCOPE_KINDS;
/** The presented key of each kind. */
const keys = new Map<ScopeKind, string>();

async function createKey(scopes: readonly string[], name?: string): Promise<{ key: string; id: string }> {
  const created = await admin.post('/v1/keys', { scopes, ...(name ? { name } : {}) });
  expect(created.status).toBe(201);
  return { key: created.body.key, id: created.body.id };
}

/** Claims the job and runs it through the worker: `await_callback` leaves it awaiting its callback at attempt 1. */
async function awaitCallback(type: string, id: string): Promise<void> {
  const jobType = await requireJobType(queue.ctx, type);
  const claimed = await claimJob(queue.ctx, { type, id }, jobType);
  if (claimed.kind !== 'claimed') throw new Error(`could not claim ${type}/${id}`);
  expect(await runClaimedJob(queue.as('worker'), claimed.job, jobType, { registry, worker: WORKER })).toBe('awaiting_callback');
}

beforeAll(async () => {
  queue = await createTestQueue();
  admin = createTestApi(queue);
  for (const type of ['alpha', BRAVO.type]) expect((await admin.put(`/v1/job-types/${type}`, AWAITING_TYPE)).status).toBe(201);

  // Bravo: a job awaiting its callback under a correlation key, one finished (metrics), schedules firing
  // before alpha's, an operation, a key.
  const bravoJob = { data: { secret: BRAVO.secret }, correlation_key: BRAVO.correlationKey, throttle_key: BRAVO.throttleKey };
  expect((await admin.put(`/v1/jobs/bravo/${BRAVO.jobId}`, bravoJob)).status).toBe(201);
  await awaitCallback('bravo', BRAVO.jobId);
  expect((await admin.put(`/v1/jobs/bravo/${BRAVO.doneJobId}`, { data: { secret: BRAVO.secret } })).status).toBe(201);
  await awaitCallback('bravo', BRAVO.doneJobId);
  expect((await admin.post(`/v1/jobs/bravo/${BRAVO.doneJobId}`, { status: 'failed', attempt: 1, retryable: false, result: { secret: BRAVO.secret } })).status).toBe(200);
  for (const name of BRAVO.schedules) {
    expect((await admin.put(`/v1/schedules/${name}`, { cron: '* * * * *', job_type: 'bravo', data: { secret: BRAVO.secret } })).status).toBe(201);
  }
  const operation = await admin.post('/v1/jobs/bravo/bulk', { action: 'retry', status: 'failed' });
  expect(operation.status).toBe(202);
  bravoOperationId = operation.body.id;
  bravoKeyId = (await createKey(['enqueue:bravo'], BRAVO.keyName)).id;

  // Alpha: a job and a schedule, so listings have something of alpha's to show.
  expect((await admin.put('/v1/jobs/alpha/alpha-job', { data: { mine: true } })).status).toBe(201);
  expect((await admin.put('/v1/schedules/alpha-sched', { cron: '0 5 * * *', job_type: 'alpha' })).status).toBe(201);

  for (const [kind, scopes] of Object.entries(SCOPE_KINDS)) keys.set(kind as ScopeKind, (await createKey(scopes)).key);
});
afterAll(async () => {
  await queue?.drop();
});

interface Probe {
  method: HttpMethod;
  path: string;
  body?: unknown;
}

/**
 * How a route is probed. `same-as-missing`: the route aimed at bravo's resource, and at one that does not
 * exist, answer alike (status and body, the two names aside). `listing`: the route names no resource; its
 * answer (every page of it) holds nothing of bravo's. `taken-name`: bravo's resource can only be refused as
 * existing (names are shared by all types); the refusal holds nothing of bravo's.
 */
type Row =
  | { kind: 'same-as-missing'; bravo: Probe; missing: Probe; names: [string, string] }
  | { kind: 'listing'; probe: Probe }
  | { kind: 'taken-name'; probe: Probe };

const onJob = (method: HttpMethod, suffix = '', body?: unknown): Row => ({
  kind: 'same-as-missing',
  bravo: { method, path: `/v1/jobs/bravo/${BRAVO.jobId}${suffix}`, ...(body !== undefined ? { body } : {}) },
  missing: { method, path: `/v1/jobs/bravo/no-such-job${suffix}`, ...(body !== undefined ? { body } : {}) },
  names: [BRAVO.jobId, 'no-such-job'],
});
const onType = (method: HttpMethod, path: (type: string) => string, body?: unknown): Row => ({
  kind: 'same-as-missing',
  bravo: { method, path: path('bravo'), ...(body !== undefined ? { body } : {}) },
  missing: { method, path: path('no-such-type'), ...(body !== undefined ? { body } : {}) },
  names: ['bravo', 'no-such-type'],
});
const onSchedule = (method: HttpMethod, suffix = ''): Row => ({
  kind: 'same-as-missing',
  bravo: { method, path: `/v1/schedules/${BRAVO.schedules[0]}${suffix}` },
  missing: { method, path: `/v1/schedules/no-such-schedule${suffix}` },
  names: [BRAVO.schedules[0]!, 'no-such-schedule'],
});
const listing = (path: string): Row => ({ kind: 'listing', probe: { method: 'GET', path } });

/** One row per route the api's router serves: typed by the operations table, so a new route needs one. */
const ROUTE_ROWS: Record<RouteName, Row> = {
  health: listing('/health'),
  openApi: listing('/openapi.json'),
  listJobTypes: listing('/v1/job-types'),
  getJobType: onType('GET', (type) => `/v1/job-types/${type}`),
  putJobType: onType('PUT', (type) => `/v1/job-types/${type}`, AWAITING_TYPE),
  pauseJobType: onType('POST', (type) => `/v1/job-types/${type}/pause`),
  resumeJobType: onType('POST', (type) => `/v1/job-types/${type}/resume`),
  stats: listing('/v1/stats'),
  metrics: listing('/v1/metrics?minutes=60'),
  enqueueWithServerId: onType('POST', (type) => `/v1/jobs/${type}`, { data: 1, correlation_key: BRAVO.correlationKey }),
  listJobs: onType('GET', (type) => `/v1/jobs/${type}?status=awaiting_callback&limit=1`),
  enqueueBatch: onType('POST', (type) => `/v1/jobs/${type}/batch`, { jobs: [{ id: BRAVO.jobId, data: 1 }] }),
  startBulk: onType('POST', (type) => `/v1/jobs/${type}/bulk`, { action: 'retry', status: 'failed' }),
  enqueueWithId: onJob('PUT', '', { data: 1 }),
  getJob: onJob('GET'),
  callback: onJob('POST', '', { status: 'succeeded', attempt: 1 }),
  cancel: onJob('DELETE'),
  changeJob: onJob('PATCH', '', { priority: 5 }),
  heartbeat: onJob('POST', '/heartbeat', { attempt: 1 }),
  replay: onJob('POST', '/replay'),
  callbackByCorrelationKey: {
    kind: 'same-as-missing',
    bravo: { method: 'POST', path: `/v1/callbacks/${BRAVO.correlationKey}`, body: { status: 'succeeded' } },
    missing: { method: 'POST', path: '/v1/callbacks/no-such-key', body: { status: 'succeeded' } },
    names: [BRAVO.correlationKey, 'no-such-key'],
  },
  getOperation: {
    kind: 'same-as-missing',
    bravo: { method: 'GET', path: '/v1/operations/{bravo operation}' },
    missing: { method: 'GET', path: `/v1/operations/${MISSING_OPERATION_ID}` },
    names: ['{bravo operation}', MISSING_OPERATION_ID],
  },
  jobberQueue: {
    kind: 'same-as-missing',
    bravo: { method: 'POST', path: '/jobber/queue', body: { type: 'bravo', payload: {} } },
    missing: { method: 'POST', path: '/jobber/queue', body: { type: 'no-such-type', payload: {} } },
    names: ['bravo', 'no-such-type'],
  },
  createKey: { kind: 'listing', probe: { method: 'POST', path: '/v1/keys', body: { scopes: ['read:bravo'] } } },
  listKeys: listing('/v1/keys'),
  revokeKey: {
    kind: 'same-as-missing',
    bravo: { method: 'DELETE', path: '/v1/keys/{bravo key}' },
    missing: { method: 'DELETE', path: '/v1/keys/0000000000000000' },
    names: ['{bravo key}', '0000000000000000'],
  },
  listSchedules: listing('/v1/schedules?limit=1'),
  putSchedule: { kind: 'taken-name', probe: { method: 'PUT', path: `/v1/schedules/${BRAVO.schedules[0]}`, body: { cron: '* * * * *', job_type: 'alpha' } } },
  getSchedule: onSchedule('GET'),
  deleteSchedule: onSchedule('DELETE'),
  pauseSchedule: onSchedule('POST', '/pause'),
  resumeSchedule: onSchedule('POST', '/resume'),
};

const DASHBOARD_ROWS: Record<keyof typeof DASHBOARD_PATHS, Row> = {
  page: listing(DASHBOARD_PATHS.page),
  script: listing(DASHBOARD_PATHS.script),
  styles: listing(DASHBOARD_PATHS.styles),
};

/** The ids only known once bravo's resources exist. */
function resolved(probe: Probe): Probe {
  return { ...probe, path: probe.path.replace('{bravo operation}', bravoOperationId).replace('{bravo key}', bravoKeyId) };
}
const resolvedName = (name: string): string => name.replace('{bravo operation}', bravoOperationId).replace('{bravo key}', bravoKeyId);

interface Answer {
  status: number;
  text: string;
  /** The body parsed, when it is JSON. */
  json: any;
}

/** Sends `probe` with `key` as API Gateway would, taking the answer as text: the dashboard's are not JSON. */
async function send(key: string, probe: Probe): Promise<Answer> {
  const event = buildHttpApiEvent(probe.method, probe.path, { token: key, ...(probe.body !== undefined ? { body: probe.body } : {}) });
  const result = await admin.handler(event, lambdaContext(event.requestContext.requestId));
  const text = result.body ?? '';
  const isJson = String(result.headers?.['content-type'] ?? '').startsWith('application/json') && text.length > 0;
  return { status: result.statusCode ?? 200, text, json: isJson ? JSON.parse(text) : undefined };
}

/** The answer's text with every cursor in it decoded next to it, so what a cursor hides is read too. */
function withDecodedCursors(response: Answer): string {
  const cursors = [...response.text.matchAll(/"next_cursor":"([^"]+)"/g)].map(([, cursor = '']) => Buffer.from(cursor, 'base64url').toString('utf8'));
  return [response.text, ...cursors].join('\n');
}

/** Bravo's secrets a response may not hold, except those the request itself sent. */
function leakedSecrets(text: string, probe: Probe): string[] {
  const sent = `${probe.path} ${JSON.stringify(probe.body ?? null)}`;
  const secrets = [BRAVO.type, BRAVO.secret, BRAVO.jobId, BRAVO.doneJobId, ...BRAVO.schedules, BRAVO.correlationKey, BRAVO.throttleKey, BRAVO.keyName, bravoOperationId, bravoKeyId];
  return secrets.filter((secret) => text.includes(secret) && !sent.includes(secret));
}

/** An answer with its request id left out and the resource's name put as `<name>`, to compare two answers. */
function comparable(response: Answer, name: string): unknown {
  return { status: response.status, text: response.text.replaceAll(/"request_id":"[^"]*"/g, '"request_id":null').replaceAll(name, '<name>') };
}

/** Every page of a listing, following its cursors. */
async function everyPage(key: string, probe: Probe): Promise<Answer[]> {
  const pages = [await send(key, probe)];
  for (let cursor = pages[0]!.json?.next_cursor; typeof cursor === 'string' && pages.length < 20; cursor = pages.at(-1)!.json?.next_cursor) {
    pages.push(await send(key, { ...probe, path: `${probe.path}${probe.path.includes('?') ? '&' : '?'}cursor=${encodeURIComponent(cursor)}` }));
  }
  return pages;
}

const bravoItems = async () =>
  (await tableItems(queue)).filter((item) => !String(item.pk).startsWith('KEY#') && JSON.stringify(item).includes('bravo'));

describe('the scope matrix', () => {
  test('has a row for every route the router serves', () => {
    expect(Object.keys(ROUTE_ROWS).sort()).toEqual(OPERATIONS.map((operation) => operation.route).sort());
    expect(Object.keys(DASHBOARD_ROWS).sort()).toEqual(Object.keys(DASHBOARD_PATHS).sort());
  });

  const cases = [...Object.entries(ROUTE_ROWS), ...Object.entries(DASHBOARD_ROWS)].flatMap(([route, row]) =>
    Object.keys(SCOPE_KINDS).map((kind) => [route, kind as ScopeKind, row] as const),
  );

  test.each(cases)('%s with a key of %s scope reads nothing of bravo', async (_route, kind, row) => {
    const key = keys.get(kind)!;
    const before = await bravoItems();
    if (row.kind === 'listing') {
      const probe = resolved(row.probe);
      for (const page of await everyPage(key, probe)) expect(leakedSecrets(withDecodedCursors(page), probe)).toEqual([]);
    } else if (row.kind === 'taken-name') {
      const probe = resolved(row.probe);
      const response = await send(key, probe);
      expect(response.status).toBeGreaterThanOrEqual(400);
      expect(leakedSecrets(response.text, probe)).toEqual([]);
    } else {
      const [bravoName, missingName] = [resolvedName(row.names[0]), row.names[1]];
      const bravo = await send(key, resolved(row.bravo));
      const missing = await send(key, row.missing);
      expect(comparable(bravo, bravoName)).toEqual(comparable(missing, missingName));
      expect(leakedSecrets(withDecodedCursors(bravo), resolved(row.bravo))).toEqual([]);
    }
    expect(await bravoItems()).toEqual(before);
  });

  test('a key that reads alpha still sees alpha on every listing: the matrix is not vacuous', async () => {
    const reader = keys.get('read')!;
    const names = async (path: string) => (await send(reader, { method: 'GET', path })).json.job_types.map((type: { name: string }) => type.name);
    expect(await names('/v1/job-types')).toEqual(['alpha']);
    expect(await names('/v1/stats')).toEqual(['alpha']);
    expect(await names('/v1/metrics?minutes=60')).toEqual(['alpha']);
    const schedules = (await everyPage(reader, { method: 'GET', path: '/v1/schedules?limit=1' })).flatMap((page) => page.json.schedules);
    expect(schedules.map((schedule: { name: string }) => schedule.name)).toEqual(['alpha-sched']);
  });
});

describe('job listings of a lane all types share', () => {
  test("paging alpha's awaiting jobs one at a time gives no cursor that names a bravo job, though their claims share a lane", async () => {
    for (const id of ['lane-1', 'lane-2', 'lane-3']) {
      expect((await admin.put(`/v1/jobs/alpha/${id}`, { data: 1 })).status).toBe(201);
      await awaitCallback('alpha', id);
    }
    const pages = await everyPage(keys.get('read')!, { method: 'GET', path: '/v1/jobs/alpha?status=awaiting_callback&limit=1' });
    expect(pages.flatMap((page) => page.json.jobs.map((job: { id: string }) => job.id))).toEqual(['lane-1', 'lane-2', 'lane-3']);
    for (const page of pages) expect(leakedSecrets(withDecodedCursors(page), { method: 'GET', path: '' })).toEqual([]);
  });
});

describe('schedules and operations of another type (finding 4)', () => {
  test("paging GET /v1/schedules?limit=1 with read:alpha gives no cursor that decodes to another type's schedule or fire time", async () => {
    const pages = await everyPage(keys.get('read')!, { method: 'GET', path: '/v1/schedules?limit=1' });
    const cursors = pages.flatMap((page) => (typeof page.json.next_cursor === 'string' ? [Buffer.from(page.json.next_cursor, 'base64url').toString('utf8')] : []));
    for (const name of BRAVO.schedules) expect(cursors.join('\n')).not.toContain(name);
    expect(pages.flatMap((page) => page.json.schedules.map((schedule: { name: string }) => schedule.name))).toEqual(['alpha-sched']);
  });

  test('GET /v1/schedules/{name} of another type answers exactly like a missing one: 404, no type named', async () => {
    const other = await send(keys.get('read')!, { method: 'GET', path: `/v1/schedules/${BRAVO.schedules[0]}` });
    const missing = await send(keys.get('read')!, { method: 'GET', path: '/v1/schedules/no-such-schedule' });
    expect(other.status).toBe(404);
    expect(comparable(other, BRAVO.schedules[0]!)).toEqual(comparable(missing, 'no-such-schedule'));
    expect(other.text).not.toContain('bravo');
  });

  test('GET /v1/operations/{id} of another type answers exactly like a missing one: 404, no type named', async () => {
    const other = await send(keys.get('read')!, { method: 'GET', path: `/v1/operations/${bravoOperationId}` });
    const missing = await send(keys.get('read')!, { method: 'GET', path: `/v1/operations/${MISSING_OPERATION_ID}` });
    expect(other.status).toBe(404);
    expect(comparable(other, bravoOperationId)).toEqual(comparable(missing, MISSING_OPERATION_ID));
    expect(other.text).not.toContain('bravo');
  });
});

describe('what a key that may not read its type is answered (finding 6)', () => {
  const DATA = { card: 'alpha-card-4242' };
  /** A queued alpha job whose data the enqueue-only key did not send. */
  async function queuedAlphaJob(id: string): Promise<void> {
    expect((await admin.put(`/v1/jobs/alpha/${id}`, { data: DATA, run_after: new Date(queue.clock.nowMs() + 3_600_000).toISOString() })).status).toBe(201);
  }
  const withheld = { data: null, result: null, progress: null, history: [], changes: [], throttle_key: null, correlation_key: null };

  test('PATCH, even one that changes nothing, answers an enqueue-only key without the job data', async () => {
    await queuedAlphaJob('patch-me');
    const response = await send(keys.get('enqueue')!, { method: 'PATCH', path: '/v1/jobs/alpha/patch-me', body: { priority: 100 } });
    expect(response.status).toBe(200);
    expect(response.json).toMatchObject({ id: 'patch-me', status: 'queued', priority: 100, ...withheld });
    expect(response.text).not.toContain(DATA.card);
  });

  test('DELETE answers an enqueue-only key without the job data', async () => {
    await queuedAlphaJob('cancel-me');
    const response = await send(keys.get('enqueue')!, { method: 'DELETE', path: '/v1/jobs/alpha/cancel-me' });
    expect(response.status).toBe(200);
    expect(response.json).toMatchObject({ id: 'cancel-me', status: 'cancelled', ...withheld, cancelled_by: null });
    expect(response.text).not.toContain(DATA.card);
  });

  test('replay answers an enqueue-only key without the job data, which the new job still carries', async () => {
    expect((await admin.put('/v1/jobs/alpha/replay-me', { data: DATA })).status).toBe(201);
    await awaitCallback('alpha', 'replay-me');
    expect((await admin.post('/v1/jobs/alpha/replay-me', { status: 'failed', attempt: 1, retryable: false })).status).toBe(200);
    const response = await send(keys.get('enqueue')!, { method: 'POST', path: '/v1/jobs/alpha/replay-me/replay' });
    expect(response.status).toBe(201);
    expect(response.json).toMatchObject({ status: 'queued', ...withheld });
    expect(response.text).not.toContain(DATA.card);
    expect((await admin.get(`/v1/jobs/alpha/${response.json.id}`)).body.data).toEqual(DATA);
  });

  test('the same routes answer a key that may read the type with the whole job', async () => {
    await queuedAlphaJob('read-me');
    const response = await send(keys.get('every scope on alpha')!, { method: 'PATCH', path: '/v1/jobs/alpha/read-me', body: { priority: 100 } });
    expect(response.json.data).toEqual(DATA);
  });

  test('a status callback answers a callback-only key without the job data', async () => {
    expect((await admin.put('/v1/jobs/alpha/call-me', { data: DATA })).status).toBe(201);
    await awaitCallback('alpha', 'call-me');
    const response = await send(keys.get('callback')!, { method: 'POST', path: '/v1/jobs/alpha/call-me', body: { status: 'succeeded', attempt: 1, result: { ok: true } } });
    expect(response.status).toBe(200);
    expect(response.json).toMatchObject({ status: 'succeeded', ...withheld });
    expect(response.text).not.toContain(DATA.card);
  });
});

describe('what a key that manages schedules but may not read their type is answered', () => {
  test("pausing and resuming answer without the data of the schedule's jobs, nor the job its last fire made", async () => {
    expect((await admin.put('/v1/schedules/alpha-data', { cron: '* * * * *', job_type: 'alpha', data: { card: 'alpha-card-777' }, throttle_key: 'eu' })).status).toBe(201);
    for (const action of ['pause', 'resume']) {
      const response = await send(keys.get('schedule')!, { method: 'POST', path: `/v1/schedules/alpha-data/${action}` });
      expect(response.status).toBe(200);
      expect(response.json).toMatchObject({ name: 'alpha-data', job_type: 'alpha', data: null, throttle_key: null });
      expect(response.text).not.toContain('alpha-card-777');
    }
    const reader = await send(keys.get('every scope on alpha')!, { method: 'POST', path: '/v1/schedules/alpha-data/pause' });
    expect(reader.json.data).toEqual({ card: 'alpha-card-777' });
    expect((await admin.delete('/v1/schedules/alpha-data')).status).toBe(200);
  });
});

describe('correlation keys across types (finding 7)', () => {
  test("a key for alpha cannot squat the correlation key a bravo job will need: bravo's enqueue still succeeds", async () => {
    const farFuture = new Date(queue.clock.nowMs() + 365 * 86_400_000).toISOString();
    const squat = await send(keys.get('enqueue')!, { method: 'PUT', path: '/v1/jobs/alpha/squatter', body: { run_after: farFuture, correlation_key: 'order-5150' } });
    expect(squat.status).toBe(201);
    expect((await admin.put('/v1/jobs/bravo/needs-key', { data: 1, correlation_key: 'order-5150' })).status).toBe(201);
  });

  test('an enqueue is never told which keys another type holds: a key bravo holds is free for alpha', async () => {
    const probe = await send(keys.get('enqueue')!, { method: 'PUT', path: '/v1/jobs/alpha/prober', body: { correlation_key: BRAVO.correlationKey } });
    const unheld = await send(keys.get('enqueue')!, { method: 'PUT', path: '/v1/jobs/alpha/prober-2', body: { correlation_key: 'held-by-nobody' } });
    expect(probe.status).toBe(201);
    expect(unheld.status).toBe(201);
  });

  test('a second unfinished alpha job with a key alpha holds is still 409', async () => {
    expect((await send(keys.get('enqueue')!, { method: 'PUT', path: '/v1/jobs/alpha/holder', body: { correlation_key: 'alpha-only' } })).status).toBe(201);
    expect((await send(keys.get('enqueue')!, { method: 'PUT', path: '/v1/jobs/alpha/second', body: { correlation_key: 'alpha-only' } })).status).toBe(409);
  });

  test('the callback by key completes the holder of a type the key may call back, leaving the other type’s holder', async () => {
    expect((await admin.put('/v1/jobs/alpha/corr-a', { data: 1, correlation_key: 'both-hold' })).status).toBe(201);
    await awaitCallback('alpha', 'corr-a');
    expect((await admin.put('/v1/jobs/bravo/corr-b', { data: 1, correlation_key: 'both-hold' })).status).toBe(201);
    await awaitCallback('bravo', 'corr-b');
    const response = await send(keys.get('callback')!, { method: 'POST', path: '/v1/callbacks/both-hold', body: { status: 'succeeded' } });
    expect(response.status).toBe(200);
    expect(response.json).toMatchObject({ type: 'alpha', id: 'corr-a', status: 'succeeded' });
    expect((await admin.get('/v1/jobs/bravo/corr-b')).body.status).toBe('awaiting_callback');
  });

  test('a key that may call back both holders is 409 naming their types, and changes nothing', async () => {
    expect((await admin.put('/v1/jobs/alpha/twin-a', { data: 1, correlation_key: 'twins' })).status).toBe(201);
    await awaitCallback('alpha', 'twin-a');
    expect((await admin.put('/v1/jobs/bravo/twin-b', { data: 1, correlation_key: 'twins' })).status).toBe(201);
    await awaitCallback('bravo', 'twin-b');
    const response = await admin.post('/v1/callbacks/twins', { status: 'succeeded' });
    expect(response.status).toBe(409);
    expect(response.body.error.message).toContain('alpha, bravo');
    for (const path of ['/v1/jobs/alpha/twin-a', '/v1/jobs/bravo/twin-b']) expect((await admin.get(path)).body.status).toBe('awaiting_callback');
  });
});

describe('correlation pointers written before keys were per type', () => {
  /** An alpha job awaiting its callback under `key`, its pointer as the table held it before: `CORR#<key>` / `CORR`. */
  async function heldTheOldWay(id: string, key: string): Promise<void> {
    expect((await admin.put(`/v1/jobs/alpha/${id}`, { data: 1, correlation_key: key })).status).toBe(201);
    await awaitCallback('alpha', id);
    const typed = correlationItemKey('alpha', key);
    const [pointer] = (await tableItems(queue)).filter((item) => item.pk === typed.pk && item.sk === typed.sk);
    await queue.clients.db.send(new DeleteCommand({ TableName: queue.tableName, Key: typed }));
    await queue.clients.db.send(new PutCommand({ TableName: queue.tableName, Item: { ...pointer, ...untypedCorrelationItemKey(key) } }));
  }

  test('still hold their key: another job of the type is 409, one of another type is not', async () => {
    await heldTheOldWay('legacy-1', 'legacy-key-1');
    expect((await admin.put('/v1/jobs/alpha/legacy-rival', { correlation_key: 'legacy-key-1' })).status).toBe(409);
    expect((await admin.put('/v1/jobs/bravo/legacy-other', { correlation_key: 'legacy-key-1' })).status).toBe(201);
  });

  test('still find their job for the callback by key, which then drops the old pointer and frees the key', async () => {
    await heldTheOldWay('legacy-2', 'legacy-key-2');
    const response = await send(keys.get('callback')!, { method: 'POST', path: '/v1/callbacks/legacy-key-2', body: { status: 'succeeded' } });
    expect(response.status).toBe(200);
    expect(response.json).toMatchObject({ id: 'legacy-2', status: 'succeeded' });
    const old = untypedCorrelationItemKey('legacy-key-2');
    expect((await tableItems(queue)).filter((item) => item.pk === old.pk && item.sk === old.sk)).toEqual([]);
    expect((await admin.put('/v1/jobs/alpha/legacy-next', { correlation_key: 'legacy-key-2' })).status).toBe(201);
  });

  test('are no holder to a key that may not call back their type', async () => {
    await heldTheOldWay('legacy-3', 'legacy-key-3');
    const bravoCaller = (await createKey(['callback:bravo'])).key;
    const response = await send(bravoCaller, { method: 'POST', path: '/v1/callbacks/legacy-key-3', body: { status: 'succeeded' } });
    expect(response.status).toBe(404);
  });
});

/**
 * The matrix above sends keys that hold nothing on bravo, so most of its bravo rows are refused before the
 * route runs. These keys hold a scope on bravo and may act there, but not `read:bravo`: every route that acts
 * on a bravo job or schedule runs for them, and must answer without what the job holds or what its runs said.
 * Each row is run twice, on a resource of its own: with the acting key, and, as the positive control, with a
 * key that also reads bravo, which must be answered those contents (so the row really reached them).
 */
describe('keys that act on bravo but may not read it', () => {
  const RESULT_SECRET = 'bravo-result-secret';
  const CONTENTS = [BRAVO.secret, RESULT_SECRET, BRAVO.throttleKey];
  const QUEUED = { data: { secret: BRAVO.secret }, throttle_key: BRAVO.throttleKey };

  /** A bravo job with data only bravo's readers may see, in the state the row acts on. */
  async function queuedBravoJob(id: string): Promise<void> {
    expect((await admin.put(`/v1/jobs/bravo/${id}`, { ...QUEUED, run_after: new Date(queue.clock.nowMs() + 3_600_000).toISOString() })).status).toBe(201);
  }
  async function awaitingBravoJob(id: string, extra: Record<string, unknown> = {}): Promise<void> {
    expect((await admin.put(`/v1/jobs/bravo/${id}`, { ...QUEUED, ...extra })).status).toBe(201);
    await awaitCallback('bravo', id);
  }
  async function succeededBravoJob(id: string): Promise<void> {
    await awaitingBravoJob(id);
    expect((await admin.post(`/v1/jobs/bravo/${id}`, { status: 'succeeded', attempt: 1, result: { secret: RESULT_SECRET } })).status).toBe(200);
  }

  /** Per route: the scope that lets a key act, and how to make a fresh bravo resource and the request on it. */
  const ROWS: Record<string, { action: 'enqueue' | 'callback' | 'schedule'; probe: (id: string) => Promise<Probe> }> = {
    'PUT the same body again (enqueueWithId)': {
      action: 'enqueue',
      probe: async (id) => {
        await succeededBravoJob(id);
        return { method: 'PUT', path: `/v1/jobs/bravo/${id}`, body: QUEUED };
      },
    },
    'a batch item sent again (enqueueBatch)': {
      action: 'enqueue',
      probe: async (id) => {
        await succeededBravoJob(id);
        return { method: 'POST', path: '/v1/jobs/bravo/batch', body: { jobs: [{ id, ...QUEUED }] } };
      },
    },
    changeJob: {
      action: 'enqueue',
      probe: async (id) => {
        await queuedBravoJob(id);
        return { method: 'PATCH', path: `/v1/jobs/bravo/${id}`, body: { priority: 7 } };
      },
    },
    cancel: {
      action: 'enqueue',
      probe: async (id) => {
        await queuedBravoJob(id);
        return { method: 'DELETE', path: `/v1/jobs/bravo/${id}` };
      },
    },
    replay: {
      action: 'enqueue',
      probe: async (id) => {
        await succeededBravoJob(id);
        return { method: 'POST', path: `/v1/jobs/bravo/${id}/replay` };
      },
    },
    callback: {
      action: 'callback',
      probe: async (id) => {
        await awaitingBravoJob(id);
        return { method: 'POST', path: `/v1/jobs/bravo/${id}`, body: { status: 'failed', attempt: 1 } };
      },
    },
    heartbeat: {
      action: 'callback',
      probe: async (id) => {
        await awaitingBravoJob(id);
        return { method: 'POST', path: `/v1/jobs/bravo/${id}/heartbeat`, body: { attempt: 1 } };
      },
    },
    callbackByCorrelationKey: {
      action: 'callback',
      probe: async (id) => {
        await awaitingBravoJob(id, { correlation_key: `ck-${id}` });
        return { method: 'POST', path: `/v1/callbacks/ck-${id}`, body: { status: 'failed' } };
      },
    },
    pauseSchedule: {
      action: 'schedule',
      probe: async (id) => {
        expect((await admin.put(`/v1/schedules/${id}`, { cron: '0 3 * * *', job_type: 'bravo', ...QUEUED })).status).toBe(201);
        return { method: 'POST', path: `/v1/schedules/${id}/pause` };
      },
    },
  };

  let row = 0;
  test.each(Object.entries(ROWS))('%s answers a key that acts on bravo without read:bravo nothing its job holds', async (_route, { action, probe }) => {
    const actor = (await createKey([`${action}:bravo`, 'read:alpha'])).key;
    const reader = (await createKey([`${action}:bravo`, 'read:bravo'])).key;
    row++;
    const acted = await send(actor, await probe(`acted-${row}`));
    expect(acted.status).toBeLessThan(300);
    expect(CONTENTS.filter((secret) => acted.text.includes(secret))).toEqual([]);
    const control = await send(reader, await probe(`control-${row}`));
    expect(control.status).toBe(acted.status);
    expect(CONTENTS.filter((secret) => control.text.includes(secret))).not.toEqual([]);
  });
});
