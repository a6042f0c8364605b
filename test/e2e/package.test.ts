/**
 * The package as a team adopts it: `npm pack` of this repository, the tarball installed into a copy of
 * examples/team-app (one install, from npm's cache where it can), its CDK app synthesized offline, and one
 * of its jobs run by its own handler under `npx djq dev`, as the example's README says.
 */
import { execFile, spawn } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { freePort } from '../../infra/local/aws/dynamodb-local.js';
import { call, stop, waitForStatus, type Started } from '../../infra/local/npm-start.js';

const run = promisify(execFile);
const EXAMPLE = resolve('examples/team-app');

/** Every address a tool might fetch from goes nowhere, so a synth that needed the network fails. */
const OFFLINE = {
  npm_config_offline: 'true',
  HTTPS_PROXY: 'http://127.0.0.1:9',
  HTTP_PROXY: 'http://127.0.0.1:9',
  NO_PROXY: '',
  AWS_EC2_METADATA_DISABLED: 'true',
  CDK_DISABLE_CLI_TELEMETRY: 'true',
};

let workDir: string;
let appDir: string;

beforeAll(async () => {
  workDir = mkdtempSync(join(tmpdir(), 'djq-package-'));
  const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', workDir], { maxBuffer: 16 * 1024 * 1024 });
  const [{ filename }] = JSON.parse(stdout) as [{ filename: string }];
  appDir = join(workDir, 'team-app');
  cpSync(EXAMPLE, appDir, { recursive: true, filter: (path) => !/[/\\](node_modules|cdk\.out|package-lock\.json)$/.test(path) });
  // The example depends on the checkout (file:../..); here it gets the tarball, as from a registry.
  const manifest = JSON.parse(readFileSync(join(appDir, 'package.json'), 'utf8'));
  manifest.dependencies['delayed-job-queue'] = `file:${join(workDir, filename)}`;
  writeFileSync(join(appDir, 'package.json'), JSON.stringify(manifest, null, 2));
  await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund'], { cwd: appDir, maxBuffer: 16 * 1024 * 1024 });
}, 600_000);

afterAll(() => {
  if (workDir) rmSync(workDir, { recursive: true, force: true });
});

test("cdk synth runs offline, and the worker's bundle holds the app's own handler instead of the built-in ones", async () => {
  await run('npx', ['cdk', 'synth', '--no-notices', '--quiet'], { cwd: appDir, env: { ...process.env, ...OFFLINE }, maxBuffer: 64 * 1024 * 1024 });
  const cdkOut = join(appDir, 'cdk.out');
  const template = JSON.parse(readFileSync(join(cdkOut, 'TeamJobs.template.json'), 'utf8')) as {
    Resources: Record<string, { Type: string; Properties: { Description?: string; Code?: { S3Key: string } } }>;
  };
  const worker = Object.values(template.Resources).find((resource) => resource.Type === 'AWS::Lambda::Function' && resource.Properties.Description?.startsWith('Runs a batch'));
  const workerBundle = readFileSync(join(cdkOut, `asset.${worker!.Properties.Code!.S3Key.replace(/\.zip$/, '')}`, 'index.mjs'), 'utf8');
  expect(workerBundle).toContain('Welcome aboard');
  expect(workerBundle).not.toContain('slept_ms');
  // One bundle a function: api, authorizer, poller, worker, sweeper and waker.
  expect(readdirSync(cdkOut).filter((name) => name.startsWith('asset.'))).toHaveLength(6);
}, 300_000);

test('npx djq dev --handlers ./handlers.ts runs a job the example producer enqueues to succeeded, by its own handler', async () => {
  const port = await freePort();
  const env = { PORT: String(port), DATA_DIR: join(workDir, 'data'), API_TOKEN: 'team-app-admin-token' };
  const child = spawn('npx', ['djq', 'dev', '--handlers', './handlers.ts'], { cwd: appDir, env: { ...process.env, ...env }, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const started: Started = { child, url: `http://localhost:${port}`, token: env.API_TOKEN, output: () => output };
  try {
    const deadline = Date.now() + 120_000;
    while (!output.includes('Press Ctrl-C')) {
      if (child.exitCode !== null || Date.now() > deadline) throw new Error(`djq dev did not come up:\n${output}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(output).toMatch(/Handlers:\s+send_welcome/);
    await run('npx', ['tsx', 'producer.ts'], { cwd: appDir, env: { ...process.env, QUEUE_URL: started.url, QUEUE_TOKEN: started.token } });
    const job = await waitForStatus(started, '/v1/jobs/welcome/ada', 'succeeded', 30_000);
    expect(job).toMatchObject({ status: 'succeeded', result: { text: 'Welcome aboard, Ada!' } });
    const builtIn = await call(started, 'PUT', '/v1/job-types/echoes', { target: { kind: 'handler', name: 'echo' } });
    expect(builtIn.status).toBe(400);
  } finally {
    await stop(started);
  }
}, 180_000);
