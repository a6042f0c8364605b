/**
 * The api answers as its OpenAPI document says: every operation, exercised on DynamoDB Local, answers each
 * success status the document lists with a body the document's schema for it accepts, and its errors with the
 * error body. Every object the document describes an answer with is closed, so a field the api adds and the
 * document lacks fails here.
 */
import { beforeEach, expect, test, vi } from 'vitest';
import { openApiDocument } from '../../../../functions/api/openapi.js';
import { OPERATIONS, type Operation, type RouteName } from '../../../../functions/api/operations.js';
import { registry } from '../../../../functions/worker/handlers/index.js';
import { claimJob } from '../../../../lib/queue/attempt/claim.js';
import { fireDueSchedules } from '../../../../lib/queue/schedules/fire-schedules.js';
import { listJobTypes, requireJobType } from '../../../../lib/queue/catalog/job-types.js';
import { recordRosterEntry } from '../../../../lib/queue/telemetry/roster.js';
import { runClaimedJob } from '../../../../lib/queue/attempt/run-batch.js';
import { createApiClient, createTestApi, freshApiPerTest, type ApiResponse } from '../../../support/api.js';
import { documentedAnswers } from '../../../support/documented-answers.js';

const fixture = freshApiPerTest();
const conformance = documentedAnswers();
const api = () => fixture().api;

/** A type that fills what an answer may leave null: a concurrency limit, throttle limits, a retry with retry_on. */
const DOCS_TYPE = {
  target: { kind: 'handler', name: 'await_callback' },
  concurrency: 5,
  throttle: { key_field: 'customer', limits: { '*': { limit: 2 }, vip: { share: 0.5 } } },
  retry: { kind: 'exponential', base_s: 1, max_s: 60, retry_on: ['Timeout', 503] },
};
/** A job that fills every field an enqueue may set. */
const FULL_JOB = {
  data: { customer: 'acme', lines: [1, 2] },
  run_after: '2026-11-21T10:00:00Z',
  expires_at: '2026-11-22T10:00:00Z',
  priority: 10,
  weight: 2,
  time_windows: [{ start: '00:00', end: '23:59', tz: 'UTC' }],
};
const SCHEDULE = { cron: '* * * * *', job_type: 'docs', data: { report: 'daily' }, throttle_key: 'acme', end_at: '2027-01-01T00:00:00Z' };

beforeEach(async () => {
  expect((await api().put('/v1/job-types/docs', DOCS_TYPE)).status).toBe(201);
});

async function enqueued(id: string, body: object = FULL_JOB): Promise<ApiResponse> {
  const response = await api().put(`/v1/jobs/docs/${id}`, body);
  expect(response.status).toBe(201);
  return response;
}

/** A job its handler deferred: awaiting_callback at attempt 1, run by a named worker. */
async function awaitingCallback(id: string, body: object = FULL_JOB): Promise<void> {
  const { ctx } = fixture().queue;
  await enqueued(id, body);
  const jobType = await requireJobType(ctx, 'docs');
  const claimed = await claimJob(ctx, { type: 'docs', id }, jobType);
  if (claimed.kind !== 'claimed') throw new Error(`could not claim ${id}: ${claimed.kind}`);
  expect(await runClaimedJob(fixture().queue.as('worker'), claimed.job, jobType, { registry, worker: { id: 'w-1', host: 'host-a' } })).toBe('awaiting_callback');
}

/** A job with an ended attempt (its error and worker), a progress report and a change. */
async function jobWithAPast(id: string): Promise<void> {
  await awaitingCallback(id, { ...FULL_JOB, correlation_key: `order-${id}` });
  expect((await api().post(`/v1/jobs/docs/${id}/heartbeat`, { attempt: 1, progress: { percent: 50, message: 'half', data: { rows: 5 } } })).status).toBe(200);
  expect((await api().post(`/v1/jobs/docs/${id}`, { status: 'failed', attempt: 1, error: { class: 'Timeout', message: 'slow', trace: 'at x' } })).status).toBe(200);
  expect((await api().patch(`/v1/jobs/docs/${id}`, { run_after: 'now', priority: 1, expires_at: null })).status).toBe(200);
}

async function firedSchedule(name: string): Promise<void> {
  expect((await api().put(`/v1/schedules/${name}`, SCHEDULE)).status).toBe(201);
  fixture().queue.clock.advance(61_000);
  await fireDueSchedules(fixture().queue.as('poller'), await listJobTypes(fixture().queue.ctx));
}

async function createdKey(body: object): Promise<ApiResponse> {
  const response = await api().post('/v1/keys', body);
  expect(response.status).toBe(201);
  return response;
}

/** For each operation, requests that draw each success answer it documents, with as few fields null as it allows. */
const SCENARIOS: Record<RouteName, () => Promise<ApiResponse[]>> = {
  health: async () => [await api().get('/health', { token: null })],
  openApi: async () => [await api().get('/openapi.json', { token: null })],
  listJobTypes: async () => [await api().get('/v1/job-types')],
  getJobType: async () => {
    await awaitingCallback('j-1');
    return [await api().get('/v1/job-types/docs')];
  },
  putJobType: async () => [
    await api().put('/v1/job-types/hooks', { target: { kind: 'http', url: 'https://example.com/hook' }, retry: { kind: 'fixed', delay_s: 5 }, time_windows: FULL_JOB.time_windows }),
    await api().put('/v1/job-types/docs', DOCS_TYPE),
  ],
  pauseJobType: async () => [await api().post('/v1/job-types/docs/pause')],
  resumeJobType: async () => [await api().post('/v1/job-types/docs/resume')],
  stats: async () => {
    const startedAtMs = fixture().queue.ctx.nowMs();
    await recordRosterEntry(fixture().queue.as('poller'), { role: 'poller', id: 'p-1', host: 'host-a', startedAtMs, shards: [0, 1] });
    await recordRosterEntry(fixture().queue.as('worker'), { role: 'worker', id: 'w-1', host: 'host-a', startedAtMs });
    await awaitingCallback('j-1');
    // As a server that evaluates the stack's alarms (npm start) answers, with them.
    const alarms = () => [{ name: 'DueLagAlarm', state: 'ALARM' as const, reason: '2 of the last 2 datapoints greater than the threshold (120000)', changedAtMs: startedAtMs }];
    return [await createTestApi(fixture().queue, { alarms }).get('/v1/stats')];
  },
  metrics: async () => {
    await awaitingCallback('j-1');
    await api().post('/v1/jobs/docs/j-1', { status: 'succeeded', attempt: 1 });
    return [await api().get('/v1/metrics?minutes=5')];
  },
  enqueueWithServerId: async () => [await api().post('/v1/jobs/docs', FULL_JOB)],
  listJobs: async () => {
    await jobWithAPast('j-1');
    await enqueued('j-2');
    return [await api().get('/v1/jobs/docs?status=queued&limit=1')];
  },
  enqueueBatch: async () => [await api().post('/v1/jobs/docs/batch', { jobs: [{ id: 'b-1', ...FULL_JOB }, { id: 'b-2', priority: 5000 }, { data: 1 }] })],
  enqueueWithId: async () => [await api().put('/v1/jobs/docs/j-1', FULL_JOB), await api().put('/v1/jobs/docs/j-1', FULL_JOB)],
  getJob: async () => {
    await jobWithAPast('j-1');
    return [await api().get('/v1/jobs/docs/j-1')];
  },
  callback: async () => {
    await awaitingCallback('j-1');
    return [await api().post('/v1/jobs/docs/j-1', { status: 'succeeded', attempt: 1, result: { receipt: 'r-1' } })];
  },
  cancel: async () => {
    await enqueued('j-1');
    await enqueued('j-2');
    const { ctx } = fixture().queue;
    const claimed = await claimJob(ctx, { type: 'docs', id: 'j-2' }, await requireJobType(ctx, 'docs'));
    expect(claimed.kind).toBe('claimed');
    return [await api().delete('/v1/jobs/docs/j-1'), await api().delete('/v1/jobs/docs/j-2')];
  },
  changeJob: async () => {
    await enqueued('j-1');
    return [await api().patch('/v1/jobs/docs/j-1', { run_after: '2026-11-21T11:00:00Z', priority: 1, expires_at: '2026-11-23T00:00:00Z' })];
  },
  heartbeat: async () => {
    await awaitingCallback('j-1');
    return [await api().post('/v1/jobs/docs/j-1/heartbeat', { attempt: 1, extend_s: 60, progress: { percent: 10, message: 'started', data: [1] } })];
  },
  replay: async () => {
    await awaitingCallback('j-1');
    await api().post('/v1/jobs/docs/j-1', { status: 'succeeded', attempt: 1 });
    return [await api().post('/v1/jobs/docs/j-1/replay')];
  },
  callbackByCorrelationKey: async () => {
    await awaitingCallback('j-1', { ...FULL_JOB, correlation_key: 'psp:ch_1' });
    return [await api().post('/v1/callbacks/psp:ch_1', { status: 'failed', error: { class: 'Declined', message: 'no' }, retryable: false })];
  },
  jobberQueue: async () => [await api().post('/jobber/queue', { type: 'docs', payload: { to: 'ada' } })],
  startBulk: async () => {
    await enqueued('j-1');
    const cancel = { action: 'cancel', status: 'queued', from: '2026-11-21T00:00:00Z', to: '2026-11-22T00:00:00Z', throttle_key: 'acme' };
    return [await api().post('/v1/jobs/docs/bulk', cancel), await api().post('/v1/jobs/docs/bulk', cancel)];
  },
  getOperation: async () => {
    const started = await api().post('/v1/jobs/docs/bulk', { action: 'retry', status: 'failed', from: '2026-11-21T00:00:00Z' });
    return [await api().get(`/v1/operations/${started.body.id}`)];
  },
  createKey: async () => [await api().post('/v1/keys', { scopes: ['read:docs'], name: 'reports', expires_at: '2027-01-01T00:00:00Z' })],
  listKeys: async () => {
    const { body } = await createdKey({ scopes: ['read:*'], name: 'reports' });
    await createdKey({ scopes: ['enqueue:docs'] });
    await createApiClient(api().handler, body.key).get('/v1/stats');
    return [await api().get('/v1/keys')];
  },
  revokeKey: async () => [await api().delete(`/v1/keys/${(await createdKey({ scopes: ['read:*'] })).body.id}`)],
  listSchedules: async () => {
    await firedSchedule('daily');
    expect((await api().put('/v1/schedules/weekly', { ...SCHEDULE, cron: '0 5 * * 1' })).status).toBe(201);
    return [await api().get('/v1/schedules?limit=1')];
  },
  putSchedule: async () => [await api().put('/v1/schedules/daily', SCHEDULE), await api().put('/v1/schedules/daily', SCHEDULE)],
  getSchedule: async () => {
    await firedSchedule('daily');
    return [await api().get('/v1/schedules/daily')];
  },
  deleteSchedule: async () => {
    await firedSchedule('daily');
    return [await api().delete('/v1/schedules/daily')];
  },
  pauseSchedule: async () => {
    await firedSchedule('daily');
    return [await api().post('/v1/schedules/daily/pause')];
  },
  resumeSchedule: async () => {
    await firedSchedule('daily');
    await api().post('/v1/schedules/daily/pause');
    return [await api().post('/v1/schedules/daily/resume')];
  },
};

test.each(OPERATIONS.map((operation) => [`${operation.method} ${operation.path}`, operation] as const))('%s answers each success it documents with a body its schema accepts', async (_name, operation) => {
  const answers = await SCENARIOS[operation.route]();
  expect(answers.map((answer) => answer.status).sort()).toEqual(Object.keys(operation.responses).map(Number).sort());
  for (const answer of answers) expect(conformance(operation, answer), `${answer.status} ${answer.text.slice(0, 2_000)}`).toEqual([]);
});

/** The operation of the api answering `method path`. */
const operationOf = (method: string, path: string): Operation => {
  const operation = OPERATIONS.find((candidate) => candidate.method === method && candidate.path === path);
  if (!operation) throw new Error(`no operation ${method} ${path}`);
  return operation;
};

/** An api over a table that does not exist: every read fails inside the api. */
function apiOverMissingTable() {
  const { queue } = fixture();
  const ctx = { ...queue.ctx, settings: { ...queue.ctx.settings, tableName: `${queue.ctx.settings.tableName}-missing` } };
  return createTestApi({ as: () => ctx });
}

/** A request the api refuses with each error status, and the operation it was for. */
const ERRORS: [string, number, string, () => Promise<ApiResponse>][] = [
  ['an invalid body', 400, 'PUT /v1/jobs/{type}/{id}', () => api().put('/v1/jobs/docs/j-1', { priority: 5_000 })],
  ['no key (API Gateway answers)', 401, 'GET /v1/stats', () => api().get('/v1/stats', { token: null })],
  ['a key API Gateway does not know', 403, 'GET /v1/stats', () => api().get('/v1/stats', { token: 'not-a-key' })],
  ['a key without the scope', 403, 'GET /v1/jobs/{type}/{id}', async () => createApiClient(api().handler, (await createdKey({ scopes: ['read:other'] })).body.key).get('/v1/jobs/docs/j-1')],
  ['a job that does not exist', 404, 'GET /v1/jobs/{type}/{id}', () => api().get('/v1/jobs/docs/none')],
  [
    'another body under an id in use',
    409,
    'PUT /v1/jobs/{type}/{id}',
    async () => {
      await enqueued('j-1');
      return api().put('/v1/jobs/docs/j-1', { data: 2 });
    },
  ],
  ['data over 256 KiB', 413, 'POST /v1/jobs/{type}', () => api().post('/v1/jobs/docs', { data: 'x'.repeat(270 * 1024) })],
  ['a body that is not JSON', 415, 'POST /v1/jobs/{type}', () => api().post('/v1/jobs/docs', 'data=1', { headers: { 'content-type': 'text/plain' } })],
  ['a store that fails', 500, 'GET /v1/jobs/{type}/{id}', () => apiOverMissingTable().get('/v1/jobs/docs/j-1')],
];

test.each(ERRORS)('%s is answered %i with the error body the document gives %s', async (_name, status, operation, request) => {
  const consoleError = vi.spyOn(console, 'error').mockImplementation(() => undefined);
  const answer = await request().finally(() => consoleError.mockRestore());
  expect(answer.status).toBe(status);
  const [method = '', path = ''] = operation.split(' ');
  expect(conformance(operationOf(method, path), answer)).toEqual([]);
});

test('an answer with a field the document does not describe fails the check', async () => {
  const answer = await enqueued('j-1');
  const operation = operationOf('PUT', '/v1/jobs/{type}/{id}');
  expect(conformance(operation, answer)).toEqual([]);
  expect(conformance(operation, { ...answer, body: { ...answer.body, undocumented: 1 } })).toContainEqual(expect.stringContaining('undocumented'));
});

/** Every JSON Schema object with named properties below `node`, as a path to it, that admits other properties. */
function openObjects(node: unknown, path: string): string[] {
  if (typeof node !== 'object' || node === null) return [];
  const own = 'properties' in node && !('additionalProperties' in node && node.additionalProperties === false) ? [path] : [];
  return [...own, ...Object.entries(node).flatMap(([key, value]) => openObjects(value, `${path}/${key}`))];
}

test('every object the document describes a body with is closed to fields it does not name', () => {
  const document = openApiDocument() as { paths: Record<string, unknown>; components: { schemas: Record<string, unknown> } };
  expect([...openObjects(document.paths, '#/paths'), ...openObjects(document.components.schemas, '#/components/schemas')]).toEqual([]);
});
