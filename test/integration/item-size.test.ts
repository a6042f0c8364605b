/**
 * What AWS would refuse for size, on DynamoDB Local (which enforces the 400 KB item limit itself): a job with
 * every field at its cap at once.
 */
import { describe, expect, test } from 'vitest';
import type { QueueContext } from '../../lib/queue/context.js';
import { claimJob } from '../../lib/queue/claims.js';
import { getJob } from '../../lib/queue/jobs.js';
import { runClaimedJob, type JobHandler } from '../../lib/queue/worker.js';
import { MAX_DATA_BYTES, MAX_ERROR_MESSAGE_BYTES, MAX_RESULT_BYTES, MAX_TRACE_BYTES } from '../../lib/domain/job.js';
import type { Job } from '../../lib/domain/job.js';
import type { JobType } from '../../lib/domain/job-type.js';
import { jsonBytes, utf8Bytes, dynamoItemBytes } from '../../lib/domain/json-size.js';
import { MAX_PROGRESS_BYTES, type ProgressReport } from '../../lib/domain/progress.js';
import { JOB_ITEM_BUDGET_BYTES } from '../../lib/store/job-writes.js';
import { defineType, enqueue, freshQueuePerTest, readItem, WORKER } from './lib-fixtures.js';
import type { TestQueue } from '../support/queue.js';

/** A JSON string of exactly `bytes` bytes once serialised (its quotes included). */
const jsonStringOf = (bytes: number, char = 'x') => char.repeat(bytes - 2);

/** A progress report of exactly MAX_PROGRESS_BYTES. */
function progressAtCap(): ProgressReport {
  const report = { percent: 50, message: 'm'.repeat(1_000), data: '' };
  return { ...report, data: jsonStringOf(MAX_PROGRESS_BYTES - jsonBytes(report) + 2) };
}

/** Runs attempts of the job one after another, each claimed as a poller would, until it is no longer retried. */
async function runToTheEnd(queue: TestQueue, jobType: JobType, id: string, handler: JobHandler): Promise<string[]> {
  const registry = { handlers: { [jobType.name]: handler }, retryPolicies: {} };
  const outcomes: string[] = [];
  for (let attempt = 1; attempt <= jobType.attempts; attempt++) {
    const claim = await claimJob(queue.ctx, { type: jobType.name, id }, jobType);
    if (claim.kind !== 'claimed') throw new Error(`attempt ${attempt} not claimed: ${claim.kind}`);
    const outcome = await runClaimedJob(queue.as('worker'), claim.job, jobType, { registry, worker: WORKER });
    outcomes.push(outcome);
    if (outcome !== 'retrying') break;
  }
  return outcomes;
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
    await enqueue(queue().ctx, jobType, 'full-1', { data: jsonStringOf(MAX_DATA_BYTES) });
    const result = jsonStringOf(MAX_RESULT_BYTES);
    const outcomes = await runToTheEnd(queue(), jobType, 'full-1', async (_data, context) => {
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
    expect(job).toMatchObject({ status: 'succeeded', attempt: 25, result });
    expect(dynamoItemBytes((await readItem(queue(), 'full', 'full-1'))!)).toBeLessThanOrEqual(JOB_ITEM_BUDGET_BYTES);
  });

  test('the history keeps the newest attempts that fit, and counts the older ones it dropped', async () => {
    const jobType = await retriedType(queue().ctx, 'trimmed', 25);
    await enqueue(queue().ctx, jobType, 'trimmed-1', { data: jsonStringOf(MAX_DATA_BYTES) });
    await runToTheEnd(queue(), jobType, 'trimmed-1', (_data, context) => {
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
    const outcomes = await runToTheEnd(queue(), jobType, 'euro-1', () => {
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
