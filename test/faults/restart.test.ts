/**
 * The whole local runtime (poller, sweeper, workers and DynamoDB Local) killed
 * with SIGKILL while jobs are running, due and waiting and a schedule fires
 * every second; after `npm start` again, every job reaches a terminal state and
 * its history says what happened, and the schedule made one job for every
 * second, those it missed while down included (`catch_up: "all"`).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { freePort } from '../../infra/local/aws/dynamodb-local.js';
import { call, npmStart, stop, waitForStatus, type Started } from '../../infra/local/npm-start.js';
import { eventually } from '../support/eventually.js';

let dataDir: string | undefined;
let runtime: Started | undefined;

afterAll(async () => {
  if (runtime) await stop(runtime);
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

test('jobs running, due and waiting when the runtime is killed all finish after a restart', async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'djq-restart-'));
  const env = { PORT: String(await freePort()), DATA_DIR: dataDir, POLL_INTERVAL_MS: '100', SWEEP_INTERVAL_MS: '500' };
  runtime = await npmStart(env);
  await call(runtime, 'PUT', '/v1/job-types/slow', { target: { kind: 'handler', name: 'sleep' }, visibility_timeout_s: 6, attempts: 3, retry: { kind: 'fixed', delay_s: 0 } });
  await call(runtime, 'PUT', '/v1/job-types/quick', { target: { kind: 'handler', name: 'echo' }, delivery_strategy: 'at_most_once' });
  await call(runtime, 'PUT', '/v1/job-types/ticks', { target: { kind: 'handler', name: 'echo' } });
  const schedule = await call(runtime, 'PUT', '/v1/schedules/tick', { cron: '* * * * * *', job_type: 'ticks', catch_up: 'all' });
  expect(schedule.status).toBe(201);
  const firstFireMs = Date.parse(schedule.body.next_fire_at);
  const soon = (ms: number) => new Date(Date.now() + ms).toISOString();
  // 4 s of work within a 6 s visibility timeout: after the restart the retry needs no heartbeat in time, which a
  // loaded machine (the whole suite on two cores) once missed at 2 s, timing the retry out too.
  const running = ['r1', 'r2', 'r3'];
  for (const id of running) await call(runtime, 'PUT', `/v1/jobs/slow/${id}`, { data: { ms: 4_000 } });
  for (const id of running) expect((await waitForStatus(runtime, `/v1/jobs/slow/${id}`, 'running', 15_000)).status).toBe('running');
  const waiting = ['w1', 'w2'];
  for (const id of waiting) await call(runtime, 'PUT', `/v1/jobs/quick/${id}`, { data: {}, run_after: soon(10_000) });
  // Enqueued last, just before the kill, so that none of them has started when the runtime dies even on a loaded
  // machine (an at-most-once job claimed before the kill would rightly never run again): they come due while it is down.
  const due = ['d1', 'd2', 'd3'];
  const dueAt = soon(2_500);
  for (const id of due) await call(runtime, 'PUT', `/v1/jobs/quick/${id}`, { data: {}, run_after: dueAt });

  await stop(runtime, 'SIGKILL');
  // Down until they are due: what is under test is a restart that finds them due, not one that sees them fall due.
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, Date.parse(dueAt) - Date.now())));
  const restarted = await npmStart(env);
  runtime = restarted;
  const restartedAtMs = Date.now();

  for (const id of running) {
    const job = await waitForStatus(runtime, `/v1/jobs/slow/${id}`, 'succeeded', 30_000);
    expect(job).toMatchObject({ status: 'succeeded', attempt: 2 });
    expect(job.history.map((h: { outcome: string }) => h.outcome)).toEqual(['timed_out', 'succeeded']);
  }
  for (const id of [...due, ...waiting]) {
    const job = await waitForStatus(runtime, `/v1/jobs/quick/${id}`, 'succeeded', 30_000);
    expect(job).toMatchObject({ status: 'succeeded', attempt: 1 });
  }

  // Well past the outage before the schedule is paused, however soon the jobs above finished.
  const lastFireAtMs = async () => Date.parse((await call(restarted, 'GET', '/v1/schedules/tick')).body.last_fire?.fire_at ?? '');
  await eventually(lastFireAtMs, (atMs) => atMs >= restartedAtMs + 5_000, 30_000, 250);
  expect((await call(runtime, 'POST', '/v1/schedules/tick/pause')).status).toBe(200);
  const lastFireMs = await lastFireAtMs();
  // Every second from the first fire to the last has its job, the ones missed while down too.
  expect(lastFireMs).toBeGreaterThanOrEqual(restartedAtMs + 5_000);
  const missing: string[] = [];
  for (let atMs = firstFireMs; atMs <= lastFireMs; atMs += 1_000) {
    const id = `tick@${new Date(atMs).toISOString().replace('.000Z', 'Z')}`;
    const job = await call(runtime, 'GET', `/v1/jobs/ticks/${id}`);
    if (job.status !== 200 || job.body.schedule !== 'tick') missing.push(id);
  }
  expect(missing).toEqual([]);
}, 150_000);
