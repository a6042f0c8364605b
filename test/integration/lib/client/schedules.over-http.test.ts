/** The typed client's schedule methods against the real api over HTTP, on DynamoDB Local. */
import { afterAll, beforeAll, expect, test, vi } from 'vitest';
import { createClient, InvalidRequestError, NotFoundError, type QueueClient } from '../../../../lib/client/index.js';
import { fireDueSchedules } from '../../../../lib/queue/schedules/fire-schedules.js';
import { listJobTypes } from '../../../../lib/queue/catalog/job-types.js';
import { serveTestApi, type HttpTestApi } from '../../../support/http-api.js';
import { createTestQueue, type TestQueue } from '../../../support/queue.js';

let queue: TestQueue;
let server: HttpTestApi;
let client: QueueClient;

beforeAll(async () => {
  // The api logs refusals; the tests read nothing from them.
  vi.spyOn(console, 'error').mockImplementation(() => undefined);
  vi.spyOn(console, 'log').mockImplementation(() => undefined);
  queue = await createTestQueue();
  server = await serveTestApi(queue);
  client = createClient({ url: server.url, token: server.adminToken, sleep: async () => undefined });
  await client.defineType('emails', { target: { kind: 'handler', name: 'echo' } });
});
afterAll(async () => {
  await server.close();
  await queue.drop();
  vi.restoreAllMocks();
});

test('define, read, list, pause, resume and delete a schedule; its job names it', async () => {
  const defined = await client.defineSchedule('digest', { cron: '*/5 * * * *', job_type: 'emails', data: { kind: 'digest' }, start_at: new Date(queue.clock.nowMs()) });
  expect(defined).toMatchObject({ name: 'digest', tz: 'UTC', next_fire_at: '2026-11-21T10:05:00.000Z' });
  expect(defined.next_fires).toHaveLength(5);
  queue.clock.advance(5 * 60_000);
  await fireDueSchedules(queue.as('poller'), await listJobTypes(queue.ctx));
  const read = await client.getSchedule('digest');
  expect(read.last_fire).toMatchObject({ job_id: 'digest@2026-11-21T10:05:00Z', job_status: 'queued' });
  expect((await client.get('emails', 'digest@2026-11-21T10:05:00Z')).schedule).toBe('digest');
  expect((await client.listSchedules({ limit: 10 })).schedules.map((schedule) => schedule.name)).toEqual(['digest']);
  expect((await client.pauseSchedule('digest')).paused).toBe(true);
  expect((await client.resumeSchedule('digest')).paused).toBe(false);
  expect(await client.deleteSchedule('digest')).toEqual({ name: 'digest', deleted: true });
  await expect(client.getSchedule('digest')).rejects.toBeInstanceOf(NotFoundError);
});

test('refusals are typed errors naming the field', async () => {
  const refused = await client.defineSchedule('bad', { cron: '* * *', job_type: 'emails' }).catch((error: unknown) => error);
  expect(refused).toBeInstanceOf(InvalidRequestError);
  expect((refused as InvalidRequestError).details.map((issue) => issue.field)).toEqual(['cron']);
});
