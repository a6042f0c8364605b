/**
 * What AWS would refuse for size, on DynamoDB Local (which enforces the 400 KB item limit itself): a job with
 * every field at its cap at once, a listing page of large jobs under Lambda's 6 MB answer, and data that an
 * `eventbridge` target could never put.
 */
import { describe, expect, test } from 'vitest';
import type { QueueContext } from '../../../../lib/queue/context.js';
import { claimJob } from '../../../../lib/queue/attempt/claim.js';
import { changeQueuedJob } from '../../../../lib/queue/enqueue/change-waiting-job.js';
import { listJobs } from '../../../../lib/queue/read/list-jobs.js';
import { getJob } from '../../../../lib/queue/read-job.js';
import { cancelJob } from '../../../../lib/queue/attempt/cancel.js';
import { AWAIT_CALLBACK, runClaimedJob, type JobHandler } from '../../../../lib/queue/attempt/run-batch.js';
import { completeFromCallback } from '../../../../lib/queue/attempt/callbacks.js';
import { MAX_DATA_BYTES, MAX_ERROR_MESSAGE_BYTES, MAX_RESULT_BYTES, MAX_TRACE_BYTES } from '../../../../lib/domain/job.js';
import type { Job, JobStatus } from '../../../../lib/domain/job.js';
import type { JobType } from '../../../../lib/domain/job-type.js';
import { dynamoItemBytes, jsonBytes, utf8Bytes } from '../../../../lib/domain/json-size.js';
import { MAX_PROGRESS_BYTES, type ProgressReport } from '../../../../lib/domain/progress.js';
import { MAX_TAGS } from '../../../../lib/domain/tags.js';
import { JOB_ITEM_BUDGET_BYTES } from '../../../../lib/store/job-writes.js';
import { PUT_EVENTS_MAX_BYTES } from '../../../../lib/aws/eventbridge.js';
import { freshApiPerTest } from '../../../support/api.js';
import { defineType, enqueue, freshQueuePerTest, readItem, WORKER } from '../../../support/lib-fixtures.js';
import type { TestQueue } from '../../../support/queue.js';

/** A JSON string of exactly `bytes` bytes once serialised (its quotes included). */
const jsonStringOf = (bytes: number) => 'x'.repeat(bytes - 2);

/** A progress report of exactly MAX_PROGRESS_BYTES. */
function progressAtCap(): ProgressReport {
  const report = { percent: 50, message: 'm'.repeat(1_000), data: '' };
  return { ...report, data: jsonStringOf(MAX_PROGRESS_BYTES - jsonBytes(report) + 2) };
}

/** Runs up to `runs` attempts of the job one after another, each claimed as a poller would, until one is not retried. */
async function runAttempts(queue: TestQueue, jobType: JobType, id: string, handler: JobHandler, runs = jobType.attempts): Promise<string[]> {
  const registry = { handlers: { [jobType.name]: handler }, retryPolicies: {} };
  const outcomes: string[] = [];
  for (let attempt = 1; attempt <= runs; attempt++) {
    const claim = await claimJob(queue.ctx, { type: jobType.name, id }, jobType);
    if (claim.kind !== 'claimed') throw new Error(`attempt ${attempt} not claimed: ${claim.kind}`);
    const outcome = await runClaimedJob(queue.as('worker'), claim.job, jobType, { registry, worker: WORKER });
    outcomes.push(outcome);
    if (outcome !== 'retrying') break;
  }
  return outcomes;
}

/** Every call on the test's and the worker's clients that DynamoDB refused as too large, by its error message. */
function watchSizeRefusals(queue: TestQueue): string[] {
  const refusals: string[] = [];
  for (const client of [queue.clients.base, queue.clientsOf('worker').base]) {
    client.middlewareStack.add(
      (next) => async (args) => {
        try {
          return await next(args);
        } catch (error) {
          if (error instanceof Error && /size/i.test(error.message)) refusals.push(`${error.name}: ${error.message}`);
          throw error;
        }
      },
      { step: 'initialize', name: 'watchSizeRefusals' },
    );
  }
  return refusals;
}

async function storedJob(queue: TestQueue, type: string, id: string): Promise<Job> {
  const job = await getJob(queue.ctx, type, id);
  if (!job) throw new Error(`job ${type}/${id} is gone`);
  return job;
}

describe('a job item within DynamoDB’s 400 KB', () => {
  const queue = freshQueuePerTest();
  const retriedType = (ctx: QueueContext, name: string, attempts: number) =>
    defineType(ctx, name, { attempts, retry: { kind: 'fixed', delay_s: 0 } });

  test('a job with every field at its cap at once succeeds on its last attempt without any write refused for size', async () => {
    const jobType = await retriedType(queue().ctx, 'full', 25);
    const refusals = watchSizeRefusals(queue());
    const tags = Array.from({ length: MAX_TAGS }, (_, i) => String(i).padEnd(64, 't'));
    await enqueue(queue().ctx, jobType, 'full-1', { data: jsonStringOf(MAX_DATA_BYTES), tags });
    const result = jsonStringOf(MAX_RESULT_BYTES);
    const outcomes = await runAttempts(queue(), jobType, 'full-1', async (_data, context) => {
      await context.progress(progressAtCap());
      if (context.job.attempt < 25) {
        const error = new Error('e'.repeat(20_000));
        error.stack = 's'.repeat(50_000);
        throw error;
      }
      return result;
    });
    expect(outcomes).toEqual([...Array<string>(24).fill('retrying'), 'succeeded']);
    const job = await storedJob(queue(), 'full', 'full-1');
    expect(job).toMatchObject({ status: 'succeeded', attempt: 25, result, progress: expect.objectContaining({ percent: 50 }) });
    // Each failure the history kept is the handler's own, cut to its cap, not a write's refusal.
    for (const entry of job.history.slice(0, -1)) expect(entry.error).toMatchObject({ class: 'Error', message: expect.stringMatching(/^e+…$/), trace: expect.stringMatching(/^s+…$/) });
    expect(refusals).toEqual([]);
    expect(dynamoItemBytes((await readItem(queue(), 'full', 'full-1'))!)).toBeLessThanOrEqual(JOB_ITEM_BUDGET_BYTES);
  });

  test('a retried job whose item is full still takes a full list of changes, then its result at its cap', async () => {
    const { ctx, clock } = queue();
    const jobType = await retriedType(ctx, 'patched', 25);
    await enqueue(ctx, jobType, 'patched-1', { data: jsonStringOf(MAX_DATA_BYTES) });
    const failing: JobHandler = async (_data, context) => {
      await context.progress(progressAtCap());
      throw new Error('e'.repeat(20_000));
    };
    expect(await runAttempts(queue(), jobType, 'patched-1', failing, 24)).toEqual(Array<string>(24).fill('retrying'));
    for (let change = 1; change <= 25; change++) {
      const runAfterMs = clock.nowMs() + change * 1_000;
      await changeQueuedJob(ctx, jobType, 'patched-1', { runAfter: runAfterMs, priority: change, expiresAtMs: runAfterMs + 86_400_000 }, 'f'.repeat(16));
    }
    clock.advance(26_000);
    const result = jsonStringOf(MAX_RESULT_BYTES);
    expect(await runAttempts(queue(), jobType, 'patched-1', () => result)).toEqual(['succeeded']);
    expect(await storedJob(queue(), 'patched', 'patched-1')).toMatchObject({ status: 'succeeded', attempt: 25, result, changeCount: 25 });
  });

  test('a status callback’s result at its cap completes a job whose item is otherwise full', async () => {
    const { ctx } = queue();
    const jobType = await retriedType(ctx, 'called-back', 25);
    await enqueue(ctx, jobType, 'cb-1', { data: jsonStringOf(MAX_DATA_BYTES) });
    const outcomes = await runAttempts(queue(), jobType, 'cb-1', async (_data, context) => {
      await context.progress(progressAtCap());
      if (context.job.attempt < 25) throw new Error('e'.repeat(20_000));
      return AWAIT_CALLBACK;
    });
    expect(outcomes.at(-1)).toBe('awaiting_callback');
    const result = jsonStringOf(MAX_RESULT_BYTES);
    const completed = await completeFromCallback(queue().as('api'), jobType, 'cb-1', { status: 'succeeded', attempt: 25, result }, {});
    expect(completed).toMatchObject({ status: 'succeeded', result });
  });

  test('the history keeps the newest attempts that fit, and counts the older ones it dropped', async () => {
    const jobType = await retriedType(queue().ctx, 'trimmed', 25);
    await enqueue(queue().ctx, jobType, 'trimmed-1', { data: jsonStringOf(MAX_DATA_BYTES) });
    await runAttempts(queue(), jobType, 'trimmed-1', (_data, context) => {
      if (context.job.attempt < 25) throw new Error('e'.repeat(20_000));
      return jsonStringOf(MAX_RESULT_BYTES);
    });
    const job = await storedJob(queue(), 'trimmed', 'trimmed-1');
    const attempts = job.history.map((entry) => entry.attempt);
    expect(job.historyDropped).toBeGreaterThan(0);
    expect(job.historyDropped + job.history.length).toBe(25);
    expect(attempts).toEqual(Array.from({ length: job.history.length }, (_, index) => job.historyDropped + 1 + index));
  });

  test('error messages and traces are kept to their bytes in any script, so a history of long ones fits beside 256 KiB of data', async () => {
    const jobType = await retriedType(queue().ctx, 'euro', 30);
    await enqueue(queue().ctx, jobType, 'euro-1', { data: jsonStringOf(MAX_DATA_BYTES) });
    const outcomes = await runAttempts(queue(), jobType, 'euro-1', () => {
      const error = new Error('€'.repeat(20_000));
      error.stack = '€'.repeat(50_000);
      throw error;
    });
    expect(outcomes.at(-1)).toBe('failed');
    const job = await storedJob(queue(), 'euro', 'euro-1');
    expect(job).toMatchObject({ status: 'failed', attempt: 30 });
    for (const { error } of job.history) {
      expect(utf8Bytes(error!.message)).toBeLessThanOrEqual(MAX_ERROR_MESSAGE_BYTES);
      expect(utf8Bytes(error!.trace!)).toBeLessThanOrEqual(MAX_TRACE_BYTES);
      expect(error!.message).toMatch(/^€+…$/);
    }
  });
});

describe('listing pages within Lambda’s 6 MB answer', () => {
  const fixture = freshApiPerTest();
  const LAMBDA_ANSWER_LIMIT_BYTES = 6 * 1024 * 1024;

  test('a page of 25 jobs of 250 KiB data is answered under 6 MB, and paging reaches every job', async () => {
    const { queue, api } = fixture();
    const jobType = await defineType(queue.ctx, 'bulky');
    const ids = Array.from({ length: 25 }, (_, index) => `bulky-${String(index).padStart(2, '0')}`);
    for (const [index, id] of ids.entries()) {
      await enqueue(queue.ctx, jobType, id, { data: jsonStringOf(250 * 1024), runAfterMs: queue.clock.nowMs() + index });
    }
    const listed: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const response = await api.get(`/v1/jobs/bulky?status=queued&limit=25${cursor ? `&cursor=${cursor}` : ''}`);
      expect(response.status).toBe(200);
      // What Lambda sends back: the answer with its body as a JSON string.
      const answerBytes = utf8Bytes(JSON.stringify({ statusCode: response.status, headers: response.headers, body: response.text }));
      expect(answerBytes).toBeLessThan(LAMBDA_ANSWER_LIMIT_BYTES);
      listed.push(...response.body.jobs.map((job: { id: string }) => job.id));
      cursor = response.body.next_cursor;
      pages++;
    } while (cursor !== null && pages < 10);
    expect(pages).toBeGreaterThan(1);
    expect(listed).toEqual(ids);
  });
});

describe('listing pages bounded by bytes', () => {
  const queue = freshQueuePerTest();

  /** Every page with each job counted as its data's bytes, at most `maxBytes` a page. */
  async function pagesOf(jobType: JobType, status: JobStatus, maxBytes: number): Promise<string[][]> {
    const pages: string[][] = [];
    let cursor: string | undefined;
    do {
      const page = await listJobs(queue().ctx, jobType, {
        status,
        limit: 100,
        ...(cursor ? { cursor } : {}),
        bytes: { bytesOf: (job) => jsonBytes(job.data), maxBytes },
      });
      pages.push(page.jobs.map((job) => job.id));
      cursor = page.nextCursor;
    } while (cursor && pages.length < 100);
    return pages;
  }

  test('queued jobs come in pages that stop before the budget, each going on exactly after the last job it holds', async () => {
    const { ctx, clock } = queue();
    const jobType = await defineType(ctx, 'queued-pages');
    const ids = Array.from({ length: 9 }, (_, index) => `q-${index}`);
    for (const [index, id] of ids.entries()) await enqueue(ctx, jobType, id, { data: jsonStringOf(1_000), runAfterMs: clock.nowMs() + index });
    const pages = await pagesOf(jobType, 'queued', 2_500);
    expect(pages).toEqual([
      ['q-0', 'q-1'],
      ['q-2', 'q-3'],
      ['q-4', 'q-5'],
      ['q-6', 'q-7'],
      ['q-8'],
    ]);
  });

  test('finished jobs are paged by bytes too, newest first, every job once', async () => {
    const { ctx, clock } = queue();
    const jobType = await defineType(ctx, 'cancelled-pages');
    const ids = Array.from({ length: 7 }, (_, index) => `c-${index}`);
    for (const id of ids) {
      await enqueue(ctx, jobType, id, { data: jsonStringOf(1_000) });
      clock.advance(1);
      await cancelJob(ctx, 'cancelled-pages', id);
    }
    const pages = await pagesOf(jobType, 'cancelled', 3_500);
    expect(pages.map((page) => page.length)).toEqual([3, 3, 1]);
    expect(pages.flat()).toEqual([...ids].reverse());
  });

  test('a job larger than the budget alone still gets a page of its own', async () => {
    const { ctx, clock } = queue();
    const jobType = await defineType(ctx, 'one-big');
    await enqueue(ctx, jobType, 'big', { data: jsonStringOf(5_000), runAfterMs: clock.nowMs() });
    await enqueue(ctx, jobType, 'small', { data: jsonStringOf(100), runAfterMs: clock.nowMs() + 1 });
    expect(await pagesOf(jobType, 'queued', 1_000)).toEqual([['big'], ['small']]);
  });
});

describe('an eventbridge type’s data', () => {
  const fixture = freshApiPerTest();
  const target = { kind: 'eventbridge', bus: 'orders', detail_type: 'order.due', source: 'shop' };

  test('data whose event could not be put is refused at enqueue with 413 naming data, and nothing is stored', async () => {
    const { api } = fixture();
    expect((await api.put('/v1/job-types/events', { target })).status).toBe(201);
    const response = await api.put('/v1/jobs/events/too-big', { data: jsonStringOf(MAX_DATA_BYTES) });
    expect(response.status).toBe(413);
    expect(response.body.error.details).toEqual([expect.objectContaining({ field: 'data' })]);
    expect((await api.get('/v1/jobs/events/too-big')).status).toBe(404);
  });

  test('data whose event fits at the last attempt is accepted', async () => {
    const { api } = fixture();
    expect((await api.put('/v1/job-types/events', { target, attempts: 100 })).status).toBe(201);
    // The envelope {"id":"fits","type":"events","attempt":100,"data":…} and the entry's time, source and detail type.
    const envelopeBytes = jsonBytes({ id: 'fits', type: 'events', attempt: 100, data: '' }) - 2;
    const room = PUT_EVENTS_MAX_BYTES - 1 - 14 - utf8Bytes('shop') - utf8Bytes('order.due') - envelopeBytes;
    expect((await api.put('/v1/jobs/events/fits', { data: jsonStringOf(room) })).status).toBe(201);
    expect((await api.put('/v1/jobs/events/over', { data: jsonStringOf(room + 1) })).status).toBe(413);
  });

  test('a traced job counts the traceparent its event will carry', async () => {
    const { api } = fixture();
    expect((await api.put('/v1/job-types/events', { target, attempts: 100 })).status).toBe(201);
    const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    const envelopeBytes = jsonBytes({ id: 'fits', type: 'events', attempt: 100, data: '', traceparent }) - 2;
    const room = PUT_EVENTS_MAX_BYTES - 1 - 14 - utf8Bytes('shop') - utf8Bytes('order.due') - envelopeBytes;
    expect((await api.put('/v1/jobs/events/fits', { data: jsonStringOf(room) }, { headers: { traceparent } })).status).toBe(201);
    expect((await api.put('/v1/jobs/events/over', { data: jsonStringOf(room + 1) }, { headers: { traceparent } })).status).toBe(413);
  });
});
