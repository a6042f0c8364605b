/**
 * Progress from a running job: a heartbeat, or the handler's context, reports `{percent?, message?, data?}`,
 * bounded in size; the job keeps the latest, and GET returns it.
 */
import { beforeEach, describe, expect, test } from 'vitest';
import { claimJob } from '../../../../../lib/queue/attempt/claim.js';
import { requireJobType } from '../../../../../lib/queue/catalog/job-types.js';
import { runClaimedJob, type JobHandler } from '../../../../../lib/queue/attempt/run-batch.js';
import type { Job } from '../../../../../lib/domain/job.js';
import { freshApiPerTest, tableItems } from '../../../../support/api.js';
import { asFunction } from '../../../../support/queue.js';

const api = freshApiPerTest();
const T0 = Date.parse('2026-11-21T10:00:00.000Z');
const WORKER = { id: 'worker-1', host: 'host-a' };

beforeEach(async () => {
  const { api: client } = api();
  const created = await client.put('/v1/job-types/imports', { target: { kind: 'handler', name: 'echo' }, visibility_timeout_s: 30 });
  expect(created.status).toBe(201);
});

async function runningJob(id = 'i1'): Promise<Job> {
  const { api: client, queue } = api();
  expect((await client.put(`/v1/jobs/imports/${id}`, { data: { rows: 1000 } })).status).toBe(201);
  const claimed = await claimJob(queue.ctx, { type: 'imports', id }, await requireJobType(queue.ctx, 'imports'));
  if (claimed.kind !== 'claimed') throw new Error(`could not claim ${id}`);
  return claimed.job;
}

describe('a heartbeat carrying progress', () => {
  test('is kept on the job with its attempt and time, and GET returns it', async () => {
    const { api: client, queue } = api();
    await runningJob();
    expect((await client.get('/v1/jobs/imports/i1')).body.progress).toBeNull();
    queue.clock.advance(5_000);
    const progress = { percent: 42.5, message: 'rows 1-425 of 1000', data: { rows_done: 425 } };
    const response = await client.post('/v1/jobs/imports/i1/heartbeat', { attempt: 1, progress });
    expect(response.status).toBe(200);
    const expected = { ...progress, attempt: 1, at: new Date(T0 + 5_000).toISOString() };
    expect(response.body.progress).toEqual(expected);
    expect((await client.get('/v1/jobs/imports/i1')).body.progress).toEqual(expected);
  });

  test('replaces the report before it, fields left out now null', async () => {
    const { api: client } = api();
    await runningJob();
    await client.post('/v1/jobs/imports/i1/heartbeat', { attempt: 1, progress: { percent: 10, message: 'started', data: [1] } });
    const response = await client.post('/v1/jobs/imports/i1/heartbeat', { attempt: 1, progress: { percent: 20 } });
    expect(response.body.progress).toMatchObject({ percent: 20, message: null, data: null });
  });

  test('is recorded even when the claim already runs longer than the heartbeat asks', async () => {
    const { api: client } = api();
    await runningJob();
    expect((await client.post('/v1/jobs/imports/i1/heartbeat', { attempt: 1, extend_s: 600 })).status).toBe(200);
    const response = await client.post('/v1/jobs/imports/i1/heartbeat', { attempt: 1, extend_s: 10, progress: { percent: 99 } });
    expect(response.status).toBe(200);
    expect(response.body.claimed_until).toBe(new Date(T0 + 600_000).toISOString());
    expect(response.body.progress.percent).toBe(99);
  });

  test('from a stale attempt is 409 and changes nothing', async () => {
    const { api: client, queue } = api();
    await runningJob();
    const before = await tableItems(queue);
    expect((await client.post('/v1/jobs/imports/i1/heartbeat', { attempt: 2, progress: { percent: 1 } })).status).toBe(409);
    expect(await tableItems(queue)).toEqual(before);
  });

  test.each([
    { name: 'a report over 8 KiB', progress: { data: 'x'.repeat(9 * 1024) }, status: 413, field: 'progress' },
    { name: 'a percent over 100', progress: { percent: 101 }, status: 400, field: 'progress.percent' },
    { name: 'a message over 1 000 characters', progress: { message: 'm'.repeat(1_001) }, status: 400, field: 'progress.message' },
    { name: 'an unknown field', progress: { eta: 5 }, status: 400, field: 'progress.eta' },
  ])('$name is $status naming $field and changes nothing', async ({ progress, status, field }) => {
    const { api: client, queue } = api();
    await runningJob();
    const before = await tableItems(queue);
    const response = await client.post('/v1/jobs/imports/i1/heartbeat', { attempt: 1, progress });
    expect(response.status).toBe(status);
    expect(response.body.error.details.map((detail: { field: string }) => detail.field)).toEqual([field]);
    expect(await tableItems(queue)).toEqual(before);
  });
});

describe("the handler's context", () => {
  async function runWith(handler: JobHandler): Promise<string> {
    const { queue } = api();
    const job = await runningJob();
    const registry = { handlers: { echo: handler }, retryPolicies: {} };
    return runClaimedJob(asFunction(queue.ctx, 'worker'), job, await requireJobType(queue.ctx, 'imports'), { registry, worker: WORKER });
  }

  test('reports progress, which the job keeps once the attempt has ended', async () => {
    const outcome = await runWith(async (_data, context) => {
      await context.progress({ percent: 50, message: 'half way' });
      await context.progress({ percent: 100, message: 'done', data: { rows: 1000 } });
      return 'ok';
    });
    expect(outcome).toBe('succeeded');
    expect((await api().api.get('/v1/jobs/imports/i1')).body).toMatchObject({
      status: 'succeeded',
      progress: { percent: 100, message: 'done', data: { rows: 1000 }, attempt: 1 },
    });
  });

  test('refuses a report out of bounds with an error naming the field, recording nothing', async () => {
    const refusals: unknown[] = [];
    await runWith(async (_data, context) => {
      for (const report of [{ percent: -1 }, { data: 'x'.repeat(9 * 1024) }]) await context.progress(report).catch((error) => refusals.push(error));
      return 'ok';
    });
    expect(refusals).toEqual([
      expect.objectContaining({ name: 'ValidationError', details: [expect.objectContaining({ field: 'progress.percent' })] }),
      expect.objectContaining({ name: 'PayloadTooLargeError', field: 'progress' }),
    ]);
    expect((await api().api.get('/v1/jobs/imports/i1')).body.progress).toBeNull();
  });
});
