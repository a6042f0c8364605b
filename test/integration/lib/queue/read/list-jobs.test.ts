/**
 * Paging through a type's jobs by status (docs/reference/http-api.md, `GET /v1/jobs/{type}?status=`),
 * without a scan: every job once, in order, whatever the page size.
 */
import { describe, expect, test } from 'vitest';
import type { QueueContext } from '../../../../../lib/queue/context.js';
import { directoryKey } from '../../../../../lib/store/keys.js';
import { listJobs } from '../../../../../lib/queue/read/list-jobs.js';
import { cancelJob } from '../../../../../lib/queue/attempt/cancel.js';
import type { JobStatus } from '../../../../../lib/domain/job.js';
import type { JobType } from '../../../../../lib/domain/job-type.js';
import { AWAIT_CALLBACK } from '../../../../../lib/queue/attempt/run-batch.js';
import { runWorkerBatch } from '../../../../../lib/queue/attempt/run-batch.js';
import { freshApiPerTest, tableItems } from '../../../../support/api.js';
import { defineType, enqueue, freshQueuePerTest, poll, RecordingInvoker, WORKER } from '../../../../support/lib-fixtures.js';
import { asFunction } from '../../../../support/queue.js';

const MINUTE_MS = 60_000;
const DAY_MS = 86_400_000;

/** Every page of the listing, page by page, as ids. */
async function allPages(ctx: QueueContext, jobType: JobType, status: JobStatus, limit: number): Promise<string[][]> {
  const pages: string[][] = [];
  let cursor: string | undefined;
  do {
    const page = await listJobs(ctx, jobType, { status, limit, ...(cursor ? { cursor } : {}) });
    pages.push(page.jobs.map((job) => job.id));
    cursor = page.nextCursor;
  } while (cursor && pages.length < 1_000);
  return pages;
}

describe('listing jobs by status', () => {
  const queue = freshQueuePerTest();

  test('paging through queued jobs returns every job once, due ones and ones scheduled up to a year ahead', async () => {
    const { ctx, clock } = queue();
    const jobType = await defineType(ctx, 'reports');
    const now = clock.nowMs();
    const offsetsMs = [-5 * MINUTE_MS, 0, 30_000, 2 * MINUTE_MS, 90 * MINUTE_MS, 3 * DAY_MS, 365 * DAY_MS];
    const ids: string[] = [];
    for (let i = 0; i < 70; i++) {
      const id = `job-${String(i).padStart(3, '0')}`;
      await enqueue(ctx, jobType, id, { runAfterMs: now + offsetsMs[i % offsetsMs.length]! + i });
      ids.push(id);
    }
    for (const limit of [1, 7, 25, 100]) {
      const pages = await allPages(ctx, jobType, 'queued', limit);
      expect(pages.flat().sort()).toEqual([...ids].sort());
      expect(pages.every((page) => page.length <= limit)).toBe(true);
    }
  });

  test('queued jobs come by ready time', async () => {
    const { ctx, clock } = queue();
    const jobType = await defineType(ctx, 'reports');
    const now = clock.nowMs();
    await enqueue(ctx, jobType, 'in-a-day', { runAfterMs: now + DAY_MS });
    await enqueue(ctx, jobType, 'in-an-hour', { runAfterMs: now + 60 * MINUTE_MS });
    await enqueue(ctx, jobType, 'now', { runAfterMs: now });
    expect((await allPages(ctx, jobType, 'queued', 2)).flat()).toEqual(['now', 'in-an-hour', 'in-a-day']);
  });

  test('a job records its bucket in the directory, due now or scheduled a day ahead; the jobs after it in the same bucket record nothing', async () => {
    const { ctx, clock } = queue();
    const jobType = await defineType(ctx, 'reports');
    const recordOf = (epochMs: number) => expect.objectContaining(directoryKey({ kind: 'queued', type: 'reports' }, Math.floor(epochMs / ctx.settings.bucketMs)));
    const directoryItems = async () => (await tableItems({ ...queue(), tableName: ctx.settings.tableName })).filter((item) => String(item.pk).startsWith('DIR#'));
    for (const id of ['now', 'now-too']) await enqueue(ctx, jobType, id);
    expect(await directoryItems()).toEqual([recordOf(clock.nowMs())]);
    await enqueue(ctx, jobType, 'tomorrow-1', { runAfterMs: clock.nowMs() + DAY_MS });
    await enqueue(ctx, jobType, 'tomorrow-2', { runAfterMs: clock.nowMs() + DAY_MS + 1 });
    expect(await directoryItems()).toEqual([recordOf(clock.nowMs()), recordOf(clock.nowMs() + DAY_MS)]);
  });

  test('running and awaiting jobs are listed by status, and only those of the asked type', async () => {
    const { ctx } = queue();
    const waiting = await defineType(ctx, 'waiting', { timeout_s: 3_600 });
    const other = await defineType(ctx, 'other');
    for (const id of ['a', 'b', 'c']) await enqueue(ctx, waiting, id);
    await enqueue(ctx, other, 'x');
    const invoker = new RecordingInvoker();
    await poll(ctx, [waiting, other], invoker);
    const [first] = invoker.batches.flatMap((batch) => batch.jobs).filter((job) => job.id === 'a');
    await runWorkerBatch(asFunction(ctx, 'worker'), { jobs: [first!], jobTypes: { waiting } }, {
      registry: { handlers: { waiting: () => AWAIT_CALLBACK }, retryPolicies: {} },
      worker: WORKER,
    });
    expect((await allPages(ctx, waiting, 'running', 10)).flat().sort()).toEqual(['b', 'c']);
    expect((await allPages(ctx, waiting, 'awaiting_callback', 10)).flat()).toEqual(['a']);
    expect((await allPages(ctx, other, 'running', 10)).flat()).toEqual(['x']);
  });

  test('finished jobs are listed newest first, per status', async () => {
    const { ctx, clock } = queue();
    const jobType = await defineType(ctx, 'reports', { attempts: 1 });
    for (const id of ['a', 'b', 'c', 'd']) await enqueue(ctx, jobType, id);
    for (const id of ['a', 'c', 'b']) {
      clock.advance(1_000);
      await cancelJob(ctx, 'reports', id);
    }
    expect(await allPages(ctx, jobType, 'cancelled', 2)).toEqual([['b', 'c'], ['a']]);
    expect((await allPages(ctx, jobType, 'queued', 10)).flat()).toEqual(['d']);
  });

  test('failed jobs are listed; succeeded ones only for a type that lists them', async () => {
    const { ctx } = queue();
    const plain = await defineType(ctx, 'plain', { attempts: 1 });
    const listed = await defineType(ctx, 'listed', { attempts: 1, list_succeeded: true });
    await enqueue(ctx, plain, 'fails');
    await enqueue(ctx, plain, 'works');
    await enqueue(ctx, listed, 'works');
    const invoker = new RecordingInvoker();
    await poll(ctx, [plain, listed], invoker);
    const handlers = { plain: (data: unknown) => ((data as { id: string }).id === 'fails' ? Promise.reject(new Error('no')) : 'ok'), listed: () => 'ok' };
    for (const batch of invoker.batches) await runWorkerBatch(asFunction(ctx, 'worker'), batch, { registry: { handlers, retryPolicies: {} }, worker: WORKER });
    expect((await allPages(ctx, plain, 'failed', 10)).flat()).toEqual(['fails']);
    expect((await allPages(ctx, listed, 'succeeded', 10)).flat()).toEqual(['works']);
    await expect(listJobs(ctx, plain, { status: 'succeeded', limit: 10 })).rejects.toMatchObject({
      name: 'ValidationError',
      details: [{ field: 'status', message: expect.stringContaining('list_succeeded') }],
    });
  });

  test('a cursor from another status, or not from this API, names cursor', async () => {
    const { ctx } = queue();
    const jobType = await defineType(ctx, 'reports');
    for (const id of ['a', 'b']) await enqueue(ctx, jobType, id);
    const { nextCursor } = await listJobs(ctx, jobType, { status: 'queued', limit: 1 });
    for (const cursor of [nextCursor!, 'not-a-cursor']) {
      await expect(listJobs(ctx, jobType, { status: 'failed', limit: 1, cursor })).rejects.toMatchObject({
        details: [{ field: 'cursor', message: expect.any(String) }],
      });
    }
  });
});

describe('GET /v1/jobs/{type}', () => {
  const api = freshApiPerTest();

  test('pages by status with an opaque cursor', async () => {
    const { api: client } = api();
    await client.put('/v1/job-types/emails', { target: { kind: 'handler', name: 'echo' } });
    for (const id of ['a', 'b', 'c']) await client.put(`/v1/jobs/emails/${id}`, { data: { id } });
    const first = await client.get('/v1/jobs/emails?status=queued&limit=2');
    expect(first.status).toBe(200);
    expect(first.body.jobs.map((job: { id: string }) => job.id)).toEqual(['a', 'b']);
    expect(first.body.jobs[0]).toMatchObject({ id: 'a', type: 'emails', status: 'queued', data: { id: 'a' }, history: [] });
    const second = await client.get(`/v1/jobs/emails?status=queued&limit=2&cursor=${first.body.next_cursor}`);
    expect(second.body).toEqual({ jobs: [expect.objectContaining({ id: 'c' })], next_cursor: null });
  });

  test.each([
    ['status is missing', '/v1/jobs/emails', 'status'],
    ['status is unknown', '/v1/jobs/emails?status=done', 'status'],
    ['limit is 0', '/v1/jobs/emails?status=queued&limit=0', 'limit'],
    ['limit is over 100', '/v1/jobs/emails?status=queued&limit=101', 'limit'],
    ['a parameter is unknown', '/v1/jobs/emails?status=queued&colour=blue', 'colour'],
  ])('a request where %s is 400 naming it', async (_name, path, field) => {
    const { api: client } = api();
    await client.put('/v1/job-types/emails', { target: { kind: 'handler', name: 'echo' } });
    const response = await client.get(path);
    expect(response.status).toBe(400);
    expect(response.body.error.details).toEqual([expect.objectContaining({ field })]);
  });

  test('an unknown type is 404', async () => {
    expect((await api().api.get('/v1/jobs/nothing?status=queued')).status).toBe(404);
  });
});
