/**
 * A new user's large job, sent the way they would send it: over HTTP to the local runtime as `npm start` serves
 * it (its gateway, api, poller, worker invoke and worker on DynamoDB Local), on a type running the built-in
 * `echo` handler. Its 250 KiB of data fit every hop on the way to the handler; the handler's answer, the data
 * echoed back, is over the result's cap, which is no reason to run it again.
 */
import { expect, test } from 'vitest';
import { runtimePerFile } from '../../../support/local-runtime.js';
import { MAX_RESULT_BYTES } from '../../../../lib/domain/job.js';
import { eventually } from '../../../support/eventually.js';

const DATA_BYTES = 250 * 1024;

const runtime = runtimePerFile('large-job', { POLL_INTERVAL_MS: '200' });

async function call(method: string, path: string, body?: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${runtime().url}${path}`, {
    method,
    headers: { authorization: `Bearer ${runtime().adminKey}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

async function whenFinished(path: string): Promise<Record<string, unknown>> {
  return eventually(async () => (await call('GET', path)).body, (body) => ['succeeded', 'failed'].includes(String(body.status)), 30_000, 100);
}

test('a job of 250 KiB data on an echo type ends after exactly one handler run, failed with an error naming the result size, one attempt in its history', async () => {
  expect((await call('PUT', '/v1/job-types/echoes', { target: { kind: 'handler', name: 'echo' } })).status).toBe(201);
  const data = 'x'.repeat(DATA_BYTES);
  expect((await call('PUT', '/v1/jobs/echoes/large-1', { data })).status).toBe(201);

  const job = await whenFinished('/v1/jobs/echoes/large-1');
  expect(job).toMatchObject({ status: 'failed', attempt: 1, data });
  expect(job.history).toEqual([
    expect.objectContaining({
      attempt: 1,
      outcome: 'failed',
      error: expect.objectContaining({ class: 'ResultTooLargeError', message: `the result is ${DATA_BYTES + 2} bytes; the limit is ${MAX_RESULT_BYTES}` }),
    }),
  ]);
}, 60_000);
