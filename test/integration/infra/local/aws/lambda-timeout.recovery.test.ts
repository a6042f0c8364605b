/**
 * Invocations cut at their Lambda timeout, as AWS cuts them (infra/local/aws/lambda-timeout.ts): nothing an
 * invocation does past its timeout lands, and no job is lost for it; the sweeper takes back what the cut
 * invocation held, as it would after a function AWS ended.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, inject, test, vi } from 'vitest';
import { createPollerHandler } from '../../../../../functions/poller/app.js';
import { createSweeperHandler } from '../../../../../functions/sweeper/app.js';
import { functionTimeoutsS } from '../../../../../infra/queue-stack.js';
import { freePort } from '../../../../../infra/local/aws/dynamodb-local.js';
import { invokeWithTimeout, LambdaTimeoutError } from '../../../../../infra/local/aws/lambda-timeout.js';
import { startLocalRuntime, type LocalRuntime } from '../../../../../infra/local/runtime.js';
import type { WorkerInvoker } from '../../../../../lib/domain/invocations.js';
import type { WorkerBatch } from '../../../../../lib/domain/invocations.js';
import { getJob } from '../../../../../lib/queue/read-job.js';
import { sweepOnce } from '../../../../../lib/queue/sweep/sweep.js';
import { createTestQueue, realClock, type TestQueue } from '../../../../support/queue.js';
import { defineType, enqueue } from '../../../../support/lib-fixtures.js';
import { eventually } from '../../../../support/eventually.js';

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));


describe('a worker invocation that outlives the worker function timeout', () => {
  const WORKER_TIMEOUT_MS = 1_500;
  /** The handler sleeps well past the worker's timeout, and past its claim's visibility timeout after that. */
  const HANDLER_MS = 4_000;
  let runtime: LocalRuntime | undefined;
  let dataDir: string | undefined;

  afterEach(async () => {
    vi.restoreAllMocks();
    await runtime?.stop();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  test('records nothing after the timeout: its claim lapses, the sweeper ends the attempt as timed out, and the job is queued again', async () => {
    const errorLines = vi.spyOn(console, 'error');
    dataDir = await mkdtemp(join(tmpdir(), 'djq-lambda-timeouts-'));
    runtime = await startLocalRuntime(
      {
        DYNAMODB_ENDPOINT: inject('dynamoEndpoint'),
        TABLE_NAME: `lambda-timeouts-${Date.now()}`,
        PORT: String(await freePort()),
        DATA_DIR: dataDir,
        POLL_INTERVAL_MS: '200',
        SWEEP_INTERVAL_MS: '200',
      },
      { functionTimeoutsMs: { worker: WORKER_TIMEOUT_MS } },
    );
    const { url, adminKey } = runtime;
    const call = (method: string, path: string, body?: unknown) =>
      fetch(`${url}${path}`, {
        method,
        headers: { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    const slowType = { target: { kind: 'handler', name: 'sleep' }, visibility_timeout_s: 1, timeout_s: 30, attempts: 2, retry: { kind: 'fixed', delay_s: 3_600 } };
    expect((await call('PUT', '/v1/job-types/slow', slowType)).status).toBe(201);
    expect((await call('PUT', '/v1/jobs/slow/s-1', { data: { ms: HANDLER_MS } })).status).toBe(201);
    const readJob = async () => (await (await call('GET', '/v1/jobs/slow/s-1')).json()) as { status: string; attempt: number; result: unknown; history: { started_at: string | null }[] };

    const swept = await eventually(readJob, (job) => job.history.length > 0);
    // Past the moment the handler returned and the worker, uncut, would have recorded its success: that nothing is
    // recorded by then is what is checked, so this wait is on the clock.
    await sleep(Math.max(0, Date.parse(swept.history[0]!.started_at!) + HANDLER_MS + 1_000 - Date.now()));

    const job = await readJob();
    expect(job).toMatchObject({ status: 'queued', attempt: 1, result: null });
    expect(job.history).toEqual([
      expect.objectContaining({ attempt: 1, outcome: 'timed_out', started_at: expect.any(String), error: expect.objectContaining({ class: 'VisibilityTimeoutError' }) }),
    ]);
    expect(runtime.lifecycleEvents.filter((event) => event.id === 's-1' && event.outcome === 'succeeded')).toEqual([]);
    const workerFailures = errorLines.mock.calls.map(([line]) => String(line)).filter((line) => line.includes('worker invocation failed'));
    expect(workerFailures).toEqual([expect.stringMatching(/dead-letter queue.*Task timed out after 1\.50 seconds.*"id":"s-1"/)]);
  }, 120_000);
});

describe('a poller invocation cut at its timeout in the middle of a poll', () => {
  /** The poller ends its runs 5 s before its timeout: this one polls for 1 s, then stalls in its hand-over past the timeout. */
  const POLLER_TIMEOUT_MS = 6_000;
  let queue: TestQueue | undefined;

  afterEach(async () => {
    await queue?.drop();
  });

  test('hands over nothing late; the sweeper gives its claims back without counting an attempt, and the next invocation hands them over', async () => {
    queue = await createTestQueue({ clock: realClock, settings: { pollIntervalMs: 50 } });
    const emails = await defineType(queue.ctx, 'emails', { visibility_timeout_s: 1 });
    const ids = ['e-1', 'e-2', 'e-3'];
    for (const id of ids) await enqueue(queue.ctx, emails, id);

    const handedOver: WorkerBatch[] = [];
    const worker = queue.iam.invokerFor('poller', { invoke: async (batch) => void handedOver.push(batch) });
    let stalls = true;
    // The poller's process stalls between claiming its jobs and handing them over, until after its timeout.
    const stallingOnce: WorkerInvoker = {
      invoke: async (batch) => {
        if (stalls) await sleep(POLLER_TIMEOUT_MS + 500);
        await worker.invoke(batch);
      },
    };
    const poller = createPollerHandler({ ctx: queue.as('poller'), invoker: stallingOnce, identity: { id: 'poller-1', host: 'localhost' } });
    const running = new Set<Promise<unknown>>();

    await expect(invokeWithTimeout('poller', POLLER_TIMEOUT_MS, (context) => poller({}, context), { running })).rejects.toBeInstanceOf(LambdaTimeoutError);
    await Promise.all([...running]);
    expect(handedOver).toEqual([]);
    for (const id of ids) {
      const claimedUnstarted = await getJob(queue.ctx, 'emails', id);
      expect(claimedUnstarted?.status).toBe('running');
      expect(claimedUnstarted?.startedAtMs).toBeUndefined();
    }

    expect(await sweepOnce(queue.as('sweeper'), { customPolicies: {} })).toMatchObject({ released: ids.length, requeued: 0, ended: 0 });
    stalls = false;
    const next = await invokeWithTimeout('poller', POLLER_TIMEOUT_MS, (context) => poller({}, context));

    expect(next).toMatchObject({ claimed: ids.length, dispatched: ids.length });
    expect(handedOver.flatMap((batch) => batch.jobs.map((job) => job.id)).sort()).toEqual(ids);
    // Handed over for their first attempt: the cut invocation's claims cost them none.
    for (const id of ids) expect(await getJob(queue.ctx, 'emails', id)).toMatchObject({ status: 'running', attempt: 1, history: [] });
  });
});

describe("the poller and the sweeper at the stack's timeouts", () => {
  let queue: TestQueue | undefined;

  afterEach(async () => {
    await queue?.drop();
  });

  test('each ends its run on its own before its timeout, so neither is cut', async () => {
    queue = await createTestQueue({ clock: realClock, settings: { pollerRunMs: 1_000, pollIntervalMs: 100, sweepIntervalMs: 200 } });
    const timeoutsS = functionTimeoutsS(queue.ctx.settings);
    const poller = createPollerHandler({ ctx: queue.as('poller'), invoker: { invoke: async () => undefined }, identity: { id: 'poller-1', host: 'localhost' } });
    const sweeper = createSweeperHandler({ ctx: queue.as('sweeper'), registry: { retryPolicies: {} } });

    await expect(invokeWithTimeout('poller', timeoutsS.poller * 1000, (context) => poller({}, context))).resolves.toMatchObject({ claimed: 0 });
    await expect(invokeWithTimeout('sweeper', timeoutsS.sweeper * 1000, (context) => sweeper({}, context))).resolves.toMatchObject({ requeued: 0 });
  });
});
