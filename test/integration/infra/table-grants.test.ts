/**
 * The stack's DynamoDB grants against what the functions' code does, both
 * ways. Every call below goes through the local IAM check, so a grant missing
 * from infra/ fails the step that needs it; and a tour through what each
 * function does (an operator, a producer with a key of its own, the poller,
 * the worker, callbacks, the dashboard's reads, the sweeper, a schedule) must use every
 * grant each function has, so a grant the code does not need fails too.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createPollerHandler } from '../../../functions/poller/app.js';
import { createSweeperHandler } from '../../../functions/sweeper/app.js';
import { createWorkerHandler } from '../../../functions/worker/app.js';
import { registry } from '../../../functions/worker/handlers/index.js';
import { AccessDeniedException, type IamDecision } from '../../../infra/local/aws/iam/iam-check.js';
import { getSecretValueRequests, lambdaInvokeRequests } from '../../../infra/local/aws/iam/requests.js';
import { QUEUE_FUNCTIONS, type QueueFunctionName } from '../../../infra/local/aws/iam/stack-policies.js';
import { PARTITION_PREFIX } from '../../../lib/store/keys.js';
import type { WorkerBatch } from '../../../lib/domain/invocations.js';
import { fixedSecret } from '../../../lib/aws/secrets.js';
import { recordBatchStarts } from '../../../lib/queue/attempt/claim.js';
import { createApiClient, createTestApi, type ApiClient } from '../../support/api.js';
import { takeDeniedCalls } from '../../support/iam.js';
import { createTestQueue, type TestQueue } from '../../support/queue.js';
import { FailingInvoker, RecordingInvoker } from '../../support/lib-fixtures.js';

const HOUR_S = 3_600;
const lambdaContext = { getRemainingTimeInMillis: () => 60_000 };
const WORKER = { id: 'w-1', host: 'host' };

/** A table call as `call:family`, the way grants are written: `PutItem:directory`, `Query:dueIndex`. */
const used = new Map<QueueFunctionName, Set<string>>(QUEUE_FUNCTIONS.map((fn) => [fn, new Set<string>()]));

function familyOf(partition: string): string {
  const family = Object.entries(PARTITION_PREFIX).find(([, prefix]) => partition.startsWith(prefix))?.[0];
  if (!family) throw new Error(`no partition family for ${partition}`);
  return family;
}

function record({ fn, request, allowed }: IamDecision): void {
  if (!allowed || !request.action.startsWith('dynamodb:')) return;
  const call = request.action.slice('dynamodb:'.length);
  if (request.resource.includes('/index/')) {
    used.get(fn)!.add(`${call}:dueIndex`);
    return;
  }
  for (const partition of request.context['dynamodb:LeadingKeys'] as string[]) used.get(fn)!.add(`${call}:${familyOf(partition)}`);
}

/** What the stack grants `fn` on the table, in the same terms, read from the policies the check enforces. */
function granted(queue: TestQueue, fn: QueueFunctionName): Set<string> {
  const grants = new Set<string>();
  const familyByPattern = new Map(Object.entries(PARTITION_PREFIX).map(([family, prefix]) => [`${prefix}*`, family]));
  for (const statement of queue.iam.check.policies.functions[fn].Statement) {
    const actions = [statement.Action as string | string[]].flat().filter((action) => action.startsWith('dynamodb:'));
    for (const action of actions) {
      const call = action.slice('dynamodb:'.length);
      if (String(statement.Resource).includes('/index/')) {
        grants.add(`${call}:dueIndex`);
        continue;
      }
      const condition = (statement.Condition as Record<string, Record<string, string[]>> | undefined)?.['ForAllValues:StringLike'];
      for (const pattern of condition?.['dynamodb:LeadingKeys'] ?? ['(every item)']) grants.add(`${call}:${familyByPattern.get(pattern) ?? pattern}`);
    }
  }
  return grants;
}

/** A downstream that answers every job 200 at once, so http jobs need only the worker. */
const sink = createServer((request, response) => request.resume().on('end', () => response.writeHead(200).end()));
let sinkUrl: string;

let queue: TestQueue;
let operator: ApiClient;
let producer: ApiClient;
let producerKeyId: string;
const invoker = new RecordingInvoker();
/** Wakes go nowhere: the tour invokes each function itself. */
const wakes = { wake: async () => undefined };

const advanceS = (seconds: number): void => queue.clock.advance(seconds * 1000);
const poll = () => createPollerHandler({ ctx: queue.as('poller'), invoker, identity: { id: 'p-1', host: 'host' } })({}, lambdaContext);
const sweep = () => createSweeperHandler({ ctx: queue.as('sweeper'), registry })({}, lambdaContext);
const runWorker = (batch: WorkerBatch) =>
  createWorkerHandler({
    ctx: queue.as('worker'),
    registry,
    worker: WORKER,
    targets: { http: { apiBaseUrl: 'http://127.0.0.1', callbackTokenSecret: fixedSecret('cbs_tour') } },
  })(batch);

beforeAll(async () => {
  await new Promise<void>((resolve) => sink.listen(0, '127.0.0.1', resolve));
  sinkUrl = `http://127.0.0.1:${(sink.address() as AddressInfo).port}/jobs`;
  // One poll or sweep per invocation: the manual clock does not move by itself.
  queue = await createTestQueue({ settings: { shards: 1, pollerRunMs: 0 }, onIamDecision: record, waker: wakes });
  operator = createTestApi(queue);
});
afterAll(async () => {
  await queue.drop();
  await new Promise((resolve) => sink.close(resolve));
});

describe('a tour of every function', () => {
  test('an operator defines job types and creates a producer key', async () => {
    const echo = { target: { kind: 'handler', name: 'echo' } };
    expect((await operator.put('/v1/job-types/plain', echo)).status).toBe(201);
    // A limited type takes slots; a claim of 5 minutes ends beyond the next bucket; a retry waits an hour.
    const limited = { ...echo, concurrency: 4, visibility_timeout_s: 300, retry: { kind: 'fixed', delay_s: HOUR_S } };
    expect((await operator.put('/v1/job-types/limited', limited)).status).toBe(201);
    const hooks = { target: { kind: 'handler', name: 'await_callback' }, concurrency: 4, timeout_s: HOUR_S };
    expect((await operator.put('/v1/job-types/hooks', hooks)).status).toBe(201);
    expect((await operator.put('/v1/job-types/webhooks', { target: { kind: 'http', url: sinkUrl } })).status).toBe(201);
    const created = await operator.post('/v1/keys', { scopes: ['admin'], name: 'producer' });
    expect(created.status).toBe(201);
    producerKeyId = created.body.id;
    producer = createApiClient(operator.handler, created.body.key);
    expect((await operator.get('/v1/keys')).body.keys).toHaveLength(1);
  });

  test('a producer with a key of its own enqueues now, tomorrow, and with a correlation key', async () => {
    expect((await producer.put('/v1/jobs/plain/p1', { data: 1 })).status).toBe(201);
    expect((await producer.put('/v1/jobs/plain/tomorrow', { data: 1, run_after: new Date(queue.clock.nowMs() + 24 * HOUR_S * 1000).toISOString() })).status).toBe(201);
    expect((await producer.put('/v1/jobs/limited/l1', { data: 1 })).status).toBe(201);
    expect((await producer.put('/v1/jobs/hooks/h1', { data: 1, correlation_key: 'order-7' })).status).toBe(201);
    expect((await producer.put('/v1/jobs/webhooks/w1', { data: 1 })).status).toBe(201);
  });

  test('a producer enqueues twice with a dedup key and twice with a debounce key, each second time answered with the first job', async () => {
    const tomorrow = new Date(queue.clock.nowMs() + 24 * HOUR_S * 1000).toISOString();
    for (const [n, status] of [[1, 201], [2, 200]] as const) {
      expect((await producer.post('/v1/jobs/limited', { data: n, run_after: tomorrow, dedup: { key: 'd', window_s: 60 } })).status).toBe(status);
      expect((await producer.post('/v1/jobs/limited', { data: n, debounce: { key: 'd', delay_s: 24 * HOUR_S } })).status).toBe(status);
    }
  });

  test('the poller claims the due jobs, minutes later, and hands them over', async () => {
    advanceS(5 * 60);
    expect(await poll()).toMatchObject({ claimed: 4, dispatched: 4 });
  });

  test('the worker runs them: the echoes and the webhook succeed, the callback wait holds its job for an hour', async () => {
    const outcomes = await Promise.all(invoker.batches.map(runWorker));
    expect(outcomes.reduce((sum, counts) => sum + counts.succeeded, 0)).toBe(3);
    expect(outcomes.reduce((sum, counts) => sum + counts.awaiting_callback, 0)).toBe(1);
  });

  test('the correlation callback completes the waiting job and drops its pointer', async () => {
    const response = await producer.post('/v1/callbacks/order-7', { status: 'succeeded', attempt: 1 });
    expect(response.status).toBe(200);
    expect(response.body.status).toBe('succeeded');
  });

  test("the dashboard's reads: stats, metrics, listings, a job", async () => {
    expect((await producer.get('/v1/stats')).status).toBe(200);
    expect((await producer.get('/v1/metrics')).status).toBe(200);
    expect((await producer.get('/v1/job-types')).body.job_types).toHaveLength(4);
    expect((await producer.get('/v1/jobs/plain?status=queued')).body.jobs.map((job: { id: string }) => job.id)).toEqual(['tomorrow']);
    expect((await producer.get('/v1/jobs/plain?tag=nightly')).body.jobs).toEqual([]);
    expect((await producer.get('/v1/jobs/plain/p1')).body.status).toBe('succeeded');
  });

  test("a worker's failed attempt retries in a second: it asks the poller's wake item for someone awake then", async () => {
    expect((await operator.put('/v1/job-types/flaky', { target: { kind: 'handler', name: 'fail' }, retry: { kind: 'fixed', delay_s: 1 } })).status).toBe(201);
    expect((await producer.put('/v1/jobs/flaky/f1', { data: { message: 'not yet' } })).status).toBe(201);
    const before = invoker.batches.length;
    expect(await poll()).toMatchObject({ claimed: 1 });
    expect((await runWorker(invoker.batches[before]!)).retrying).toBe(1);
    // Paused, so the retry stays out of the later steps' claims.
    expect((await operator.post('/v1/job-types/flaky/pause', {})).status).toBe(200);
  });

  test('a callback wait holds its slot for an hour', async () => {
    expect((await producer.put('/v1/jobs/hooks/h2', { data: 2, tags: ['tour'] })).status).toBe(201);
    const before = invoker.batches.length;
    expect(await poll()).toMatchObject({ claimed: 1 });
    expect((await runWorker(invoker.batches[before]!)).awaiting_callback).toBe(1);
  });

  test('the sweeper takes back a claim whose worker died and retries it in an hour, and finds the slot of the wait held', async () => {
    expect((await producer.put('/v1/jobs/limited/l2', { data: 2 })).status).toBe(201);
    const before = invoker.batches.length;
    expect(await poll()).toMatchObject({ claimed: 1 });
    expect(invoker.batches.length).toBe(before + 1);
    // The worker records its batch's start, then dies: a claim never started would go back uncounted instead.
    const starts = await recordBatchStarts(queue.as('worker'), invoker.batches[before]!.jobs, WORKER);
    expect([...starts.values()]).toEqual(['started']);
    advanceS(301);
    expect(await sweep()).toMatchObject({ requeued: 1, reconciled: 0 });
  });

  test('an operator bulk-retries the failed jobs with a tag of one type and bulk-cancels the queued ones of another; the sweeper runs both', async () => {
    expect((await producer.post('/v1/jobs/hooks/h2', { status: 'failed', attempt: 1, retryable: false })).body.status).toBe('failed');
    const retry = await producer.post('/v1/jobs/hooks/bulk', { action: 'retry', status: 'failed', tag: 'tour' });
    const cancel = await producer.post('/v1/jobs/plain/bulk', { action: 'cancel', status: 'queued' });
    expect([retry.status, cancel.status]).toEqual([202, 202]);
    await sweep();
    expect((await producer.get(`/v1/operations/${retry.body.id}`)).body).toMatchObject({ state: 'succeeded', matched: 1, done: 1 });
    expect((await producer.get(`/v1/operations/${cancel.body.id}`)).body).toMatchObject({ state: 'succeeded', matched: 1, done: 1 });
  });

  test('a producer cancels a running job: the api marks its seat, and its worker, watching the start record, stops it', async () => {
    expect((await producer.put('/v1/jobs/plain/long', { data: { ms: 60_000 } })).status).toBe(201);
    const before = invoker.batches.length;
    expect(await poll()).toMatchObject({ claimed: 1 });
    const batch = invoker.batches[before]!;
    let started!: () => void;
    const running = new Promise<void>((resolve) => (started = resolve));
    const sleep = registry.handlers.sleep!;
    const sleeping = createWorkerHandler({
      ctx: queue.as('worker'),
      registry: { ...registry, handlers: { ...registry.handlers, echo: (data, context) => (started(), sleep(data, context)) } },
      worker: WORKER,
      cancelWatchIntervalMs: 20,
    })(batch);
    await running;
    expect((await producer.delete('/v1/jobs/plain/long')).status).toBe(202);
    expect((await sleeping).cancelled).toBe(1);
  });

  test('an operator bulk-cancels the running jobs of a type; the sweeper asks each to stop', async () => {
    expect((await producer.put('/v1/jobs/plain/stuck', { data: 1 })).status).toBe(201);
    const before = invoker.batches.length;
    expect(await poll()).toMatchObject({ claimed: 1 });
    await recordBatchStarts(queue.as('worker'), invoker.batches[before]!.jobs, WORKER);
    const cancel = await producer.post('/v1/jobs/plain/bulk', { action: 'cancel', status: 'running', include_running: true });
    expect(cancel.status).toBe(202);
    await sweep();
    expect((await producer.get(`/v1/operations/${cancel.body.id}`)).body).toMatchObject({ state: 'succeeded', matched: 1, done: 1 });
  });

  test('an operator schedules a job every minute, skipped while the last still runs; the poller fires it twice; the operator reads, lists and deletes the schedule', async () => {
    expect((await operator.put('/v1/schedules/minutely', { cron: '* * * * *', job_type: 'plain', overlap: 'skip', tags: ['minutely'] })).status).toBe(201);
    advanceS(60);
    await poll();
    advanceS(60);
    await poll();
    const shown = await operator.get('/v1/schedules/minutely');
    // The first fire's job is still queued: no worker ran it.
    expect(shown.body.last_fire).toMatchObject({ job_id: null, skipped: expect.stringMatching(/minutely@/) });
    expect((await operator.get('/v1/schedules')).body.schedules).toHaveLength(1);
    expect((await operator.delete('/v1/schedules/minutely')).status).toBe(200);
  });

  test('the poller, back after a day away, walks its lanes through the bucket directory', async () => {
    advanceS(24 * HOUR_S);
    await poll();
  });

  test('a batch whose invoke fails has its seats taken from any worker, then its claims handed back', async () => {
    expect((await operator.put('/v1/jobs/plain/lost-invoke', { data: 1 })).status).toBe(201);
    const failing = createPollerHandler({ ctx: queue.as('poller'), invoker: new FailingInvoker(), identity: { id: 'p-1', host: 'host' } });
    expect(await failing({}, lambdaContext)).toMatchObject({ claimed: 1, released: 1 });
  });

  test('the operator revokes the producer key', async () => {
    expect((await operator.delete(`/v1/keys/${producerKeyId}`)).status).toBe(200);
    expect((await producer.get('/v1/stats')).status).toBe(403);
  });
});

describe('other services', () => {
  test.each(QUEUE_FUNCTIONS)('the %s may read the callback token secret only if it signs or verifies callback tokens', async (fn) => {
    const { account, arns } = queue.iam.check.policies;
    const read = queue.iam.check.forFunction(fn).authorize(getSecretValueRequests(arns.callbackTokenSecret, account));
    if (fn === 'worker' || fn === 'authorizer') await expect(read).resolves.toBeUndefined();
    else await expect(read).rejects.toBeInstanceOf(AccessDeniedException);
    takeDeniedCalls();
  });

  test.each(QUEUE_FUNCTIONS)('the %s may invoke the worker only if it is the poller', async (fn) => {
    const { account, arns } = queue.iam.check.policies;
    const invoke = queue.iam.check.forFunction(fn).authorize(lambdaInvokeRequests(arns.workerFunction, account));
    if (fn === 'poller') await expect(invoke).resolves.toBeUndefined();
    else await expect(invoke).rejects.toBeInstanceOf(AccessDeniedException);
    takeDeniedCalls();
  });
});

describe('grants', () => {
  test.each(QUEUE_FUNCTIONS)('the %s used every table grant it has in the stack, and needed no other', (fn) => {
    expect([...used.get(fn)!].sort()).toEqual([...granted(queue, fn)].sort());
  });
});
