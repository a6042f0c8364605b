/**
 * Starts the local runtime exactly as the README says (`npm start`) and walks
 * through the README's steps over HTTP, then restarts it on the same data.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { freePort } from '../../infra/local/dynamodb-local.js';
import { call, npmStart, stop, waitForStatus, type Started } from '../support/npm-start.js';

let dataDir: string;
let env: Record<string, string>;
let runtime: Started;

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'djq-e2e-'));
  env = { PORT: String(await freePort()), DATA_DIR: dataDir, POLL_INTERVAL_MS: '200', SWEEP_INTERVAL_MS: '1000' };
  delete process.env.API_TOKEN;
  runtime = await npmStart(env);
}, 120_000);

afterAll(async () => {
  if (runtime) await stop(runtime);
  await rm(dataDir, { recursive: true, force: true });
});

test('the README walk-through runs: a job enqueued 2 s ahead runs once, with its history', async () => {
  expect((await call(runtime, 'PUT', '/v1/job-types/send-email', { target: { kind: 'handler', name: 'echo' } })).status).toBe(201);
  const runAfter = new Date(Date.now() + 2_000).toISOString();
  const enqueued = await call(runtime, 'PUT', '/v1/jobs/send-email/welcome-42', { data: { to: 'a@example.com' }, run_after: runAfter });
  expect(enqueued.status).toBe(201);
  expect(enqueued.body.status).toBe('queued');

  const job = await waitForStatus(runtime, '/v1/jobs/send-email/welcome-42', 'succeeded', 20_000);
  expect(job.status).toBe('succeeded');
  expect(job.result).toEqual({ to: 'a@example.com' });
  expect(job.history).toHaveLength(1);
  expect(job.history[0].outcome).toBe('succeeded');
  expect(Date.parse(job.history[0].started_at)).toBeGreaterThanOrEqual(Date.parse(runAfter));
  expect(job.history[0].worker.host).toEqual(expect.any(String));
});

test('a failing job is retried until its attempts are used up, each attempt in its history', async () => {
  await call(runtime, 'PUT', '/v1/job-types/flaky', {
    target: { kind: 'handler', name: 'fail' },
    attempts: 2,
    retry: { kind: 'fixed', delay_s: 0 },
  });
  await call(runtime, 'PUT', '/v1/jobs/flaky/f1', { data: { message: 'downstream unavailable' } });
  const job = await waitForStatus(runtime, '/v1/jobs/flaky/f1', 'failed', 20_000);
  expect(job.status).toBe('failed');
  expect(job.history.map((h: { attempt: number }) => h.attempt)).toEqual([1, 2]);
  expect(job.history[1].error).toMatchObject({ class: 'Error', message: 'downstream unavailable' });
});

test('after Ctrl-C and a second npm start, the jobs and the admin token are still there', async () => {
  await call(runtime, 'PUT', '/v1/jobs/send-email/later', { data: {}, run_after: new Date(Date.now() + 3_600_000).toISOString() });
  const firstToken = runtime.token;
  await stop(runtime);
  expect(runtime.output()).toContain('stopping');

  runtime = await npmStart(env);
  expect(runtime.token).toBe(firstToken);
  expect((await call(runtime, 'GET', '/v1/jobs/send-email/welcome-42')).body.status).toBe('succeeded');
  expect((await call(runtime, 'GET', '/v1/jobs/send-email/later')).body.status).toBe('queued');
}, 120_000);
