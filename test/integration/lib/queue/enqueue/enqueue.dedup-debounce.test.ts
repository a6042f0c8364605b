/**
 * Dedup within a window and debounce (docs/guides/dedup-and-debounce.md): one job per key and window however many
 * enqueues, from however many api instances at once; a debounced job collects the enqueues made while it waits
 * and runs once, with the last data.
 */
import { describe, expect, inject, test } from 'vitest';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { claimJob } from '../../../../../lib/queue/attempt/claim.js';
import type { QueueContext } from '../../../../../lib/queue/context.js';
import { getJob } from '../../../../../lib/queue/read-job.js';
import { debounceItemKey, dedupItemKey } from '../../../../../lib/store/keys.js';
import type { Job, JobInput } from '../../../../../lib/domain/job.js';
import { MAX_DATA_BYTES } from '../../../../../lib/domain/job.js';
import { jsonBytes, utf8Bytes } from '../../../../../lib/domain/json-size.js';
import { PUT_EVENTS_MAX_BYTES } from '../../../../../lib/aws/eventbridge.js';
import { trackConsumedCapacity } from '../../../../../infra/local/aws/capacity-meter.js';
import { freshApiPerTest, itemsWithPk, tableItems } from '../../../../support/api.js';
import type { TestQueue } from '../../../../support/queue.js';
import { createClient } from '../../../../../lib/client/index.js';
import { serveTestApi } from '../../../../support/http-api.js';
import { defineType, enqueue, freshQueuePerTest, poll, RunningInvoker, T0 } from '../../../../support/lib-fixtures.js';
import { beforeCall } from '../../../../support/hold-calls.js';

const jobItems = async (queue: TestQueue, type: string) => (await tableItems(queue)).filter((item) => String(item.pk).startsWith(`JOB#${type}#`));

/** The api function's queue through a DynamoDB client of its own: what a second api instance sees. */
function apiInstance(queue: TestQueue): QueueContext {
  const clients = queue.iam.dynamoClientsFor('api', { endpoint: inject('dynamoEndpoint') });
  return { ...queue.as('api'), db: clients.db };
}

describe('dedup over HTTP', () => {
  const api = freshApiPerTest();
  const enqueueBody = (data: unknown, key = 'order-42', windowS = 600) => ({ data, dedup: { key, window_s: windowS } });

  test('a second enqueue with the key within the window creates nothing and answers 200 with the first job', async () => {
    const { api: client, queue } = api();
    await client.put('/v1/job-types/emails', { target: { kind: 'handler', name: 'echo' } });
    const first = await client.post('/v1/jobs/emails', enqueueBody({ n: 1 }));
    expect(first.status).toBe(201);
    expect(first.body.dedup).toEqual({ key: 'order-42', window_s: 600 });
    queue.clock.advance(599_000);
    const second = await client.post('/v1/jobs/emails', enqueueBody({ n: 2 }));
    expect(second.status).toBe(200);
    expect(second.body).toMatchObject({ id: first.body.id, data: { n: 1 } });
    expect(await jobItems(queue, 'emails')).toHaveLength(1);
  });

  test('the first job answers whatever its status, cancelled included', async () => {
    const { api: client } = api();
    await client.put('/v1/job-types/emails', { target: { kind: 'handler', name: 'echo' } });
    const first = await client.post('/v1/jobs/emails', enqueueBody(1));
    expect((await client.delete(`/v1/jobs/emails/${first.body.id}`)).status).toBe(200);
    const again = await client.post('/v1/jobs/emails', enqueueBody(2));
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ id: first.body.id, status: 'cancelled' });
  });

  test('an enqueue with an id of its own is answered with the first job, and its id stays unused', async () => {
    const { api: client } = api();
    await client.put('/v1/job-types/emails', { target: { kind: 'handler', name: 'echo' } });
    expect((await client.put('/v1/jobs/emails/a', enqueueBody(1))).status).toBe(201);
    const other = await client.put('/v1/jobs/emails/b', enqueueBody(2));
    expect(other.status).toBe(200);
    expect(other.body.id).toBe('a');
    expect((await client.get('/v1/jobs/emails/b')).status).toBe(404);
  });

  test('the same request again with its id is the idempotent repeat, and the same id with another body 409', async () => {
    const { api: client } = api();
    await client.put('/v1/job-types/emails', { target: { kind: 'handler', name: 'echo' } });
    expect((await client.put('/v1/jobs/emails/a', enqueueBody(1))).status).toBe(201);
    expect((await client.put('/v1/jobs/emails/a', enqueueBody(1))).status).toBe(200);
    expect((await client.put('/v1/jobs/emails/a', enqueueBody(1, 'another-key'))).status).toBe(409);
  });

  test('once the window has closed, the next enqueue with the key makes a new job and the key points at it', async () => {
    const { api: client, queue } = api();
    await client.put('/v1/job-types/emails', { target: { kind: 'handler', name: 'echo' } });
    const first = await client.post('/v1/jobs/emails', enqueueBody(1, 'k', 60));
    queue.clock.advance(60_000);
    const second = await client.post('/v1/jobs/emails', enqueueBody(2, 'k', 60));
    expect(second.status).toBe(201);
    expect(second.body.id).not.toBe(first.body.id);
    const third = await client.post('/v1/jobs/emails', enqueueBody(3, 'k', 60));
    expect(third).toMatchObject({ status: 200, body: { id: second.body.id } });
  });

  test('keys are per type: the same key on another type makes that type its own job', async () => {
    const { api: client } = api();
    for (const type of ['emails', 'texts']) await client.put(`/v1/job-types/${type}`, { target: { kind: 'handler', name: 'echo' } });
    const email = await client.post('/v1/jobs/emails', enqueueBody(1));
    const text = await client.post('/v1/jobs/texts', enqueueBody(1));
    expect(text.status).toBe(201);
    expect(text.body.id).not.toBe(email.body.id);
  });

  test('the pointer item records when the window closes and carries a TTL of that time', async () => {
    const { api: client, queue } = api();
    await client.put('/v1/job-types/emails', { target: { kind: 'handler', name: 'echo' } });
    const first = await client.post('/v1/jobs/emails', enqueueBody(1, 'k', 90));
    const [pointer] = await itemsWithPk(queue, dedupItemKey('emails', 'k').pk);
    expect(pointer).toMatchObject({ jobId: first.body.id, windowEndsAtMs: T0 + 90_000, purgeAtS: (T0 + 90_000) / 1000 });
  });

  test('a batch answers the later jobs with a key the first of them used with that first job', async () => {
    const { api: client, queue } = api();
    await client.put('/v1/job-types/emails', { target: { kind: 'handler', name: 'echo' } });
    const jobs = [{ id: 'a', ...enqueueBody(1) }, { id: 'b', ...enqueueBody(2) }, { id: 'c', data: 3 }];
    const { body } = await client.post('/v1/jobs/emails/batch', { jobs });
    expect(body.results.map((result: { status: number; job: { id: string } }) => [result.status, result.job.id])).toEqual([
      [201, 'a'],
      [200, 'a'],
      [201, 'c'],
    ]);
    expect(await jobItems(queue, 'emails')).toHaveLength(2);
  });
});

describe('dedup under concurrent enqueues', () => {
  const queue = freshQueuePerTest();

  test('forty enqueues with one key from two api instances at once make exactly one job, which every answer names', async () => {
    const jobType = await defineType(queue().ctx, 'emails');
    const instances = [apiInstance(queue()), apiInstance(queue())];
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        enqueue(instances[i % 2]!, jobType, `job-${i}`, { data: { i }, dedup: { key: 'burst', windowS: 60 } }),
      ),
    );
    expect(answers.filter((answer) => answer.created)).toHaveLength(1);
    expect(new Set(answers.map((answer) => answer.job.id)).size).toBe(1);
    expect(await jobItems(queue(), 'emails')).toHaveLength(1);
  });
});

describe('debounce over HTTP', () => {
  const api = freshApiPerTest();
  const body = (data: unknown, debounce: Record<string, unknown> = { key: 'user-7', delay_s: 10, max_wait_s: 60 }) => ({ data, debounce });

  test('enqueues while the job waits replace its data and move its run_after delay_s after the latest, each answering that job', async () => {
    const { api: client, queue } = api();
    await client.put('/v1/job-types/sync', { target: { kind: 'handler', name: 'echo' } });
    const first = await client.post('/v1/jobs/sync', body({ v: 1 }));
    expect(first.status).toBe(201);
    expect(first.body).toMatchObject({ run_after: new Date(T0 + 10_000).toISOString(), debounce: { key: 'user-7', delay_s: 10, max_wait_s: 60 }, debounce_count: 0 });
    queue.clock.advance(5_000);
    const second = await client.post('/v1/jobs/sync', body({ v: 2 }));
    expect(second.status).toBe(200);
    expect(second.body).toMatchObject({ id: first.body.id, data: { v: 2 }, run_after: new Date(T0 + 15_000).toISOString(), debounce_count: 1 });
    expect(await jobItems(queue, 'sync')).toHaveLength(1);
  });

  test('an enqueue that folds into the waiting job writes no tag entries: the job keeps the tags of its first enqueue', async () => {
    const { api: client, queue } = api();
    await client.put('/v1/job-types/sync', { target: { kind: 'handler', name: 'echo' } });
    const first = await client.post('/v1/jobs/sync', { ...body({ v: 1 }), tags: ['eu'] });
    const tagEntries = async () => (await tableItems(queue)).filter((item) => String(item.pk).startsWith('TAG#')).map((item) => String(item.sk));
    const entriesOfFirst = await tagEntries();
    queue.clock.advance(1_000);
    const folded = await client.post('/v1/jobs/sync', { ...body({ v: 2 }), tags: ['us', 'vip'] });
    expect(folded.status).toBe(200);
    expect(folded.body).toMatchObject({ id: first.body.id, data: { v: 2 }, tags: ['eu'] });
    expect(await tagEntries()).toEqual(entriesOfFirst);
  });

  test('run_after never moves past max_wait_s after the first enqueue', async () => {
    const { api: client, queue } = api();
    await client.put('/v1/job-types/sync', { target: { kind: 'handler', name: 'echo' } });
    const first = await client.post('/v1/jobs/sync', body(0));
    let last = first;
    for (let i = 1; i <= 7; i++) {
      queue.clock.advance(9_000);
      last = await client.post('/v1/jobs/sync', body(i));
    }
    expect(last.body).toMatchObject({ id: first.body.id, data: 7, run_after: new Date(T0 + 60_000).toISOString(), debounce_count: 7 });
  });

  test('data that would take the job over the size limit is 413 naming data, and the waiting job keeps its own', async () => {
    const { api: client, queue } = api();
    await client.put('/v1/job-types/sync', { target: { kind: 'handler', name: 'echo' } });
    const first = await client.post('/v1/jobs/sync', body('small'));
    const before = await tableItems(queue);
    const tooLarge = await client.post('/v1/jobs/sync', body('x'.repeat(MAX_DATA_BYTES)));
    expect(tooLarge.status).toBe(413);
    expect(tooLarge.body.error.details).toEqual([expect.objectContaining({ field: 'data' })]);
    expect(await tableItems(queue)).toEqual(before);
    expect((await client.get(`/v1/jobs/sync/${first.body.id}`)).body.data).toBe('small');
  });

  test("for an eventbridge type, data whose event would not fit the waiting job's envelope is 413 naming data, and the job keeps its own", async () => {
    const { api: client } = api();
    const target = { kind: 'eventbridge', bus: 'orders', detail_type: 'order.due', source: 'shop' };
    await client.put('/v1/job-types/events', { target, attempts: 100 });
    const waitingId = 'w'.repeat(128);
    expect((await client.put(`/v1/jobs/events/${waitingId}`, body('small'))).status).toBe(201);
    // The most data whose event fits beside a server-assigned id (job_ and 26 characters), so the folding
    // enqueue passes its own check, yet not beside the waiting job's id of 128 characters.
    const envelopeBytes = jsonBytes({ id: `job_${'0'.repeat(26)}`, type: 'events', attempt: 100, data: '' }) - 2;
    const room = PUT_EVENTS_MAX_BYTES - 1 - 14 - utf8Bytes('shop') - utf8Bytes('order.due') - envelopeBytes;
    const folded = await client.post('/v1/jobs/events', body('x'.repeat(room - 2)));
    expect(folded.status).toBe(413);
    expect(folded.body.error.details).toEqual([expect.objectContaining({ field: 'data' })]);
    expect((await client.get(`/v1/jobs/events/${waitingId}`)).body).toMatchObject({ data: 'small', debounce_count: 0 });
  });

  test('the pointer item expires by TTL a retention period after the longest the job may wait', async () => {
    const { api: client, queue } = api();
    await client.put('/v1/job-types/sync', { target: { kind: 'handler', name: 'echo' } });
    await client.post('/v1/jobs/sync', body(1));
    const [pointer] = await itemsWithPk(queue, debounceItemKey('sync', 'user-7').pk);
    expect(pointer?.purgeAtS).toBe((T0 + 60_000) / 1000 + 30 * 86_400);
  });

  test('in a batch, the jobs with one key fold into the first, which keeps the last data', async () => {
    const { api: client, queue } = api();
    await client.put('/v1/job-types/sync', { target: { kind: 'handler', name: 'echo' } });
    const { body: answer } = await client.post('/v1/jobs/sync/batch', { jobs: [1, 2, 3].map((v) => body(v)) });
    const ids = answer.results.map((result: { job: { id: string } }) => result.job.id);
    expect(new Set(ids).size).toBe(1);
    expect(answer.results.map((result: { status: number }) => result.status)).toEqual([201, 200, 200]);
    expect((await client.get(`/v1/jobs/sync/${ids[0]}`)).body).toMatchObject({ data: 3, debounce_count: 2 });
    expect(await jobItems(queue, 'sync')).toHaveLength(1);
  });
});

describe('debounce with the poller', () => {
  const queue = freshQueuePerTest();
  const debounce = { key: 'user-7', delayS: 10, maxWaitS: 60 };

  test('the job runs once, with the last data', async () => {
    const jobType = await defineType(queue().ctx, 'sync');
    const ctx = queue().as('api');
    const { job } = await enqueue(ctx, jobType, 'first', { data: 1, debounce });
    for (const data of [2, 3]) {
      queue().clock.advance(1_000);
      await enqueue(ctx, jobType, `job-${data}`, { data, debounce });
    }
    queue().clock.advance(10_000);
    const invoker = new RunningInvoker(queue().ctx, { sync: (data) => data });
    expect((await poll(queue().ctx, [jobType], invoker)).claimed).toBe(1);
    expect(await getJob(queue().ctx, 'sync', job.id)).toMatchObject({ status: 'succeeded', attempt: 1, result: 3, history: [expect.anything()] });
    expect(await jobItems(queue(), 'sync')).toHaveLength(1);
  });

  test('an enqueue after the job was claimed starts a new debounced job, which the key then points at', async () => {
    const jobType = await defineType(queue().ctx, 'sync');
    const ctx = queue().as('api');
    const { job: first } = await enqueue(ctx, jobType, 'first', { data: 1, debounce });
    queue().clock.advance(10_000);
    expect((await claimJob(queue().as('poller'), first, jobType)).kind).toBe('claimed');
    const next = await enqueue(ctx, jobType, 'second', { data: 2, debounce });
    expect(next).toMatchObject({ created: true, job: { id: 'second', data: 2 } });
    expect((await enqueue(ctx, jobType, 'third', { data: 3, debounce })).job).toMatchObject({ id: 'second', data: 3 });
    expect(await getJob(queue().ctx, 'sync', 'first')).toMatchObject({ status: 'running', data: 1 });
  });

  test('a claim landing between an enqueue reading the waiting job and folding into it wins: the enqueue makes the next job', async () => {
    const jobType = await defineType(queue().ctx, 'sync');
    const producer = apiInstance(queue());
    await enqueue(producer, jobType, 'first', { data: 1, debounce });
    queue().clock.advance(10_000);
    let claim: Awaited<ReturnType<typeof claimJob>> | undefined;
    const clients = queue().iam.dynamoClientsFor('api', { endpoint: inject('dynamoEndpoint') });
    beforeCall(
      clients.base,
      ({ commandName, input }) => commandName === 'UpdateItemCommand' && JSON.stringify(input).includes('debounceCount'),
      async () => {
        claim = await claimJob(queue().as('poller'), { type: 'sync', id: 'first' }, jobType);
      },
    );
    const racing = { ...producer, db: clients.db };
    const answer = await enqueue(racing, jobType, 'second', { data: 2, debounce });
    expect(claim?.kind).toBe('claimed');
    expect(answer).toMatchObject({ created: true, job: { id: 'second', data: 2, status: 'queued' } });
    expect(await getJob(queue().ctx, 'sync', 'first')).toMatchObject({ status: 'running', data: 1 });
  });

  test('forty enqueues with one key from two api instances at once make exactly one job, holding one of their data', async () => {
    const jobType = await defineType(queue().ctx, 'sync');
    const instances = [apiInstance(queue()), apiInstance(queue())];
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, i) => enqueue(instances[i % 2]!, jobType, `job-${i}`, { data: i, debounce })),
    );
    expect(answers.filter((answer) => answer.created)).toHaveLength(1);
    const ids = new Set(answers.map((answer) => answer.job.id));
    expect(ids.size).toBe(1);
    const [job] = await jobItems(queue(), 'sync');
    expect(job).toMatchObject({ debounceCount: 39 });
    expect((await jobItems(queue(), 'sync')).length).toBe(1);
    // Each fold lands whole, one after another: the one that counted the 39th fold was the last, and its data stays.
    const foldCounts = answers.map((answer) => answer.job.debounceCount ?? 0);
    expect([...foldCounts].sort((a, b) => a - b)).toEqual(Array.from({ length: 40 }, (_, i) => i));
    const last = foldCounts.indexOf(39);
    const stored = (await getJob(queue().ctx, 'sync', [...ids][0]!)) as Job;
    expect(stored.data).toBe(last);
  });
});

describe('hostile inputs', () => {
  const api = freshApiPerTest();
  const cases: [string, Record<string, unknown>, string][] = [
    ['an empty dedup key', { dedup: { key: '', window_s: 60 } }, 'dedup.key'],
    ['a dedup key of 257 characters', { dedup: { key: 'k'.repeat(257), window_s: 60 } }, 'dedup.key'],
    ['a dedup key with a control character', { dedup: { key: 'a\u0000b', window_s: 60 } }, 'dedup.key'],
    ['a dedup key with an unpaired surrogate', { dedup: { key: 'a\ud800', window_s: 60 } }, 'dedup.key'],
    ['a huge window', { dedup: { key: 'k', window_s: 1e12 } }, 'dedup.window_s'],
    ['a window longer than finished jobs are kept', { dedup: { key: 'k', window_s: 31 * 86_400 } }, 'dedup.window_s'],
    ['a window of 0', { dedup: { key: 'k', window_s: 0 } }, 'dedup.window_s'],
    ['a fractional window', { dedup: { key: 'k', window_s: 1.5 } }, 'dedup.window_s'],
    ['a dedup without a window', { dedup: { key: 'k' } }, 'dedup.window_s'],
    ['an empty debounce key', { debounce: { key: '', delay_s: 1 } }, 'debounce.key'],
    ['a debounce key of 257 characters', { debounce: { key: 'k'.repeat(257), delay_s: 1 } }, 'debounce.key'],
    ['a huge delay', { debounce: { key: 'k', delay_s: 1e12 } }, 'debounce.delay_s'],
    ['a negative delay', { debounce: { key: 'k', delay_s: -1 } }, 'debounce.delay_s'],
    ['a huge max wait', { debounce: { key: 'k', delay_s: 1, max_wait_s: 1e12 } }, 'debounce.max_wait_s'],
    ['a max wait shorter than the delay', { debounce: { key: 'k', delay_s: 10, max_wait_s: 5 } }, 'debounce.max_wait_s'],
    ['dedup and debounce together', { dedup: { key: 'k', window_s: 60 }, debounce: { key: 'k', delay_s: 1 } }, 'debounce'],
    ['dedup with a correlation key', { dedup: { key: 'k', window_s: 60 }, correlation_key: 'c' }, 'dedup'],
    ['debounce with a correlation key', { debounce: { key: 'k', delay_s: 1 }, correlation_key: 'c' }, 'debounce'],
    ['debounce with run_after', { debounce: { key: 'k', delay_s: 1 }, run_after: '2026-11-22T00:00:00Z' }, 'run_after'],
    ['debounce with expires_at', { debounce: { key: 'k', delay_s: 1 }, expires_at: '2026-11-22T00:00:00Z' }, 'expires_at'],
    ['an unknown dedup field', { dedup: { key: 'k', window_s: 60, extend: true } }, 'dedup.extend'],
  ];

  test.each(cases)('%s is 400 naming the field, and nothing is written', async (_name, extra, field) => {
    const { api: client, queue } = api();
    await client.put('/v1/job-types/emails', { target: { kind: 'handler', name: 'echo' } });
    const before = await tableItems(queue);
    const answer = await client.post('/v1/jobs/emails', { data: 1, ...extra });
    expect(answer.status).toBe(400);
    expect(answer.body.error.details.map((issue: { field: string }) => issue.field)).toContain(field);
    expect(await tableItems(queue)).toEqual(before);
  });

  test.each(['__proto__', 'constructor', 'hasOwnProperty'])('%s is a key like any other, for dedup and for debounce', async (key) => {
    const { api: client } = api();
    await client.put('/v1/job-types/emails', { target: { kind: 'handler', name: 'echo' } });
    const first = await client.post('/v1/jobs/emails', { data: 1, dedup: { key, window_s: 60 } });
    expect((await client.post('/v1/jobs/emails', { data: 2, dedup: { key, window_s: 60 } })).body.id).toBe(first.body.id);
    const debounced = await client.post('/v1/jobs/emails', { data: 1, debounce: { key, delay_s: 5 } });
    expect((await client.post('/v1/jobs/emails', { data: 2, debounce: { key, delay_s: 5 } })).body).toMatchObject({ id: debounced.body.id, data: 2 });
  });

  test('a key of 256 characters of four UTF-8 bytes each is accepted', async () => {
    const { api: client } = api();
    await client.put('/v1/job-types/emails', { target: { kind: 'handler', name: 'echo' } });
    expect((await client.post('/v1/jobs/emails', { dedup: { key: '😀'.repeat(128), window_s: 60 } })).status).toBe(201);
  });
});

describe('the typed client', () => {
  const queue = freshQueuePerTest();

  test('sends dedup and debounce and reads them back; a dedup POST whose answer was lost is sent again and answered with its job', async () => {
    const server = await serveTestApi(queue());
    try {
      let posts = 0;
      const losingFirstAnswer: typeof fetch = async (input, init) => {
        const answer = await fetch(input, init);
        if (init?.method === 'POST' && ++posts === 1) throw new TypeError('fetch failed: socket hang up');
        return answer;
      };
      const client = createClient({ url: server.url, token: server.adminToken, fetch: losingFirstAnswer, sleep: async () => undefined });
      await client.defineType('emails', { target: { kind: 'handler', name: 'echo' } });
      const job = await client.enqueue('emails', { data: 1, dedup: { key: 'order-42', window_s: 600 } });
      expect(posts).toBe(2);
      expect(job.dedup).toEqual({ key: 'order-42', window_s: 600 });
      expect(await jobItems(queue(), 'emails')).toHaveLength(1);
      const debounced = await client.enqueue('emails', { data: 1, debounce: { key: 'user-7', delay_s: 5 } });
      expect(debounced).toMatchObject({ debounce: { key: 'user-7', delay_s: 5, max_wait_s: null }, debounce_count: 0 });
    } finally {
      await server.close();
    }
  });
});

/**
 * Counts the write units of every call that writes a job or a key's pointer. The bucket directory's records, the
 * cursors' moves and the start records are left out: one per bucket, poll or batch, whatever the jobs hold.
 */
function trackJobWrites(client: DynamoDBClient, totals: { units: number }): void {
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as Record<string, unknown>;
      input.ReturnConsumedCapacity = 'TOTAL';
      const result = await next(args);
      const isWrite = /^(PutItem|UpdateItem|DeleteItem|TransactWriteItems)Command$/.test(context.commandName ?? '');
      if (!isWrite || /"(CURSOR|DIR|START)#/.test(JSON.stringify(input))) return result;
      const consumed = [(result.output as { ConsumedCapacity?: { CapacityUnits?: number } | { CapacityUnits?: number }[] }).ConsumedCapacity ?? []].flat();
      for (const entry of consumed) totals.units += entry.CapacityUnits ?? 0;
      return result;
    },
    { step: 'initialize', name: 'trackJobWrites' },
  );
}

describe('capacity', () => {
  const queue = freshQueuePerTest();

  test('a dedup or debounce enqueue that makes a job costs 6 write units instead of 2, a duplicate none, a fold 1 (3 when it moves the job)', async () => {
    const jobType = await defineType(queue().ctx, 'echo');
    const capacity = trackConsumedCapacity(queue().clientsOf('api').base);
    const ctx = queue().as('api');
    /** Write units of the enqueue, besides the bucket directory's record (one per lane bucket, not per job). */
    const units = async (enqueueOnce: () => Promise<unknown>) => {
      const before = capacity.writeUnits - capacity.directoryWrites;
      await enqueueOnce();
      return capacity.writeUnits - capacity.directoryWrites - before;
    };
    const data = { text: 'x'.repeat(150) };
    const dedup = { key: 'k', windowS: 60 };
    const debounce = { key: 'k', delayS: 10 };
    const measured = {
      plain: await units(() => enqueue(ctx, jobType, 'plain', { data })),
      deduped: await units(() => enqueue(ctx, jobType, 'deduped', { data, dedup })),
      duplicate: await units(() => enqueue(ctx, jobType, 'duplicate', { data, dedup })),
      debounced: await units(() => enqueue(ctx, jobType, 'debounced', { data, debounce })),
      foldedInPlace: await units(() => enqueue(ctx, jobType, 'folded', { data, debounce })),
      foldedLater: await units(async () => {
        queue().clock.advance(1_000);
        await enqueue(ctx, jobType, 'folded-later', { data, debounce });
      }),
    };
    // The job and its key's pointer in one transaction, which DynamoDB bills twice; the rest of a job's life as before.
    expect(measured).toEqual({ plain: 2, deduped: 6, duplicate: 0, debounced: 6, foldedInPlace: 1, foldedLater: 3 });
  });

  test('from enqueue to success, a job with a dedup or debounce key costs 11 write units where one without costs 7', async () => {
    const JOBS = 20;
    const jobType = await defineType(queue().ctx, 'echo');
    const writes = { units: 0 };
    for (const fn of ['api', 'poller', 'worker'] as const) trackJobWrites(queue().clientsOf(fn).base, writes);
    /** Write units per job of JOBS enqueued with `keyed(i)` and run to success. */
    const unitsPerJob = async (name: string, keyed: (i: number) => Partial<JobInput>) => {
      const before = writes.units;
      const ids = [];
      for (let i = 0; i < JOBS; i++) ids.push((await enqueue(queue().as('api'), jobType, `${name}-${i}`, { data: { text: 'x'.repeat(150) }, ...keyed(i) })).job.id);
      queue().clock.advance(60_000);
      const invoker = new RunningInvoker(queue().ctx, { echo: (data) => data });
      while ((await poll(queue().ctx, [jobType], invoker)).claimed > 0);
      for (const id of ids) expect((await getJob(queue().ctx, 'echo', id))?.status).toBe('succeeded');
      return (writes.units - before) / JOBS;
    };
    const perJob = {
      plain: await unitsPerJob('plain', () => ({})),
      deduped: await unitsPerJob('deduped', (i) => ({ dedup: { key: `order-${i}`, windowS: 60 } })),
      debounced: await unitsPerJob('debounced', (i) => ({ debounce: { key: `user-${i}`, delayS: 10 } })),
    };
    // Enqueue 2, claim 3, success 2; with a key the enqueue is the job and its pointer in one transaction, 6.
    expect(perJob).toEqual({ plain: 7, deduped: 11, debounced: 11 });
  });
});
