/**
 * Starts the local runtime exactly as the README says (`npm start`) and walks
 * through the README's steps over HTTP, then restarts it on the same data.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { freePort } from '../../infra/local/dynamodb-local.js';
import { createClient } from '../../lib/client/index.js';
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

test('the typed client, pointed at npm start, defines a type, enqueues with a Date, and reads the job it ran', async () => {
  const client = createClient({ url: runtime.url, token: runtime.token });
  await client.defineType('client-check', { target: { kind: 'handler', name: 'echo' } });
  const runAfter = new Date(Date.now() + 500);
  const enqueued = await client.enqueue('client-check', { data: { n: 1 }, run_after: runAfter }, { id: 'c1' });
  expect(enqueued.run_after).toBe(runAfter.toISOString());
  await waitForStatus(runtime, '/v1/jobs/client-check/c1', 'succeeded', 20_000);
  expect(await client.get('client-check', 'c1')).toMatchObject({ status: 'succeeded', result: { n: 1 } });
  const [stats, failedPage] = await Promise.all([
    client.stats(),
    client.list('client-check', { status: 'failed' }),
  ]);
  expect(stats.job_types.map((type) => type.name)).toContain('client-check');
  expect(failedPage.jobs).toEqual([]);
});

test('GET /v1/stats shows the runtime as a live poller of every shard and, once it ran a job, a live worker', async () => {
  await call(runtime, 'PUT', '/v1/job-types/roster-check', { target: { kind: 'handler', name: 'echo' } });
  await call(runtime, 'PUT', '/v1/jobs/roster-check/r1', { data: {} });
  await waitForStatus(runtime, '/v1/jobs/roster-check/r1', 'succeeded', 20_000);
  const stats = await call(runtime, 'GET', '/v1/stats');
  expect(stats.status).toBe(200);
  expect(stats.body.pollers).toEqual([expect.objectContaining({ shards: [0, 1, 2, 3], host: expect.any(String) })]);
  expect(stats.body.workers).toEqual([expect.objectContaining({ id: stats.body.pollers[0].id })]);
  expect(stats.body.job_types).toContainEqual(expect.objectContaining({ name: 'roster-check', due: 0, running: 0, oldest_due_lag_ms: 0, paused: false }));
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

/** `npm run downstream` as the README starts it; resolves once it listens. */
async function npmRunDownstream(env: Record<string, string>): Promise<Started> {
  const child = spawn('npm', ['run', 'downstream'], { cwd: process.cwd(), env: { ...process.env, ...env }, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const deadline = Date.now() + 30_000;
  while (!output.includes('example downstream on')) {
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`npm run downstream did not come up:\n${output}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return { child, url: '', token: '', output: () => output };
}

async function outputOnceMatching(started: Started, pattern: RegExp, timeoutMs = 10_000): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  while (!pattern.test(started.output()) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
  expect(started.output()).toMatch(pattern);
  return started.output();
}

test('the README http walk-through runs: the example downstream accepts the job and completes it by callback', async () => {
  const downstreamPort = await freePort();
  const created = await call(runtime, 'PUT', '/v1/job-types/render-pdf', {
    target: { kind: 'http', url: `http://127.0.0.1:${downstreamPort}/jobs`, request_timeout_s: 10 },
    timeout_s: 300,
  });
  expect(created.status).toBe(201);
  const downstream = await npmRunDownstream({ SIGNING_SECRET: created.body.signing_secret, DOWNSTREAM_PORT: String(downstreamPort) });
  try {
    await call(runtime, 'PUT', '/v1/jobs/render-pdf/invoice-7', { data: { invoice: 7, reply: 'callback' } });
    const job = await waitForStatus(runtime, '/v1/jobs/render-pdf/invoice-7', 'succeeded', 20_000);
    expect(job.status).toBe('succeeded');
    expect(job.result).toEqual({ handled_by: 'example-downstream', later: true });
    // The job reads succeeded as soon as it is stored; both logs follow a moment later.
    expect(await outputOnceMatching(downstream, /job render-pdf\/invoice-7: callback answered 200/)).toContain(
      'job render-pdf/invoice-7 attempt 1: signature ok',
    );
    expect(await outputOnceMatching(runtime, /"message":"job\.succeeded"[^\n]*"id":"invoice-7"/)).toBeTruthy();
  } finally {
    await stop(downstream);
  }
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
