/**
 * The typed client's key, Jobber, health and API-description calls over HTTP, and a check that the client has a
 * method for every operation the api serves (functions/api/operations.ts), so a new route cannot go without one.
 */
import { afterEach, beforeEach, expect, test, vi, type MockInstance } from 'vitest';
import { OPERATIONS, type RouteName } from '../../../../functions/api/operations.js';
import { openApiDocument } from '../../../../functions/api/openapi.js';
import { createClient, type QueueClient } from '../../../../lib/client/index.js';
import { serveTestApi, type HttpTestApi } from '../../../support/http-api.js';
import { createTestQueue, manualClock, type TestQueue } from '../../../support/queue.js';

let queue: TestQueue;
let server: HttpTestApi;
let client: QueueClient;
let consoleLog: MockInstance<typeof console.log>;

beforeEach(async () => {
  consoleLog = vi.spyOn(console, 'log').mockImplementation(() => undefined);
  queue = await createTestQueue({ clock: manualClock(Math.floor(Date.now() / 60_000) * 60_000) });
  server = await serveTestApi(queue);
  client = createClient({ url: server.url, token: server.adminToken, sleep: async () => undefined });
});
afterEach(async () => {
  consoleLog.mockRestore();
  await server.close();
  await queue.drop();
});

/** The client method that calls each operation. */
const CLIENT_METHOD_OF: Record<RouteName, keyof QueueClient> = {
  health: 'health',
  openApi: 'openApi',
  listJobTypes: 'listTypes',
  getJobType: 'getType',
  putJobType: 'defineType',
  pauseJobType: 'pause',
  resumeJobType: 'resume',
  stats: 'stats',
  metrics: 'metrics',
  enqueueWithServerId: 'enqueue',
  listJobs: 'list',
  enqueueBatch: 'enqueueBatch',
  enqueueWithId: 'enqueue',
  getJob: 'get',
  callback: 'complete',
  cancel: 'cancel',
  changeJob: 'change',
  heartbeat: 'heartbeat',
  replay: 'replay',
  callbackByCorrelationKey: 'completeByKey',
  jobberQueue: 'jobberQueue',
  createKey: 'createKey',
  listKeys: 'listKeys',
  revokeKey: 'revokeKey',
  listSchedules: 'listSchedules',
  putSchedule: 'defineSchedule',
  getSchedule: 'getSchedule',
  deleteSchedule: 'deleteSchedule',
  pauseSchedule: 'pauseSchedule',
  resumeSchedule: 'resumeSchedule',
  startBulk: 'startBulk',
  getOperation: 'getOperation',
};

test('the client has a method for every operation the api serves', () => {
  for (const operation of OPERATIONS) expect(typeof client[CLIENT_METHOD_OF[operation.route]], `${operation.method} ${operation.path}`).toBe('function');
});

test('a key the client creates works, is listed without its secret, and once revoked says when', async () => {
  const created = await client.createKey({ scopes: ['read:*'], name: 'reporting' });
  expect(created).toMatchObject({ name: 'reporting', scopes: ['read:*'], revoked_at: null });
  expect(await createClient({ url: server.url, token: created.key }).listTypes()).toEqual([]);
  const listed = (await client.listKeys()).find((key) => key.id === created.id);
  expect(listed).toMatchObject({ id: created.id, name: 'reporting' });
  expect(listed).not.toHaveProperty('key');
  expect((await client.revokeKey(created.id)).revoked_at).not.toBeNull();
});

test('jobberQueue enqueues its payload as the data of a job of the type', async () => {
  await client.defineType('emails', { target: { kind: 'handler', name: 'echo' } });
  const { 'job-id': id } = await client.jobberQueue('emails', { to: 'ada@example.com' });
  expect(await client.get('emails', id)).toMatchObject({ id, type: 'emails', status: 'queued', data: { to: 'ada@example.com' } });
});

test('health and the API description answer without a key', async () => {
  const anonymous = createClient({ url: server.url, token: 'not-a-key' });
  expect(await anonymous.health()).toEqual({ status: 'ok' });
  expect(await anonymous.openApi()).toEqual(openApiDocument());
});

test('startBulk records one operation however often it is sent, and getOperation reads its progress', async () => {
  await client.defineType('emails', { target: { kind: 'handler', name: 'echo' } });
  const body = { action: 'cancel', status: 'queued', from: new Date('2026-11-01T00:00:00Z') } as const;
  const started = await client.startBulk('emails', body);
  expect(started).toMatchObject({ type: 'emails', action: 'cancel', status: 'queued', from: '2026-11-01T00:00:00.000Z', state: 'running', matched: 0 });
  expect((await client.startBulk('emails', body)).id).toBe(started.id);
  expect(await client.getOperation(started.id)).toEqual(started);
});
