/**
 * The per-minute history behind GET /v1/metrics: pollers count scheduling lag
 * and workers count finished attempts per type and minute, add them to the
 * table at most every 10 s, and the route sums them; a write that fails is
 * logged and never fails a poll or a job.
 */
import { QueryCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { afterEach, beforeEach, describe, expect, test, vi, type MockInstance } from 'vitest';
import { createPollerHandler } from '../../../../../functions/poller/app.js';
import { createWorkerHandler } from '../../../../../functions/worker/app.js';
import { registry } from '../../../../../functions/worker/handlers/index.js';
import type { QueueContext } from '../../../../../lib/queue/context.js';
import { createMetricsRecorder } from '../../../../../lib/queue/telemetry/metrics-history.js';
import { lagBucketOf, lagBucketValueMs, METRICS_FLUSH_INTERVAL_MS, METRICS_RETENTION_S } from '../../../../../lib/domain/metrics.js';
import type { WorkerBatch } from '../../../../../lib/domain/invocations.js';
import { createApiClient, createTestApi, type ApiClient } from '../../../../support/api.js';
import type { QueueFunctionName } from '../../../../../infra/local/aws/iam/stack-policies.js';
import { createTestQueue, manualClock, type TestQueue } from '../../../../support/queue.js';
import { RecordingInvoker } from '../../../../support/lib-fixtures.js';

/** The start of the current minute, not a fixed date: DynamoDB Local applies TTL by the real clock. */
const T0 = Math.floor(Date.now() / 60_000) * 60_000;
const iso = (epochMs: number): string => new Date(epochMs).toISOString();
const lambdaContext = { getRemainingTimeInMillis: () => 60_000 };
const lagValue = (lagMs: number): number => lagBucketValueMs(lagBucketOf(lagMs));
const NOTHING = { succeeded: 0, failed: 0, expired: 0, retried: 0 };

let queue: TestQueue;
let admin: ApiClient;
let consoleLog: MockInstance<typeof console.log>;
let consoleError: MockInstance<typeof console.error>;

beforeEach(async () => {
  consoleLog = vi.spyOn(console, 'log').mockImplementation(() => undefined);
  consoleError = vi.spyOn(console, 'error').mockImplementation(() => undefined);
  // One poll per invocation: the manual clock does not move, so a longer run would never end.
  queue = await createTestQueue({ clock: manualClock(T0), settings: { pollerRunMs: 0 } });
  admin = createTestApi(queue);
  expect((await admin.put('/v1/job-types/emails', { target: { kind: 'handler', name: 'echo' } })).status).toBe(201);
  const failing = { target: { kind: 'handler', name: 'fail' }, attempts: 2, retry: { kind: 'fixed', delay_s: 0 } };
  expect((await admin.put('/v1/job-types/reports', failing)).status).toBe(201);
});
afterEach(async () => {
  consoleLog.mockRestore();
  consoleError.mockRestore();
  await queue.drop();
});

function poller(id: string, invoker: RecordingInvoker, ctx: QueueContext = queue.as('poller')) {
  return createPollerHandler({ ctx, invoker, identity: { id, host: 'host' } });
}

/** Function `fn`'s writes of the history, counted; those that `fail` says so are refused, everything else goes through. */
function watchedContext(fn: QueueFunctionName, fail: () => boolean = () => false): { ctx: QueueContext; historyWrites: () => number } {
  const functionCtx = queue.as(fn);
  let writes = 0;
  const isHistoryWrite = (command: unknown): boolean =>
    command instanceof UpdateCommand && String(command.input.Key?.pk).startsWith('METRICS#');
  const db = {
    send: (command: unknown) => {
      if (isHistoryWrite(command)) {
        writes++;
        if (fail()) return Promise.reject(new Error('ProvisionedThroughputExceededException'));
      }
      return functionCtx.db.send(command as UpdateCommand);
    },
  } as unknown as DynamoDBDocumentClient;
  return { ctx: { ...functionCtx, db }, historyWrites: () => writes };
}

const loggedHistoryFailures = (): number =>
  consoleError.mock.calls.filter(([line]) => String(line).includes('could not write the metrics history')).length;

describe('scheduling lag', () => {
  test('two pollers claiming in the same minute add up: p50 and p99 from every claim', async () => {
    for (const id of ['a', 'b', 'c']) await admin.put(`/v1/jobs/emails/${id}`, { data: {} });
    const first = new RecordingInvoker();
    queue.clock.advance(200);
    await poller('p-1', first)({}, lambdaContext);
    expect(first.jobs).toHaveLength(3);

    queue.clock.set(T0 + 10_000);
    await admin.put('/v1/jobs/emails/d', { data: {}, run_after: iso(T0 + 5_000) });
    const second = new RecordingInvoker();
    await poller('p-2', second)({}, lambdaContext);
    expect(second.jobs).toHaveLength(1);

    const response = await admin.get('/v1/metrics?minutes=1');
    expect(response.status).toBe(200);
    // Three claims 200 ms late and one 5 s late: p50 is 200 ms, p99 (the 4th of 4) is 5 s.
    expect(response.body.minutes).toEqual([{ at: iso(T0), finished: NOTHING, lag_p50_ms: lagValue(200), lag_p99_ms: lagValue(5_000) }]);
  });

  test('each claim counts in the minute it was claimed', async () => {
    await admin.put('/v1/jobs/emails/a', { data: {} });
    queue.clock.advance(1_000);
    await poller('p-1', new RecordingInvoker())({}, lambdaContext);
    await admin.put('/v1/jobs/emails/b', { data: {}, run_after: iso(T0 + 60_000) });
    queue.clock.set(T0 + 60_000 + 30_000);
    await poller('p-1', new RecordingInvoker())({}, lambdaContext);

    const { body } = await admin.get('/v1/metrics?minutes=3');
    expect(body.minutes.map((minute: { at: string; lag_p50_ms: number | null }) => [minute.at, minute.lag_p50_ms])).toEqual([
      [iso(T0 - 60_000), null],
      [iso(T0), lagValue(1_000)],
      [iso(T0 + 60_000), lagValue(30_000)],
    ]);
  });

  test('a batch the worker never got is not counted', async () => {
    await admin.put('/v1/jobs/emails/a', { data: {} });
    const failing = { invoke: async () => Promise.reject(new Error('Lambda invoke failed')) } as unknown as RecordingInvoker;
    await poller('p-1', failing)({}, lambdaContext);
    expect((await admin.get('/v1/metrics?minutes=1')).body.minutes[0].lag_p50_ms).toBeNull();
  });
});

describe('finished attempts', () => {
  test('a worker counts succeeded, retried, failed and expired per type, and the route sums the types', async () => {
    const invoker = new RecordingInvoker();
    await admin.put('/v1/jobs/emails/ok-1', { data: {} });
    await admin.put('/v1/jobs/emails/ok-2', { data: {} });
    await admin.put('/v1/jobs/emails/late', { data: {}, expires_at: iso(T0 + 2_000) });
    await admin.put('/v1/jobs/reports/bad', { data: { message: 'no' } });
    await poller('p-1', invoker)({}, lambdaContext);
    const worker = createWorkerHandler({ ctx: queue.as('worker'), registry, worker: { id: 'w-1', host: 'host' } });
    queue.clock.advance(3_000);
    for (const batch of invoker.batches) await worker(batch);
    // The failing job's second attempt, in a second batch more than the flush interval later.
    queue.clock.advance(METRICS_FLUSH_INTERVAL_MS);
    const retry = new RecordingInvoker();
    await poller('p-1', retry)({}, lambdaContext);
    for (const batch of retry.batches) await worker(batch);

    const { body } = await admin.get('/v1/metrics?minutes=1');
    expect(body.minutes[0].finished).toEqual({ succeeded: 2, failed: 1, expired: 1, retried: 1 });
    expect(body.job_types).toEqual([
      { name: 'emails', minutes: [expect.objectContaining({ finished: { succeeded: 2, failed: 0, expired: 1, retried: 0 } })] },
      { name: 'reports', minutes: [expect.objectContaining({ finished: { succeeded: 0, failed: 1, expired: 0, retried: 1 } })] },
    ]);
  });

  test('an attempt ended by a status callback is counted by the api: succeeded, or retried when it fails with attempts left', async () => {
    const hooks = { target: { kind: 'handler', name: 'await_callback' }, attempts: 2, retry: { kind: 'fixed', delay_s: 0 } };
    expect((await admin.put('/v1/job-types/hooks', hooks)).status).toBe(201);
    for (const id of ['h-1', 'h-2']) await admin.put(`/v1/jobs/hooks/${id}`, { data: {} });
    const invoker = new RecordingInvoker();
    await poller('p-1', invoker)({}, lambdaContext);
    const worker = createWorkerHandler({ ctx: queue.as('worker'), registry, worker: { id: 'w-1', host: 'host' } });
    for (const batch of invoker.batches) await worker(batch);

    expect((await admin.post('/v1/jobs/hooks/h-1', { status: 'succeeded', attempt: 1 })).status).toBe(200);
    queue.clock.advance(METRICS_FLUSH_INTERVAL_MS);
    expect((await admin.post('/v1/jobs/hooks/h-2', { status: 'failed', attempt: 1 })).status).toBe(200);

    const { body } = await admin.get('/v1/metrics?minutes=1');
    const hooksMinute = body.job_types.find((type: { name: string }) => type.name === 'hooks').minutes[0];
    expect(hooksMinute.finished).toEqual({ succeeded: 1, failed: 0, expired: 0, retried: 1 });
  });
});

describe('writes', () => {
  test('a process writes at most once per flush interval, one item per type and minute', async () => {
    const { ctx, historyWrites } = watchedContext('worker');
    const recorder = createMetricsRecorder(ctx, () => undefined);
    recorder.recordLag('emails', 10, T0);
    recorder.recordLag('reports', 10, T0);
    recorder.recordFinished('emails', 'succeeded', T0);
    recorder.flushIfDue();
    await recorder.settled();
    expect(historyWrites()).toBe(2);

    queue.clock.advance(METRICS_FLUSH_INTERVAL_MS - 1);
    recorder.recordLag('emails', 10, queue.clock.nowMs());
    recorder.flushIfDue();
    await recorder.settled();
    expect(historyWrites()).toBe(2);

    queue.clock.advance(1);
    recorder.flushIfDue();
    await recorder.settled();
    expect(historyWrites()).toBe(3);
  });

  test('a history write that fails is logged and the status callback is answered as usual', async () => {
    const hooks = { target: { kind: 'handler', name: 'await_callback' } };
    expect((await admin.put('/v1/job-types/hooks', hooks)).status).toBe(201);
    await admin.put('/v1/jobs/hooks/h-1', { data: {} });
    const invoker = new RecordingInvoker();
    await poller('p-1', invoker)({}, lambdaContext);
    await createWorkerHandler({ ctx: queue.as('worker'), registry, worker: { id: 'w-1', host: 'host' } })(invoker.batches[0] as WorkerBatch);
    const failingApi = createTestApi({ as: (fn) => (fn === 'api' ? watchedContext('api', () => true).ctx : queue.as(fn)) });

    const response = await failingApi.post('/v1/jobs/hooks/h-1', { status: 'succeeded', attempt: 1 });

    expect(response.status).toBe(200);
    expect(response.body.status).toBe('succeeded');
    expect(loggedHistoryFailures()).toBe(1);
  });

  test('flushSoon writes counts held back by the interval once it is over, and only once', async () => {
    const { ctx, historyWrites } = watchedContext('worker');
    const recorder = createMetricsRecorder(ctx, () => undefined);
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      recorder.recordFinished('emails', 'succeeded', T0);
      recorder.flushSoon();
      recorder.recordFinished('emails', 'failed', T0);
      recorder.flushSoon();
      recorder.flushSoon();
      expect(historyWrites()).toBe(1);
      queue.clock.advance(METRICS_FLUSH_INTERVAL_MS);
      vi.advanceTimersByTime(METRICS_FLUSH_INTERVAL_MS);
      expect(historyWrites()).toBe(2);
      vi.advanceTimersByTime(10 * METRICS_FLUSH_INTERVAL_MS);
      expect(historyWrites()).toBe(2);
    } finally {
      vi.useRealTimers();
    }
    await recorder.settled();
    const { body } = await admin.get('/v1/metrics?minutes=1');
    expect(body.minutes[0].finished).toEqual({ ...NOTHING, succeeded: 1, failed: 1 });
  });

  test('the item expires a few hours after its minute', async () => {
    const recorder = createMetricsRecorder(queue.ctx, () => undefined);
    recorder.recordFinished('emails', 'succeeded', T0 + 5_000);
    recorder.flush();
    await recorder.settled();
    const { Items } = await queue.ctx.db.send(
      new QueryCommand({ TableName: queue.tableName, KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': 'METRICS#emails' } }),
    );
    expect(Items).toHaveLength(1);
    expect(Items![0]!.purgeAtS).toBe((T0 + 60_000) / 1000 + METRICS_RETENTION_S);
  });

  test('a history write that fails is logged and the poll claims and dispatches as usual', async () => {
    const { ctx } = watchedContext('poller', () => true);
    await admin.put('/v1/jobs/emails/a', { data: {} });
    const invoker = new RecordingInvoker();
    const result = await poller('p-1', invoker, ctx)({}, lambdaContext);
    expect(result).toMatchObject({ claimed: 1, dispatched: 1 });
    expect(invoker.jobs.map((job) => job.id)).toEqual(['a']);
    expect(loggedHistoryFailures()).toBe(1);
  });

  test('a history write that fails is logged and the job succeeds as usual', async () => {
    const { ctx } = watchedContext('worker', () => true);
    await admin.put('/v1/jobs/emails/a', { data: {} });
    const invoker = new RecordingInvoker();
    await poller('p-1', invoker)({}, lambdaContext);
    const counts = await createWorkerHandler({ ctx, registry, worker: { id: 'w-1', host: 'host' } })(invoker.batches[0] as WorkerBatch);
    expect(counts.succeeded).toBe(1);
    expect((await admin.get('/v1/jobs/emails/a')).body.status).toBe('succeeded');
    expect(loggedHistoryFailures()).toBe(1);
  });
});

describe('GET /v1/metrics', () => {
  test('gives 60 minutes by default, oldest first, the current one last, empty minutes as zeros with no lag', async () => {
    queue.clock.advance(30_000);
    const { status, body } = await admin.get('/v1/metrics');
    expect(status).toBe(200);
    expect(body.minutes).toHaveLength(60);
    expect(body.minutes[0]).toEqual({ at: iso(T0 - 59 * 60_000), finished: NOTHING, lag_p50_ms: null, lag_p99_ms: null });
    expect(body.minutes[59].at).toBe(iso(T0));
  });

  test.each(['0', '361', '1.5', 'x', '-1'])('minutes=%s is 400 naming minutes', async (minutes) => {
    const response = await admin.get(`/v1/metrics?minutes=${minutes}`);
    expect(response.status).toBe(400);
    expect(response.body.error.details).toEqual([expect.objectContaining({ field: 'minutes' })]);
  });

  test('a read: key sees the sums and the types it may read only; other keys are 403', async () => {
    const recorder = createMetricsRecorder(queue.ctx, () => undefined);
    recorder.recordFinished('emails', 'succeeded', T0);
    recorder.recordFinished('reports', 'failed', T0);
    recorder.flush();
    await recorder.settled();
    const reader = createApiClient(admin.handler, (await admin.post('/v1/keys', { scopes: ['read:emails'] })).body.key);
    const { body } = await reader.get('/v1/metrics?minutes=1');
    expect(body.minutes[0].finished).toEqual({ ...NOTHING, succeeded: 1 });
    expect(body.job_types.map((type: { name: string }) => type.name)).toEqual(['emails']);

    const producer = createApiClient(admin.handler, (await admin.post('/v1/keys', { scopes: ['enqueue:emails'] })).body.key);
    expect((await producer.get('/v1/metrics')).status).toBe(403);
  });
});
