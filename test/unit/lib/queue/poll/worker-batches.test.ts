/** The batcher: how a poll's claimed jobs are split into worker invocations, and what each one carries. */
import fc from 'fast-check';
import { jobTypeFromInput } from '../../../../support/job-types.js';
import { expect, test } from 'vitest';
import { jsonBytes } from '../../../../../lib/domain/json-size.js';
import { jobTypeInputSchema } from '../../../../../lib/wire/job-types.js';
import { parseWith } from '../../../../../lib/wire/parse.js';
import { MAX_DATA_BYTES, type Job } from '../../../../../lib/domain/job.js';
import type { JobType } from '../../../../../lib/domain/job-type.js';
import { createBatcher, FAILURE_DESTINATION_MAX_BYTES, maxFailureRecordBytes, MAX_WORKER_ERROR_RESPONSE_BYTES } from '../../../../../lib/queue/poll/worker-batches.js';
import { type WorkerBatch } from '../../../../../lib/domain/invocations.js';
import { runningJob, T0 } from '../../../../support/jobs.js';

/** An http type, with the signing secret its item holds. */
function httpType(name: string, body: Record<string, unknown> = {}): JobType {
  const input = parseWith(jobTypeInputSchema, { target: { kind: 'http', url: `https://example.com/${name}` }, ...body });
  return { ...jobTypeFromInput(name, input, { createdAtMs: T0, updatedAtMs: T0 }), signingSecret: `whsec_secret-of-${name}` };
}

/** A type whose configuration weighs about 13 KB: 100 throttle keys of 128 characters. */
function heavyType(name: string): JobType {
  const limits = Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`${i}`.padStart(128, 'k'), { limit: 1 }]));
  return httpType(name, { throttle: { limits } });
}

const emails = httpType('emails');

function job(id: string, options: { type?: JobType; data?: unknown } = {}): { job: Job; type: JobType } {
  const type = options.type ?? emails;
  return { job: runningJob({ id, type: type.name, data: options.data ?? null }), type };
}

function batchesOf(jobs: { job: Job; type: JobType }[], maxJobs: number, maxBytes?: number): WorkerBatch[] {
  const batches: WorkerBatch[] = [];
  const batcher = createBatcher(maxJobs, (batch) => batches.push(batch), maxBytes);
  for (const { job, type } of jobs) batcher.add(job, type);
  batcher.close();
  return batches;
}

/** One batch holding all these jobs, however many and big. */
const payloadOf = (jobs: { job: Job; type: JobType }[]): WorkerBatch => batchesOf(jobs, Infinity, Infinity)[0]!;

const ids = (batches: WorkerBatch[]): string[][] => batches.map((batch) => batch.jobs.map((j) => j.id));

test('a batch is handed over the moment it is full, before the rest of the poll is claimed', () => {
  const handedOver: string[][] = [];
  const batcher = createBatcher(2, (batch) => handedOver.push(batch.jobs.map((j) => j.id)));
  batcher.add(runningJob({ id: 'a' }), emails);
  expect(handedOver).toEqual([]);
  batcher.add(runningJob({ id: 'b' }), emails);
  expect(handedOver).toEqual([['a', 'b']]);
  batcher.add(runningJob({ id: 'c' }), emails);
  batcher.close();
  expect(handedOver).toEqual([['a', 'b'], ['c']]);
});

test('closing with nothing pending hands over nothing', () => {
  const handedOver: WorkerBatch[] = [];
  const batcher = createBatcher(2, (batch) => handedOver.push(batch));
  batcher.close();
  expect(handedOver).toEqual([]);
});

test('splits by count, keeping order', () => {
  const jobs = Array.from({ length: 25 }, (_, i) => job(`j${i}`));
  const batches = batchesOf(jobs, 10);
  expect(batches.map((batch) => batch.jobs.length)).toEqual([10, 10, 5]);
  expect(ids(batches).flat()).toEqual(jobs.map(({ job }) => job.id));
});

test('an exact multiple of the batch size leaves no empty batch; no jobs gives no batches', () => {
  expect(batchesOf(Array.from({ length: 20 }, (_, i) => job(`j${i}`)), 10).map((batch) => batch.jobs.length)).toEqual([10, 10]);
  expect(batchesOf([], 10)).toEqual([]);
});

test('a batch carries the types of its own jobs only', () => {
  const reports = httpType('reports');
  const invoices = httpType('invoices');
  const batches = batchesOf([job('e1'), job('r1', { type: reports }), job('e2'), job('i1', { type: invoices })], 2);
  expect(batches.map((batch) => Object.keys(batch.jobTypes).sort())).toEqual([['emails', 'reports'], ['emails', 'invoices']]);
});

test("a batch carries its jobs' types without their signing secrets, and the types are otherwise as they were", () => {
  const [batch] = batchesOf([job('e1')], 10);
  expect(JSON.stringify(batch)).not.toContain('signingSecret');
  expect(JSON.stringify(batch)).not.toContain(emails.signingSecret);
  const { signingSecret: _secret, ...rest } = emails;
  expect(batch?.jobTypes.emails).toEqual(rest);
});

test("splits by bytes so no batch's whole payload exceeds the byte budget", () => {
  const jobs = Array.from({ length: 7 }, (_, i) => job(`j${i}`, { data: { blob: 'x'.repeat(1_000) } }));
  const maxBytes = jsonBytes(payloadOf(jobs.slice(0, 2))) + 10;
  const batches = batchesOf(jobs, 100, maxBytes);
  expect(batches.map((batch) => batch.jobs.length)).toEqual([2, 2, 2, 1]);
  for (const batch of batches) expect(jsonBytes(batch)).toBeLessThanOrEqual(maxBytes);
  expect(ids(batches).flat()).toEqual(jobs.map(({ job }) => job.id));
});

test('the byte budget counts the types a batch carries, not only its jobs', () => {
  const jobs = [job('a1', { type: heavyType('heavy-a') }), job('b1', { type: heavyType('heavy-b') })];
  const jobsOnlyBytes = jsonBytes(jobs.map(({ job }) => job));
  const oneTypeBytes = jsonBytes(payloadOf(jobs.slice(0, 1)).jobTypes);
  const maxBytes = jobsOnlyBytes + oneTypeBytes + 100;
  const batches = batchesOf(jobs, 100, maxBytes);
  expect(ids(batches)).toEqual([['a1'], ['b1']]);
  for (const batch of batches) expect(jsonBytes(batch)).toBeLessThanOrEqual(maxBytes);
});

test('a batch fills the byte budget to the byte: a payload of exactly the budget is one batch, one byte over is two', () => {
  const jobs = [job('e1'), job('r1', { type: heavyType('reports') }), job('e2', { data: { note: 'ünïcödé' } })];
  const exactBytes = jsonBytes(payloadOf(jobs));
  expect(ids(batchesOf(jobs, 100, exactBytes))).toEqual([['e1', 'r1', 'e2']]);
  expect(ids(batchesOf(jobs, 100, exactBytes - 1))).toEqual([['e1', 'r1'], ['e2']]);
});

test('a single job larger than the byte budget still travels, alone', () => {
  const small = job('small');
  const big = job('big', { data: { blob: 'x'.repeat(5_000) } });
  expect(ids(batchesOf([small, big, small], 100, 2_000))).toEqual([['small'], ['big'], ['small']]);
});

test('whatever jobs and types weigh, a batch of two jobs or more stays within the budget, and one closes early only when the next job would not fit', () => {
  const windows = [{ start: '09:00', end: '17:00', tz: 'Europe/Paris' }];
  const types = [httpType('plain'), heavyType('heavy'), httpType('windowed', { time_windows: windows })];
  const arbitraryJob = fc.record({ type: fc.constantFrom(...types), dataBytes: fc.nat({ max: 20_000 }) });
  fc.assert(
    fc.property(fc.array(arbitraryJob, { maxLength: 30 }), fc.integer({ min: 1, max: 10 }), fc.integer({ min: 500, max: 60_000 }), (specs, maxJobs, maxBytes) => {
      const jobs = specs.map(({ type, dataBytes }, i) => job(`j${i}`, { type, data: 'x'.repeat(dataBytes) }));
      const batches = batchesOf(jobs, maxJobs, maxBytes);
      expect(ids(batches).flat()).toEqual(jobs.map(({ job }) => job.id));
      let start = 0;
      for (const batch of batches) {
        const end = start + batch.jobs.length;
        if (batch.jobs.length > 1) expect(jsonBytes(batch)).toBeLessThanOrEqual(maxBytes);
        if (end < jobs.length && batch.jobs.length < maxJobs) expect(jsonBytes(payloadOf(jobs.slice(start, end + 1)))).toBeGreaterThan(maxBytes);
        start = end;
      }
    }),
    { numRuns: 200 },
  );
});

test("the on-failure record of a full batch of the largest jobs fits the dead-letter queue, with the largest error the worker answers", () => {
  // Data at its limit, in three-byte characters, which JSON carries unescaped: the most bytes a job's data can be.
  const data = '€'.repeat(Math.floor(MAX_DATA_BYTES / 3) - 1);
  const largest = Array.from({ length: 50 }, (_, i) => job(`job_${i}`, { type: heavyType('reports'), data }));
  const batches = batchesOf(largest, 100);
  expect(batches.length).toBeGreaterThan(1);
  for (const batch of batches) {
    const record = {
      version: '1.0',
      timestamp: '2026-11-21T10:00:00.000Z',
      requestContext: {
        requestId: '00000000-0000-0000-0000-000000000000',
        functionArn: `arn:aws:lambda:ap-southeast-2:123456789012:function:${'f'.repeat(64)}:$LATEST`,
        condition: 'RetriesExhausted',
        approximateInvokeCount: 1,
      },
      requestPayload: batch,
      responseContext: { statusCode: 200, executedVersion: '$LATEST', functionError: 'Unhandled' },
      responsePayload: { errorType: 'Error', errorMessage: 'x'.repeat(MAX_WORKER_ERROR_RESPONSE_BYTES - 50) },
    };
    expect(jsonBytes(record)).toBeLessThanOrEqual(FAILURE_DESTINATION_MAX_BYTES);
    expect(jsonBytes(record)).toBeLessThanOrEqual(maxFailureRecordBytes(jsonBytes(batch)));
  }
});
