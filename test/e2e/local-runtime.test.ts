/**
 * Starts the local runtime exactly as docs/getting-started.md says (`npm start`), runs that page's walk-through
 * as written (its shell blocks, in bash, pointed at this runtime), then restarts it on the same data.
 */
import { execFile, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { freePort } from '../../infra/local/aws/dynamodb-local.js';
import { createClient } from '../../lib/client/index.js';
import { call, npmStart, stop, waitForStatus, type Started } from '../../infra/local/npm-start.js';
import { eventually } from '../support/eventually.js';

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

const WALK_THROUGH_PAGE = 'docs/getting-started.md';

/** The shell blocks of the page's walk-through, in the order a reader runs them. */
async function walkThroughBlocks(): Promise<string[]> {
  const page = await readFile(WALK_THROUGH_PAGE, 'utf8');
  const walkThrough = page.slice(page.indexOf('\n## Walk-through'));
  return [...walkThrough.matchAll(/```sh\n([\s\S]*?)```/g)].map((match) => match[1]!);
}

/** The page's first lines (where a reader pastes the URL and key, and the auth headers), pointed at `started`. */
function setUpLines(firstBlock: string, started: Started): string[] {
  const lines = firstBlock.split('\n');
  expect(lines[0]).toMatch(/^export URL=\S+ TOKEN=/);
  const authLine = lines.findIndex((line) => line.startsWith('auth=('));
  expect(authLine).toBeGreaterThan(0);
  return [`export URL=${started.url} TOKEN=${started.token}`, ...lines.slice(1, authLine + 1)];
}

const execFileAsync = promisify(execFile);

/** Runs lines of the page in bash, stopping at the first command that fails; resolves with what they printed. */
async function runAsWritten(lines: string[]): Promise<string> {
  const { stdout } = await execFileAsync('bash', ['-euo', 'pipefail', '-c', lines.join('\n')], { cwd: process.cwd(), timeout: 60_000 });
  return stdout;
}

test('the walk-through of docs/getting-started.md runs as written: the job due 5 s ahead runs once, with its history', async () => {
  const [steps] = await walkThroughBlocks();
  const setUp = setUpLines(steps!, runtime);
  const printed = await runAsWritten([...setUp, ...steps!.split('\n').slice(setUp.length)]);
  // Steps 1 to 3 print JSON objects; step 4, last, prints the history, an array.
  expect(printed.trimEnd().endsWith(']')).toBe(true);

  const job = await waitForStatus(runtime, '/v1/jobs/send-email/welcome-42', 'succeeded', 20_000);
  expect(job.status).toBe('succeeded');
  expect(job.result).toEqual({ to: 'ada@example.com' });
  expect(job.history).toHaveLength(1);
  expect(job.history[0].outcome).toBe('succeeded');
  expect(Date.parse(job.history[0].started_at)).toBeGreaterThanOrEqual(Date.parse(job.run_after));
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

/** `npm run downstream` as docs/getting-started.md starts it; resolves once it listens. */
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
  const output = await eventually(async () => started.output(), (text) => pattern.test(text), timeoutMs, 100);
  expect(output).toMatch(pattern);
  return output;
}

test('the http walk-through of docs/getting-started.md runs as written: the example downstream completes the job by callback', async () => {
  const [firstSteps, steps] = await walkThroughBlocks();
  const setUp = setUpLines(firstSteps!, runtime);
  const lines = steps!.split('\n');
  // The page starts the downstream in the background; the test starts that very command itself, to stop it after.
  const startsDownstream = lines.indexOf('SIGNING_SECRET=$SECRET npm run downstream &');
  expect(startsDownstream).toBeGreaterThan(0);
  // The page's downstream listens on its default port, 4000; here on a free one, in the job type's URL too.
  const downstreamPort = String(await freePort());
  const beforeDownstream = lines.slice(0, startsDownstream).map((line) => line.replace('127.0.0.1:4000', `127.0.0.1:${downstreamPort}`));
  expect(beforeDownstream.join('\n')).toContain(`127.0.0.1:${downstreamPort}/jobs`);
  const secret = await runAsWritten([...setUp, ...beforeDownstream, 'printf %s "$SECRET"']);
  expect(secret).toMatch(/\S{16,}/);
  const downstream = await npmRunDownstream({ SIGNING_SECRET: secret, DOWNSTREAM_PORT: downstreamPort });
  try {
    await runAsWritten([...setUp, ...lines.slice(startsDownstream + 1)]);
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
