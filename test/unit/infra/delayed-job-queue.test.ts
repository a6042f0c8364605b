/**
 * The DelayedJobQueue construct as an app of its own uses it: a stack of the app's, a handler module outside
 * the package, settings as props. One synthesis bundles the functions (the slow part); the others skip bundling.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { App, Stack, Validations } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import { afterAll, beforeAll, describe, expect, test, vi } from 'vitest';
import { DelayedJobQueue, type DelayedJobQueueProps, type DelayedJobQueueSettings } from '../../../infra/delayed-job-queue.js';
import { createQueueApp } from '../../../infra/queue-app.js';
import { projectLockFile, type QueueFunctionName } from '../../../infra/queue-function.js';
import { settingNames } from '../../../infra/settings.js';
import { ConfigError } from '../../../lib/domain/errors.js';

vi.setConfig({ testTimeout: 60_000 });

const OWN_HANDLERS = resolve('test/support/own-handlers.ts');

const outdirs: string[] = [];
afterAll(() => {
  for (const outdir of outdirs) rmSync(outdir, { recursive: true, force: true });
});

function appWithQueue(props: DelayedJobQueueProps, { bundle }: { bundle: boolean }): { app: App; stack: Stack; queue: DelayedJobQueue } {
  const outdir = mkdtempSync(join(tmpdir(), 'delayed-job-queue-'));
  outdirs.push(outdir);
  const app = new App({ outdir, context: bundle ? {} : { 'aws:cdk:bundling-stacks': [] } });
  const stack = new Stack(app, 'TeamJobs');
  // Only the tests of the record keep one, each in a folder of its own.
  return { app, stack, queue: new DelayedJobQueue(stack, 'Queue', { settingsRecord: false, ...props }) };
}

describe('with a handler module of the app', () => {
  let bundles: Record<QueueFunctionName, string>;

  beforeAll(() => {
    const { app, stack, queue } = appWithQueue({ handlers: OWN_HANDLERS }, { bundle: true });
    const assembly = app.synth();
    const resources = Template.fromStack(stack).toJSON().Resources as Record<string, { Properties: { Code: { S3Key: string } } }>;
    bundles = Object.fromEntries(
      Object.entries(queue.functions).map(([name, fn]) => {
        const assetHash = resources[stack.getLogicalId(fn.function.node.defaultChild as never)]!.Properties.Code.S3Key.replace(/\.zip$/, '');
        return [name, readFileSync(join(assembly.directory, `asset.${assetHash}`, 'index.mjs'), 'utf8')];
      }),
    ) as Record<QueueFunctionName, string>;
  }, 240_000);

  test("the worker's bundle holds the module's handlers and none of the built-in ones", () => {
    expect(bundles.worker).toContain('own-handler greets');
    expect(bundles.worker).not.toContain('slept_ms');
  });

  test('the api bundles the module too, for the names a job type may target and the retry policies a callback may end under', () => {
    expect(bundles.api).toContain('own-handler greets');
    expect(bundles.api).toContain('never_again');
  });

  test("the sweeper bundles the module's retry policies, which lapsed claims end under", () => {
    expect(bundles.sweeper).toContain('never_again');
  });

  test('the poller and the authorizer run no handler code', () => {
    expect(bundles.poller).not.toContain('own-handler greets');
    expect(bundles.authorizer).not.toContain('own-handler greets');
  });
});

describe('what an app wires to', () => {
  test('the table, the bus, the API URL, the functions and the outputs are there to use', () => {
    const { stack, queue } = appWithQueue({}, { bundle: false });
    expect(stack.resolve(queue.apiUrl)).toBeDefined();
    expect(Object.keys(queue.functions).sort()).toEqual(['api', 'authorizer', 'poller', 'sweeper', 'waker', 'worker']);
    const outputs = Object.keys(Template.fromStack(stack).toJSON().Outputs as object);
    for (const output of ['ApiUrl', 'TableName', 'EventBusName', 'DeadLetterQueueUrl', 'CallbackTokenParameterName']) {
      expect(outputs.some((id) => id.startsWith(`Queue${output}`))).toBe(true);
    }
  });

  test('settings given as props reach the functions, under the names the functions read', () => {
    const { stack, queue } = appWithQueue({ settings: { SHARDS: 8, BUCKET_MS: 30_000 } }, { bundle: false });
    const worker = Template.fromStack(stack).toJSON().Resources[stack.getLogicalId(queue.functions.worker.function.node.defaultChild as never)];
    expect(worker.Properties.Environment.Variables).toMatchObject({ SHARDS: '8', BUCKET_MS: '30000' });
  });
});

test("two queues in one stack synthesize without a dependency cycle, and each queue's functions wake their own queue's poller and sweeper", () => {
  const { stack, queue: first } = appWithQueue({}, { bundle: false });
  const second = new DelayedJobQueue(stack, 'Other', { settingsRecord: false });
  // Template.fromStack throws on a dependency cycle, naming its resources.
  const resources = Template.fromStack(stack).toJSON().Resources as Record<string, { Type: string; Properties: { FunctionName?: string; Environment?: { Variables: Record<string, unknown> } } }>;
  const names = Object.values(resources).flatMap((resource) => (resource.Type === 'AWS::Lambda::Function' && resource.Properties.FunctionName ? [resource.Properties.FunctionName] : []));
  expect(names.sort()).toEqual(
    [first.functions.poller, first.functions.sweeper, second.functions.poller, second.functions.sweeper].map((fn) => fn.literalName?.name).sort(),
  );
  expect(new Set(names).size).toBe(4);
  for (const queue of [first, second]) {
    const waker = resources[stack.getLogicalId(queue.functions.waker.function.node.defaultChild as never)]!;
    expect(waker.Properties.Environment?.Variables).toMatchObject({
      POLLER_FUNCTION_NAME: queue.functions.poller.literalName?.name,
      SWEEPER_FUNCTION_NAME: queue.functions.sweeper.literalName?.name,
    });
  }
});

test("in an app's own stack and under its own id, cdk-nag's AwsSolutions checks find nothing unacknowledged", () => {
  const { app } = appWithQueue({ handlers: OWN_HANDLERS }, { bundle: false });
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
  // An unacknowledged finding throws here.
  app.synth();
});

describe('bundling from the app the package is installed in', () => {
  test("the lock file is the nearest one above the package's folder, as under an app's node_modules", () => {
    const appDir = mkdtempSync(join(tmpdir(), 'djq-app-'));
    outdirs.push(appDir);
    const packageDir = join(appDir, 'node_modules', 'delayed-job-queue');
    mkdirSync(packageDir, { recursive: true });
    writeFileSync(join(appDir, 'pnpm-lock.yaml'), '');
    expect(projectLockFile(packageDir)).toBe(join(appDir, 'pnpm-lock.yaml'));
  });

  test('without a lock file above the package, synth is refused saying to install first', () => {
    const appDir = mkdtempSync(join(tmpdir(), 'djq-app-'));
    outdirs.push(appDir);
    expect(() => projectLockFile(appDir)).toThrow(ConfigError);
    expect(() => projectLockFile(appDir)).toThrow(/install the app's dependencies first/);
  });
});

describe('refused at synth', () => {
  test('a handler module that is not there, naming the path', () => {
    expect(() => appWithQueue({ handlers: './no-such-handlers.ts' }, { bundle: false })).toThrow(ConfigError);
    expect(() => appWithQueue({ handlers: './no-such-handlers.ts' }, { bundle: false })).toThrow(/no-such-handlers\.ts/);
  });

  test('a setting the queue does not have, naming it', () => {
    const settings = { BUCKET_SIZE_MS: 1000 } as DelayedJobQueueSettings;
    expect(() => appWithQueue({ settings }, { bundle: false })).toThrow(/no setting BUCKET_SIZE_MS/);
  });

  test('a setting out of range, with the message a function would give', () => {
    expect(() => appWithQueue({ settings: { SHARDS: 0 } }, { bundle: false })).toThrow(/SHARDS must be an integer from 1 to 256/);
  });
});

describe('the settings the queued jobs depend on', () => {
  function recordFile(): string {
    const dir = mkdtempSync(join(tmpdir(), 'djq-settings-record-'));
    outdirs.push(dir);
    return join(dir, 'djq-settings.json');
  }
  const synthWith = (settingsRecord: string, settings: DelayedJobQueueSettings) => appWithQueue({ settingsRecord, settings }, { bundle: false });

  test("the first synth records BUCKET_MS and SHARDS under the construct's path", () => {
    const file = recordFile();
    synthWith(file, { BUCKET_MS: 30_000 });
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({ 'TeamJobs/Queue': { BUCKET_MS: 30_000, SHARDS: 4 } });
  });

  test('a later synth with another BUCKET_MS is refused, naming both values, the file and the way out', () => {
    const file = recordFile();
    synthWith(file, {});
    expect(() => synthWith(file, { BUCKET_MS: 120_000 })).toThrow(ConfigError);
    expect(() => synthWith(file, { BUCKET_MS: 120_000 })).toThrow(
      new RegExp(`BUCKET_MS is 120000 but 60000 is recorded for TeamJobs/Queue in ${file}: .* see docs/operations/upgrading.md`),
    );
  });

  test('fewer SHARDS are refused; more are allowed, and recorded', () => {
    const file = recordFile();
    synthWith(file, { SHARDS: 8 });
    expect(() => synthWith(file, { SHARDS: 4 })).toThrow(/SHARDS is 4 but 8 is recorded .* may grow, never shrink/);
    synthWith(file, { SHARDS: 16 });
    expect(JSON.parse(readFileSync(file, 'utf8'))['TeamJobs/Queue']).toEqual({ BUCKET_MS: 60_000, SHARDS: 16 });
  });

  test('fewer CLAIM_SHARDS are refused; more are allowed, and recorded', () => {
    const file = recordFile();
    synthWith(file, { CLAIM_SHARDS: 16 });
    expect(JSON.parse(readFileSync(file, 'utf8'))['TeamJobs/Queue']).toEqual({ BUCKET_MS: 60_000, SHARDS: 4, CLAIM_SHARDS: 16 });
    expect(() => synthWith(file, { CLAIM_SHARDS: 12 })).toThrow(/CLAIM_SHARDS is 12 but 16 claim-lane shards are recorded .* would never be swept.* may grow, never shrink/);
    // Unset, CLAIM_SHARDS is SHARDS: 8 of them would strand the claims in shards 8 to 15 all the same.
    expect(() => synthWith(file, { SHARDS: 8 })).toThrow(/CLAIM_SHARDS is 8 but 16 claim-lane shards are recorded/);
    synthWith(file, { CLAIM_SHARDS: 32 });
    expect(JSON.parse(readFileSync(file, 'utf8'))['TeamJobs/Queue']).toEqual({ BUCKET_MS: 60_000, SHARDS: 4, CLAIM_SHARDS: 32 });
  });

  test('a record made before CLAIM_SHARDS existed holds the claims in SHARDS shards: fewer claim shards are refused', () => {
    const file = recordFile();
    writeFileSync(file, '{"TeamJobs/Queue": {"BUCKET_MS": 60000, "SHARDS": 8}}');
    expect(() => synthWith(file, { SHARDS: 8, CLAIM_SHARDS: 4 })).toThrow(/CLAIM_SHARDS is 4 but 8 claim-lane shards are recorded/);
    synthWith(file, { SHARDS: 8 });
    expect(readFileSync(file, 'utf8')).toBe('{"TeamJobs/Queue": {"BUCKET_MS": 60000, "SHARDS": 8}}');
  });

  test('the same settings synthesize again, the record unchanged', () => {
    const file = recordFile();
    synthWith(file, { SHARDS: 8 });
    const recorded = readFileSync(file, 'utf8');
    synthWith(file, { SHARDS: 8, POLL_INTERVAL_MS: 250 });
    expect(readFileSync(file, 'utf8')).toBe(recorded);
  });

  test('a record that is not JSON, or whose entry lacks a setting, is refused naming the file', () => {
    const file = recordFile();
    writeFileSync(file, '{"TeamJobs/Queue": {"BUCKET_MS": 60000,');
    expect(() => synthWith(file, {})).toThrow(new RegExp(`${file} is not JSON`));
    writeFileSync(file, '{"TeamJobs/Queue": {"BUCKET_MS": "60000", "SHARDS": 4}}');
    expect(() => synthWith(file, {})).toThrow(/the entry "TeamJobs\/Queue" must be \{"BUCKET_MS": <integer>, "SHARDS": <integer>\}/);
  });

  test('by default the record is djq-settings.json in the directory the CDK app runs in', () => {
    const appDir = dirname(recordFile());
    const repositoryDir = process.cwd();
    process.chdir(appDir);
    try {
      appWithQueue({ settingsRecord: undefined }, { bundle: false });
    } finally {
      process.chdir(repositoryDir);
    }
    expect(existsSync(join(appDir, 'djq-settings.json'))).toBe(true);
  });
});

test('the settings type names exactly the settings the construct reads', () => {
  const every: Required<DelayedJobQueueSettings> = {
    BUCKET_MS: 1, SHARDS: 1, CLAIM_SHARDS: 1, CURSOR_SAFETY_MARGIN_MS: 1, BACKSTOP_BUCKETS: 1, RETENTION_DAYS: 1, POLL_INTERVAL_MS: 1, MIN_POLL_INTERVAL_MS: 1,
    POLLER_RUN_MS: 1, CLAIM_CONCURRENCY: 1, CLAIM_PAGE_SIZE: 1, SWEEP_INTERVAL_MS: 1, BULK_JOBS_PER_S: 1, WORKER_BATCH_SIZE: 1,
    WORKER_CONCURRENCY: 1, POLLER_PARTITIONS: 1, DELETION_PROTECTION: true, LOG_RETENTION_DAYS: 1, DUE_LAG_ALARM_MS: 1, API_RATE_LIMIT: 1,
    API_BURST_LIMIT: 1, ALARM_TOPIC_ARN: '', TARGET_FUNCTION_ARNS: '', TARGET_EVENT_BUS_ARNS: '', RESERVED_CONCURRENCY: true,
    WORKER_RESERVED_CONCURRENCY: 1, WORKER_EVENT_AGE_ALARM_MS: 1, HTTP_TARGET_PRIVATE_ADDRESSES: 'allow',
  };
  expect(Object.keys(every).sort()).toEqual(settingNames().sort());
});

test("this repository's stack holds the construct without moving its resources: their logical ids carry no construct id", () => {
  const outdir = mkdtempSync(join(tmpdir(), 'queue-stack-ids-'));
  outdirs.push(outdir);
  const { stack } = createQueueApp({ outdir, context: { 'aws:cdk:bundling-stacks': [] } });
  expect(stack.getLogicalId(stack.table.node.defaultChild as never)).toMatch(/^Jobs[0-9A-F]{8}$/);
  expect(Object.keys(Template.fromStack(stack).toJSON().Outputs as object)).toContain('ApiUrl');
});
