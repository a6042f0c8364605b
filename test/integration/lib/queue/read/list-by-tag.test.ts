/**
 * A job's tags: `GET /v1/jobs/{type}?tag=` lists the type's jobs with the tag in any status, newest enqueued
 * first, paged; bulk operations select by tag; bad tags are a 400 naming them that writes nothing.
 */
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, test } from 'vitest';
import { createClient } from '../../../../../lib/client/index.js';
import { createMemoryPublisher } from '../../../../../lib/domain/lifecycle-events.js';
import { lifecycleEventDetail } from '../../../../../lib/wire/lifecycle-events.js';
import { createTestQueue } from '../../../../support/queue.js';
import { serveTestApi } from '../../../../support/http-api.js';
import type { QueueContext } from '../../../../../lib/queue/context.js';
import type { JobType } from '../../../../../lib/domain/job-type.js';
import { cancelJob } from '../../../../../lib/queue/attempt/cancel.js';
import { listJobsByTag } from '../../../../../lib/queue/read/list-by-tag.js';
import { jobKey, tagEntryKey } from '../../../../../lib/store/keys.js';
import { listJobTypes, requireJobType } from '../../../../../lib/queue/catalog/job-types.js';
import { fireDueSchedules } from '../../../../../lib/queue/schedules/fire-schedules.js';
import { freshApiPerTest, tableItems, type ApiClient } from '../../../../support/api.js';
import { defineType, enqueue, freshQueuePerTest, poll, RecordingInvoker } from '../../../../support/lib-fixtures.js';
import { runToEnd, seedFinished } from '../../../../support/bulk-fixtures.js';

const ECHO = { target: { kind: 'handler' as const, name: 'echo' } };

/** Every page of the type's jobs with the tag, page by page, as ids. */
async function tagPages(ctx: QueueContext, jobType: JobType, tag: string, limit: number, status?: 'queued'): Promise<string[][]> {
  const pages: string[][] = [];
  let cursor: string | undefined;
  do {
    const page = await listJobsByTag(ctx, jobType, { tag, limit, status, cursor });
    pages.push(page.jobs.map((job) => job.id));
    cursor = page.nextCursor;
  } while (cursor && pages.length < 1_000);
  return pages;
}

describe('listing by tag', () => {
  const queue = freshQueuePerTest();

  test('shows the type\'s jobs with the tag in any status, newest enqueued first, and no job without it', async () => {
    const { ctx, clock } = queue();
    const reports = await defineType(ctx, 'reports');
    for (const [id, tags] of [['first', ['eu']], ['untagged', undefined], ['second', ['eu', 'vip']], ['third', ['vip', 'eu']]] as const) {
      clock.advance(1_000);
      await enqueue(ctx, reports, id, tags ? { tags: [...tags] } : {});
    }
    await cancelJob(ctx, 'reports', 'second');
    await poll(ctx, [reports], new RecordingInvoker());
    const page = await listJobsByTag(ctx, reports, { tag: 'eu', limit: 10 });
    expect(page.jobs.map((job) => [job.id, job.status])).toEqual([
      ['third', 'running'],
      ['second', 'cancelled'],
      ['first', 'running'],
    ]);
    expect(page.nextCursor).toBeUndefined();
    expect((await tagPages(ctx, reports, 'vip', 10)).flat()).toEqual(['third', 'second']);
  });

  test('pages return every job once, newest first, whatever the page size', async () => {
    const { ctx, clock } = queue();
    const reports = await defineType(ctx, 'reports');
    const ids: string[] = [];
    for (let i = 0; i < 40; i++) {
      // Some enqueued in the same millisecond: their ids order them.
      if (i % 3 === 0) clock.advance(1);
      const id = `job-${String(i).padStart(2, '0')}`;
      await enqueue(ctx, reports, id, { tags: ['batch-7'] });
      ids.push(id);
    }
    for (const limit of [1, 7, 40, 100]) {
      const pages = await tagPages(ctx, reports, 'batch-7', limit);
      expect(pages.flat()).toEqual([...ids].reverse());
      expect(pages.every((page) => page.length <= limit)).toBe(true);
    }
  });

  test('with a status, shows only the tag\'s jobs now in it', async () => {
    const { ctx, clock } = queue();
    const reports = await defineType(ctx, 'reports');
    for (const id of ['a', 'b', 'c', 'd']) {
      clock.advance(1_000);
      await enqueue(ctx, reports, id, { tags: ['eu'] });
    }
    for (const id of ['b', 'd']) await cancelJob(ctx, 'reports', id);
    expect(await tagPages(ctx, reports, 'eu', 1, 'queued')).toEqual([['c'], ['a']]);
  });

  test('a tag of another type lists nothing here, and its cursor walks only this type\'s entries', async () => {
    const { ctx, clock } = queue();
    const emails = await defineType(ctx, 'emails');
    const invoices = await defineType(ctx, 'invoices');
    for (const id of ['i1', 'i2', 'i3']) {
      clock.advance(1_000);
      await enqueue(ctx, invoices, id, { tags: ['vip'] });
    }
    expect((await listJobsByTag(ctx, emails, { tag: 'vip', limit: 10 })).jobs).toEqual([]);
    clock.advance(1_000);
    await enqueue(ctx, emails, 'e1', { tags: ['vip'] });
    const { nextCursor } = await listJobsByTag(ctx, invoices, { tag: 'vip', limit: 1 });
    expect((await listJobsByTag(ctx, emails, { tag: 'vip', limit: 10, cursor: nextCursor! })).jobs).toEqual([]);
    expect((await listJobsByTag(ctx, emails, { tag: 'vip', limit: 10 })).jobs.map((job) => job.id)).toEqual(['e1']);
  });

  test('a cursor of another tag, of a status listing, or not from this API names cursor', async () => {
    const { ctx } = queue();
    const reports = await defineType(ctx, 'reports');
    for (const id of ['a', 'b']) await enqueue(ctx, reports, id, { tags: ['eu', 'us'] });
    const { nextCursor: otherTag } = await listJobsByTag(ctx, reports, { tag: 'us', limit: 1 });
    const statusCursor = Buffer.from(JSON.stringify({ status: 'queued', bucket: 1, sortKey: '' })).toString('base64url');
    const forged = Buffer.from(JSON.stringify({ tag: 'eu', beforeSortKey: 'x' })).toString('base64url');
    for (const cursor of [otherTag!, statusCursor, forged, 'not-a-cursor']) {
      await expect(listJobsByTag(ctx, reports, { tag: 'eu', limit: 1, cursor })).rejects.toMatchObject({
        details: [{ field: 'cursor', message: expect.any(String) }],
      });
    }
  });

  test('skips orphan entries: one whose job was never written, one of a refused body, and a repeated enqueue\'s second', async () => {
    const { ctx, clock } = queue();
    const reports = await defineType(ctx, 'reports');
    await enqueue(ctx, reports, 'kept', { tags: ['eu'] });
    clock.advance(1_000);
    // The same body again: the job is there already; its new entry names a later enqueue.
    await enqueue(ctx, reports, 'kept', { tags: ['eu'] });
    // Another body under that id is refused, after its entry was written.
    await expect(enqueue(ctx, reports, 'kept', { tags: ['eu', 'us'], data: 'other' })).rejects.toMatchObject({ name: 'ConflictError' });
    // An enqueue that died between its entries and its job.
    for (let i = 0; i < 30; i++) {
      const key = tagEntryKey(ctx.settings, { type: 'reports', id: `never-${i}`, createdAtMs: clock.nowMs() + i }, 'eu');
      await ctx.db.send(new PutCommand({ TableName: ctx.settings.tableName, Item: key }));
    }
    expect((await tagPages(ctx, reports, 'eu', 5)).flat()).toEqual(['kept']);
    expect((await tagPages(ctx, reports, 'us', 5)).flat()).toEqual([]);
  });

  test('two enqueues of one id with tags racing make one job, listed once', async () => {
    const { ctx } = queue();
    const reports = await defineType(ctx, 'reports');
    const [one, two] = await Promise.all([1, 2].map(() => enqueue(ctx, reports, 'raced', { tags: ['eu'] })));
    expect([one!.created, two!.created].sort()).toEqual([false, true]);
    expect((await tagPages(ctx, reports, 'eu', 10)).flat()).toEqual(['raced']);
  });

  test('two enqueues of one id with other tags racing make one job, listed under the winner\'s tags only', async () => {
    const { ctx } = queue();
    const reports = await defineType(ctx, 'reports');
    const outcomes = await Promise.allSettled(['eu', 'us'].map((tag) => enqueue(ctx, reports, 'raced', { tags: [tag] })));
    expect(outcomes.map((outcome) => outcome.status).sort()).toEqual(['fulfilled', 'rejected']);
    const winner = outcomes.find((outcome) => outcome.status === 'fulfilled')!.value.job.tags![0]!;
    const loser = winner === 'eu' ? 'us' : 'eu';
    expect((await tagPages(ctx, reports, winner, 10)).flat()).toEqual(['raced']);
    expect((await tagPages(ctx, reports, loser, 10)).flat()).toEqual([]);
  });

  test('a page bounded in bytes ends before the job that would pass the bound, and goes on right after its last', async () => {
    const { ctx, clock } = queue();
    const reports = await defineType(ctx, 'reports');
    const ids = ['a', 'b', 'c', 'd', 'e'];
    for (const id of ids) {
      clock.advance(1_000);
      await enqueue(ctx, reports, id, { tags: ['eu'] });
    }
    const pages: string[][] = [];
    let cursor: string | undefined;
    do {
      const page = await listJobsByTag(ctx, reports, { tag: 'eu', limit: 10, cursor, bytes: { bytesOf: () => 100, maxBytes: 250 } });
      pages.push(page.jobs.map((job) => job.id));
      cursor = page.nextCursor;
    } while (cursor);
    expect(pages).toEqual([['e', 'd'], ['c', 'b'], ['a']]);
  });

  test('a tag entry is purged twice the retention after its job is due', async () => {
    const { ctx, clock } = queue();
    const reports = await defineType(ctx, 'reports');
    const dueAtMs = clock.nowMs() + 3_600_000;
    await enqueue(ctx, reports, 'later', { tags: ['eu'], runAfterMs: dueAtMs });
    const entries = (await tableItems({ ...queue(), tableName: ctx.settings.tableName })).filter((item) => String(item.pk).startsWith('TAG#'));
    expect(entries).toEqual([expect.objectContaining({ purgeAtS: Math.floor(dueAtMs / 1000) + 2 * ctx.settings.retentionDays * 86_400 })]);
  });
});

describe('tags of a debounced job', () => {
  const queue = freshQueuePerTest({ settings: { retentionDays: 1 } });

  test('its tag entries are purged twice the retention after the latest it may be due, since enqueues folding into it move it that far', async () => {
    const { ctx, clock } = queue();
    const reports = await defineType(ctx, 'reports');
    const debounce = { key: 'user-7', delayS: 86_400, maxWaitS: 10 * 86_400 };
    const first = await enqueue(ctx, reports, 'digest', { tags: ['eu'], debounce });
    for (let day = 0; day < 5; day++) {
      clock.advance(86_400_000);
      await enqueue(ctx, reports, `fold-${day}`, { debounce });
    }
    const folded = await listJobsByTag(ctx, reports, { tag: 'eu', limit: 10 });
    expect(folded.jobs.map((job) => [job.id, job.status, job.debounceCount])).toEqual([['digest', 'queued', 5]]);
    const entries = (await tableItems({ ...queue(), tableName: ctx.settings.tableName })).filter((item) => String(item.pk).startsWith('TAG#'));
    const deadlineMs = first.job.createdAtMs + debounce.maxWaitS * 1000;
    expect(entries).toEqual([expect.objectContaining({ purgeAtS: Math.floor(deadlineMs / 1000) + 2 * 86_400 })]);
    expect(Number(entries[0]!.purgeAtS) * 1000).toBeGreaterThan(folded.jobs[0]!.runAfterMs);
  });
});

describe('the API', () => {
  const api = freshApiPerTest();
  const client = (): ApiClient => api().api;

  const define = async (...types: string[]) => {
    for (const type of types) expect((await client().put(`/v1/job-types/${type}`, ECHO)).status).toBe(201);
  };

  test('an enqueue keeps its tags, and GET /v1/jobs/{type}?tag= pages through them with an opaque cursor', async () => {
    await define('emails');
    for (const id of ['a', 'b', 'c']) {
      expect((await client().put(`/v1/jobs/emails/${id}`, { data: { id }, tags: ['welcome', `user-${id}`] })).body.tags).toEqual(['welcome', `user-${id}`]);
      api().queue.clock.advance(1_000);
    }
    const first = await client().get('/v1/jobs/emails?tag=welcome&limit=2');
    expect(first.status).toBe(200);
    expect(first.body.jobs.map((job: { id: string }) => job.id)).toEqual(['c', 'b']);
    const second = await client().get(`/v1/jobs/emails?tag=welcome&limit=2&cursor=${first.body.next_cursor}`);
    expect(second.body).toEqual({ jobs: [expect.objectContaining({ id: 'a', tags: ['welcome', 'user-a'] })], next_cursor: null });
    expect((await client().get('/v1/jobs/emails?tag=user-b&status=queued')).body.jobs.map((job: { id: string }) => job.id)).toEqual(['b']);
    expect((await client().get('/v1/jobs/emails/a')).body.tags).toEqual(['welcome', 'user-a']);
  });

  test('a job without tags shows none, and an empty or null tags is none', async () => {
    await define('emails');
    for (const [id, body] of [['plain', {}], ['empty', { tags: [] }], ['null', { tags: null }]] as const) {
      expect((await client().put(`/v1/jobs/emails/${id}`, body)).body.tags).toEqual([]);
    }
    expect((await tableItems(api().queue)).filter((item) => String(item.pk).startsWith('TAG#'))).toEqual([]);
  });

  test.each([
    ['an empty tag', { tags: [''] }, 'tags.0'],
    ['a tag of 10 000 characters', { tags: ['x'.repeat(10_000)] }, 'tags.0'],
    ['a tag of 65 characters', { tags: ['ok', 'x'.repeat(65)] }, 'tags.1'],
    ['a tag with #', { tags: ['a#b'] }, 'tags.0'],
    ['a tag with a comma', { tags: ['a,b'] }, 'tags.0'],
    ['a tag with a space', { tags: ['a b'] }, 'tags.0'],
    ['a tag that is not ASCII', { tags: ['café'] }, 'tags.0'],
    ['a tag that is not a string', { tags: [7] }, 'tags.0'],
    ['eleven tags', { tags: Array.from({ length: 11 }, (_, i) => `t${i}`) }, 'tags'],
    ['10 000 tags', { tags: Array.from({ length: 10_000 }, (_, i) => `t${i}`) }, 'tags'],
    ['a tag twice', { tags: ['eu', 'us', 'eu'] }, 'tags.2'],
    ['tags that are not a list', { tags: 'eu' }, 'tags'],
  ])('an enqueue with %s is 400 naming the tag and writes nothing', async (_name, body, field) => {
    await define('emails');
    const before = await tableItems(api().queue);
    const response = await client().put('/v1/jobs/emails/hostile', { data: 1, ...body });
    expect(response.status).toBe(400);
    expect(response.body.error.details).toEqual([expect.objectContaining({ field })]);
    expect(await tableItems(api().queue)).toEqual(before);
  });

  test('prototype names are tags like any other', async () => {
    await define('emails');
    const tags = ['__proto__', 'constructor', 'toString'];
    expect((await client().put('/v1/jobs/emails/a', { tags })).status).toBe(201);
    for (const tag of tags) {
      expect((await client().get(`/v1/jobs/emails?tag=${tag}`)).body.jobs.map((job: { id: string }) => job.id)).toEqual(['a']);
    }
    expect((await client().get('/v1/jobs/emails?tag=hasOwnProperty')).body.jobs).toEqual([]);
  });

  test.each([
    ['empty', '/v1/jobs/emails?tag=', 'tag'],
    ['10 000 characters', `/v1/jobs/emails?tag=${'x'.repeat(10_000)}`, 'tag'],
    ['two, joined by a comma', '/v1/jobs/emails?tag=a,b', 'tag'],
    ['missing, with no status', '/v1/jobs/emails?limit=5', 'status'],
  ])('a listing whose tag is %s is 400 naming it', async (_name, path, field) => {
    await define('emails');
    const response = await client().get(path);
    expect(response.status).toBe(400);
    expect(response.body.error.details).toEqual([expect.objectContaining({ field })]);
  });

  test('tags are fixed once enqueued: a PATCH naming them is 400', async () => {
    await define('emails');
    await client().put('/v1/jobs/emails/a', { tags: ['eu'] });
    const response = await client().patch('/v1/jobs/emails/a', { tags: ['us'] });
    expect(response.status).toBe(400);
    expect(response.body.error.details).toEqual([expect.objectContaining({ field: 'tags' })]);
  });

  test('the same id with other tags is another body: 409, and the job keeps its own', async () => {
    await define('emails');
    await client().put('/v1/jobs/emails/a', { tags: ['eu'] });
    expect((await client().put('/v1/jobs/emails/a', { tags: ['eu'] })).status).toBe(200);
    expect((await client().put('/v1/jobs/emails/a', { tags: ['us'] })).status).toBe(409);
    expect((await client().get('/v1/jobs/emails?tag=us')).body.jobs).toEqual([]);
    expect((await client().get('/v1/jobs/emails/a')).body.tags).toEqual(['eu']);
  });

  test('a batch enqueue carries each job\'s tags, and refuses only the item with a bad one', async () => {
    await define('emails');
    const response = await client().post('/v1/jobs/emails/batch', {
      jobs: [{ id: 'a', tags: ['campaign-9'] }, { id: 'b', tags: ['campaign-9', ''] }, { id: 'c', tags: ['campaign-9', 'vip'] }],
    });
    expect(response.body.results.map((result: { status: number }) => result.status)).toEqual([201, 400, 201]);
    expect(response.body.results[1].error.details).toEqual([expect.objectContaining({ field: 'jobs.1.tags.1' })]);
    expect((await client().get('/v1/jobs/emails?tag=campaign-9')).body.jobs.map((job: { id: string }) => job.id).sort()).toEqual(['a', 'c']);
  });

  test('a schedule carries tags into every job it makes: each fire\'s job is listed under them', async () => {
    await define('emails');
    const defined = await client().put('/v1/schedules/digest', { cron: '* * * * *', job_type: 'emails', tags: ['digest', 'nightly'] });
    expect(defined.body.tags).toEqual(['digest', 'nightly']);
    for (let fire = 0; fire < 2; fire++) {
      api().queue.clock.advance(60_000);
      await fireDueSchedules(api().queue.as('poller'), await listJobTypes(api().queue.ctx));
    }
    const listed = (await client().get('/v1/jobs/emails?tag=nightly')).body.jobs as { id: string; schedule: string; tags: string[] }[];
    expect(listed.map((job) => [job.schedule, job.tags])).toEqual([
      ['digest', ['digest', 'nightly']],
      ['digest', ['digest', 'nightly']],
    ]);
    expect(listed[0]!.id > listed[1]!.id).toBe(true);
  });

  test('a schedule with a bad tag is 400 naming it and writes nothing', async () => {
    await define('emails');
    const before = await tableItems(api().queue);
    const response = await client().put('/v1/schedules/digest', { cron: '* * * * *', job_type: 'emails', tags: ['ok', 'not ok'] });
    expect(response.status).toBe(400);
    expect(response.body.error.details).toEqual([expect.objectContaining({ field: 'tags.1' })]);
    expect(await tableItems(api().queue)).toEqual(before);
  });

  test('a replay carries the tags: it is listed under them beside the original', async () => {
    await define('emails');
    await client().put('/v1/jobs/emails/a', { tags: ['eu'] });
    api().queue.clock.advance(1_000);
    const replay = await client().post('/v1/jobs/emails/a/replay');
    expect(replay.body.tags).toEqual(['eu']);
    expect((await client().get('/v1/jobs/emails?tag=eu')).body.jobs.map((job: { id: string }) => job.id)).toEqual([replay.body.id, 'a']);
  });
});

describe('bulk operations by tag', () => {
  const api = freshApiPerTest();
  const client = (): ApiClient => api().api;
  const sweeperCtx = () => api().queue.as('sweeper');

  test('a bulk cancel with a tag cancels the queued jobs with the tag, and no other', async () => {
    expect((await client().put('/v1/job-types/emails', ECHO)).status).toBe(201);
    for (const [id, tags] of [['a', ['eu']], ['b', ['us']], ['c', ['eu', 'us']], ['d', []]] as const) {
      await client().put(`/v1/jobs/emails/${id}`, { tags, run_after: '2030-01-01T00:00:00Z' });
    }
    const started = await client().post('/v1/jobs/emails/bulk', { action: 'cancel', status: 'queued', tag: 'eu' });
    expect(started.status).toBe(202);
    expect(started.body).toMatchObject({ tag: 'eu', status: 'queued' });
    await runToEnd(sweeperCtx(), started.body.id);
    expect((await client().get(`/v1/operations/${started.body.id}`)).body).toMatchObject({ state: 'succeeded', matched: 2, done: 2 });
    const statuses = await Promise.all(['a', 'b', 'c', 'd'].map(async (id) => (await client().get(`/v1/jobs/emails/${id}`)).body.status));
    expect(statuses).toEqual(['cancelled', 'queued', 'cancelled', 'queued']);
  });

  test('a bulk retry with a tag replays the failed jobs with the tag, each once, and the replays carry the tag', async () => {
    expect((await client().put('/v1/job-types/emails', ECHO)).status).toBe(201);
    const emails = await requireJobType(api().queue.ctx, 'emails');
    const nowMs = api().queue.clock.nowMs();
    await seedFinished(api().queue, emails, [
      { id: 'f1', status: 'failed', finishedAtMs: nowMs - 3_000 },
      { id: 'f2', status: 'failed', finishedAtMs: nowMs - 2_000 },
    ]);
    // Tagged as an enqueue tags them: seeded jobs are written straight into the table.
    for (const id of ['f1', 'f2']) await retag(api().queue.ctx, emails, id, id === 'f1' ? ['eu'] : ['us']);
    const started = await client().post('/v1/jobs/emails/bulk', { action: 'retry', status: 'failed', tag: 'eu' });
    await runToEnd(sweeperCtx(), started.body.id);
    expect((await client().get(`/v1/operations/${started.body.id}`)).body).toMatchObject({ state: 'succeeded', matched: 1, done: 1 });
    const listed = (await client().get('/v1/jobs/emails?tag=eu')).body.jobs as { id: string; status: string; tags: string[] }[];
    expect(listed.map((job) => [job.status, job.tags])).toEqual([
      ['queued', ['eu']],
      ['failed', ['eu']],
    ]);
    expect((await client().get('/v1/jobs/emails?tag=us')).body.jobs.map((job: { status: string }) => job.status)).toEqual(['failed']);
  });

  test('a bulk operation with a bad tag is 400 naming tag and records nothing', async () => {
    expect((await client().put('/v1/job-types/emails', ECHO)).status).toBe(201);
    const before = await tableItems(api().queue);
    for (const tag of ['', 'x'.repeat(10_000), 'a#b', 7]) {
      const response = await client().post('/v1/jobs/emails/bulk', { action: 'cancel', status: 'queued', tag });
      expect(response.status).toBe(400);
      expect(response.body.error.details).toEqual([expect.objectContaining({ field: 'tag' })]);
    }
    expect(await tableItems(api().queue)).toEqual(before);
  });
});

test('a tagged job\'s lifecycle events carry its tags; an untagged job\'s carry none', async () => {
  const events = createMemoryPublisher();
  const queue = await createTestQueue({ events });
  try {
    const reports = await defineType(queue.ctx, 'reports');
    await enqueue(queue.ctx, reports, 'tagged', { tags: ['eu', 'vip'] });
    await enqueue(queue.ctx, reports, 'plain');
    for (const id of ['tagged', 'plain']) await cancelJob(queue.ctx, 'reports', id);
    expect(events.events.map(lifecycleEventDetail).map((detail) => [detail.id, detail.tags])).toEqual([
      ['tagged', ['eu', 'vip']],
      ['plain', undefined],
    ]);
  } finally {
    await queue.drop();
  }
});

describe('the typed client', () => {
  const api = freshApiPerTest();

  test('enqueues with tags, lists by tag (with a status or not, page by page) and starts a bulk cancel by tag', async () => {
    const server = await serveTestApi(api().queue);
    try {
      const client = createClient({ url: server.url, token: server.adminToken, sleep: async () => undefined });
      await client.defineType('emails', ECHO);
      for (const id of ['a', 'b', 'c']) {
        expect((await client.enqueue('emails', { tags: ['eu'] }, { id })).tags).toEqual(['eu']);
        api().queue.clock.advance(1_000);
      }
      await client.cancel('emails', 'b');
      const first = await client.list('emails', { tag: 'eu', limit: 2 });
      expect(first.jobs.map((job) => job.id)).toEqual(['c', 'b']);
      expect((await client.list('emails', { tag: 'eu', status: 'queued' })).jobs.map((job) => job.id)).toEqual(['c', 'a']);
      const ids: string[] = [];
      for await (const job of client.listAll('emails', { tag: 'eu', limit: 1 })) ids.push(job.id);
      expect(ids).toEqual(['c', 'b', 'a']);
      expect(await client.startBulk('emails', { action: 'cancel', status: 'queued', tag: 'eu' })).toMatchObject({ tag: 'eu', state: 'running' });
    } finally {
      await server.close();
    }
  });
});

/**
 * Gives a seeded finished job tags as an enqueue would have: the job holds them and each has its entry. The
 * job is written again whole, as it was, with the tags added.
 */
async function retag(ctx: QueueContext, jobType: JobType, id: string, tags: string[]): Promise<void> {
  const { Item } = await ctx.db.send(new GetCommand({ TableName: ctx.settings.tableName, Key: jobKey(jobType.name, id), ConsistentRead: true }));
  const job = { ...Item!, tags };
  await ctx.db.send(new PutCommand({ TableName: ctx.settings.tableName, Item: job }));
  for (const tag of tags) {
    const key = tagEntryKey(ctx.settings, { type: jobType.name, id, createdAtMs: Number(Item!.createdAtMs) }, tag);
    await ctx.db.send(new PutCommand({ TableName: ctx.settings.tableName, Item: key }));
  }
}
