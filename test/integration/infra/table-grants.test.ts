/**
 * The stack's DynamoDB grants against what the functions' code does, both
 * ways. Every call below goes through the local IAM check, so a grant missing
 * from infra/ fails the stop that needs it; and a tour through what each
 * function does (an operator, a producer with a key of its own, the poller,
 * the worker, callbacks, the dashboard's reads, the sweeper, a schedule) must use every
 * grant each function has, so a grant the code does not need fails too. Each
 * stop of the tour sets up what it needs on a table of its own, so it runs
 * alone and in any order; the grants are checked against all the stops.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createPollerHandler } from '../../../functions/poller/app.js';
import { createSweeperHandler } from '../../../functions/sweeper/app.js';
import { createWakerHandler } from '../../../functions/waker/app.js';
import { createWorkerHandler } from '../../../functions/worker/app.js';
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { registry } from '../../../functions/worker/handlers/index.js';
import { AccessDeniedException, type IamDecision } from '../../../infra/local/aws/iam/iam-check.js';
import { getParameterRequests, lambdaInvokeRequests, putParameterRequests } from '../../../infra/local/aws/iam/requests.js';
import { QUEUE_FUNCTIONS, type QueueFunctionName } from '../../../infra/local/aws/iam/stack-policies.js';
import { jobKey, lanePartition, PARTITION_PREFIX } from '../../../lib/store/keys.js';
import type { WakeTimers, WorkerBatch, WorkerInvoker } from '../../../lib/domain/invocations.js';
import type { WorkerRegistry } from '../../../lib/queue/attempt/run-batch.js';
import { fixedSecret } from '../../../lib/aws/secrets.js';
import { recordBatchStarts } from '../../../lib/queue/attempt/claim.js';
import { createApiClient, createTestApi, type ApiClient } from '../../support/api.js';
import { localIamFor, takeDeniedCalls } from '../../support/iam.js';
import { createTestQueue } from '../../support/queue.js';
import { FailingInvoker, RecordingInvoker } from '../../support/lib-fixtures.js';

const HOUR_S = 3_600;
const lambdaContext = { getRemainingTimeInMillis: () => 60_000 };
const WORKER = { id: 'w-1', host: 'host' };

/** What each function called on the table, as `call:family`, the way grants are written: `PutItem:directory`, `Query:dueIndex`. */
type TableCalls = Map<QueueFunctionName, Set<string>>;

function familyOf(partition: string): string {
  const family = Object.entries(PARTITION_PREFIX).find(([, prefix]) => partition.startsWith(prefix))?.[0];
  if (!family) throw new Error(`no partition family for ${partition}`);
  return family;
}

/** Records each allowed table call into `used`. */
const recordInto =
  (used: TableCalls) =>
  ({ fn, request, allowed }: IamDecision): void => {
    if (!allowed || !request.action.startsWith('dynamodb:')) return;
    const calls = used.get(fn)!;
    const call = request.action.slice('dynamodb:'.length);
    if (request.resource.includes('/index/')) {
      calls.add(`${call}:dueIndex`);
      return;
    }
    for (const partition of request.context['dynamodb:LeadingKeys'] as string[]) calls.add(`${call}:${familyOf(partition)}`);
  };

/** The stack's policies made concrete for a table; the checks below need no table of their own. */
const stackIam = () => localIamFor('table-grants');

/** What the stack grants `fn` on the table, in the same terms, read from the policies the check enforces. */
function granted(fn: QueueFunctionName): Set<string> {
  const grants = new Set<string>();
  const familyByPattern = new Map(Object.entries(PARTITION_PREFIX).map(([family, prefix]) => [`${prefix}*`, family]));
  const { policies } = stackIam().check;
  for (const statement of policies.functions[fn].Statement) {
    // The table's stream is read by the waker's event source mapping, not by its code: table-stream.delivery tests it.
    if (statement.Resource === policies.arns.tableStream) continue;
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

beforeAll(async () => {
  await new Promise<void>((resolve) => sink.listen(0, '127.0.0.1', resolve));
  sinkUrl = `http://127.0.0.1:${(sink.address() as AddressInfo).port}/jobs`;
});
afterAll(async () => {
  await new Promise((resolve) => sink.close(resolve));
});

/** Wakes go nowhere: the tour invokes each function itself. */
const wakes = { wake: async () => undefined };

const ECHO = { target: { kind: 'handler', name: 'echo' } };
const TYPES = {
  plain: () => ECHO,
  // A limited type takes slots; a claim of 5 minutes ends beyond the next bucket; a retry waits an hour.
  limited: () => ({ ...ECHO, concurrency: 4, visibility_timeout_s: 300, retry: { kind: 'fixed', delay_s: HOUR_S } }),
  hooks: () => ({ target: { kind: 'handler', name: 'await_callback' }, concurrency: 4, timeout_s: HOUR_S }),
  webhooks: () => ({ target: { kind: 'http', url: sinkUrl } }),
};

/** A table of its own, an operator, and the functions as the stack runs them, each invoked by the test. */
async function startTour(onIamDecision?: (decision: IamDecision) => void) {
  // One poll or sweep per invocation: the manual clock does not move by itself.
  const queue = await createTestQueue({ settings: { shards: 1, pollerRunMs: 0 }, waker: wakes, ...(onIamDecision ? { onIamDecision } : {}) });
  const operator = createTestApi(queue);
  const invoker = new RecordingInvoker();
  return {
    queue,
    operator,
    advanceS: (seconds: number): void => queue.clock.advance(seconds * 1000),
    /** One poller invocation, with the batches it handed to the worker. */
    async poll(pollerInvoker: WorkerInvoker = invoker) {
      const before = invoker.batches.length;
      const result = await createPollerHandler({ ctx: queue.as('poller'), invoker: pollerInvoker, identity: { id: 'p-1', host: 'host' } })({}, lambdaContext);
      return { ...result, batches: invoker.batches.slice(before) };
    },
    sweep: () => createSweeperHandler({ ctx: queue.as('sweeper'), registry })({}, lambdaContext),
    runWorker: (batch: WorkerBatch, workerRegistry: WorkerRegistry = registry, options: { cancelWatchIntervalMs?: number } = {}) =>
      createWorkerHandler({
        ctx: queue.as('worker'),
        registry: workerRegistry,
        worker: WORKER,
        targets: { http: { apiBaseUrl: 'http://127.0.0.1', callbackTokenSecret: fixedSecret('cbs_tour') } },
        ...options,
      })(batch),
    /** A key the operator makes for a producer, and the producer's client. */
    async producerKey() {
      const created = await operator.post('/v1/keys', { scopes: ['admin'], name: 'producer' });
      expect(created.status).toBe(201);
      return { producer: createApiClient(operator.handler, created.body.key), keyId: String(created.body.id) };
    },
    async defineTypes(...names: (keyof typeof TYPES)[]): Promise<void> {
      for (const name of names) expect((await operator.put(`/v1/job-types/${name}`, TYPES[name]())).status).toBe(201);
    },
  };
}

type Tour = Awaited<ReturnType<typeof startTour>>;

const tomorrowOf = (tour: Tour): string => new Date(tour.queue.clock.nowMs() + 24 * HOUR_S * 1000).toISOString();

/** A producer's first jobs: one due now of each type (h1 with a correlation key), and one of plain due tomorrow. */
async function enqueueFirstJobs(tour: Tour, producer: ApiClient): Promise<void> {
  expect((await producer.put('/v1/jobs/plain/p1', { data: 1 })).status).toBe(201);
  expect((await producer.put('/v1/jobs/plain/tomorrow', { data: 1, run_after: tomorrowOf(tour) })).status).toBe(201);
  expect((await producer.put('/v1/jobs/limited/l1', { data: 1 })).status).toBe(201);
  expect((await producer.put('/v1/jobs/hooks/h1', { data: 1, correlation_key: 'order-7' })).status).toBe(201);
  expect((await producer.put('/v1/jobs/webhooks/w1', { data: 1 })).status).toBe(201);
}

/** The first jobs enqueued, and the four due claimed minutes later: the batches the poller handed over. */
async function firstJobsClaimed(tour: Tour): Promise<{ producer: ApiClient; batches: WorkerBatch[] }> {
  await tour.defineTypes('plain', 'limited', 'hooks', 'webhooks');
  const { producer } = await tour.producerKey();
  await enqueueFirstJobs(tour, producer);
  tour.advanceS(5 * 60);
  return { producer, batches: (await tour.poll()).batches };
}

/** The first jobs run: the echoes and the webhook succeeded, h1 awaits its callback. */
async function firstJobsRun(tour: Tour): Promise<ApiClient> {
  const { producer, batches } = await firstJobsClaimed(tour);
  for (const batch of batches) await tour.runWorker(batch);
  return producer;
}

/** h2, tagged `tour`, claimed and run: it awaits its callback for an hour, holding a slot of hooks. */
async function hookAwaitingCallback(tour: Tour, producer: ApiClient) {
  expect((await producer.put('/v1/jobs/hooks/h2', { data: 2, tags: ['tour'] })).status).toBe(201);
  const claimed = await tour.poll();
  expect(claimed).toMatchObject({ claimed: 1 });
  return tour.runWorker(claimed.batches[0]!);
}

/** The stops of the tour by name; each one is a test, and the grants are checked against all of them. */
const stops = new Map<string, (tour: Tour) => Promise<void>>();

/** Runs `stop` on a table of its own, recording its calls with `onIamDecision`. */
async function onItsOwnTable(stop: (tour: Tour) => Promise<void>, onIamDecision?: (decision: IamDecision) => void): Promise<void> {
  const tour = await startTour(onIamDecision);
  try {
    await stop(tour);
  } finally {
    await tour.queue.drop();
  }
}

function tourStop(name: string, stop: (tour: Tour) => Promise<void>): void {
  stops.set(name, stop);
  test(name, () => onItsOwnTable(stop));
}

describe('a tour of every function', () => {
  tourStop('an operator defines job types and creates a producer key', async (tour) => {
    await tour.defineTypes('plain', 'limited', 'hooks', 'webhooks');
    await tour.producerKey();
    expect((await tour.operator.get('/v1/keys')).body.keys).toHaveLength(1);
  });

  tourStop('a producer with a key of its own enqueues now, tomorrow, and with a correlation key', async (tour) => {
    await tour.defineTypes('plain', 'limited', 'hooks', 'webhooks');
    const { producer } = await tour.producerKey();
    await enqueueFirstJobs(tour, producer);
  });

  tourStop('a producer enqueues twice with a dedup key and twice with a debounce key, each second time answered with the first job', async (tour) => {
    await tour.defineTypes('limited');
    const { producer } = await tour.producerKey();
    const tomorrow = tomorrowOf(tour);
    for (const [n, status] of [[1, 201], [2, 200]] as const) {
      expect((await producer.post('/v1/jobs/limited', { data: n, run_after: tomorrow, dedup: { key: 'd', window_s: 60 } })).status).toBe(status);
      expect((await producer.post('/v1/jobs/limited', { data: n, debounce: { key: 'd', delay_s: 24 * HOUR_S } })).status).toBe(status);
    }
  });

  tourStop('the poller claims the due jobs, minutes later, and hands them over', async (tour) => {
    await tour.defineTypes('plain', 'limited', 'hooks', 'webhooks');
    const { producer } = await tour.producerKey();
    await enqueueFirstJobs(tour, producer);
    tour.advanceS(5 * 60);
    expect(await tour.poll()).toMatchObject({ claimed: 4, dispatched: 4 });
  });

  tourStop('the worker runs them: the echoes and the webhook succeed, the callback wait holds its job for an hour', async (tour) => {
    const { batches } = await firstJobsClaimed(tour);
    const outcomes = await Promise.all(batches.map((batch) => tour.runWorker(batch)));
    expect(outcomes.reduce((sum, counts) => sum + counts.succeeded, 0)).toBe(3);
    expect(outcomes.reduce((sum, counts) => sum + counts.awaiting_callback, 0)).toBe(1);
  });

  tourStop('the correlation callback completes the waiting job and drops its pointer', async (tour) => {
    const producer = await firstJobsRun(tour);
    const response = await producer.post('/v1/callbacks/order-7', { status: 'succeeded', attempt: 1 });
    expect(response.status).toBe(200);
    expect(response.body.status).toBe('succeeded');
  });

  tourStop("the dashboard's reads: stats, metrics, listings, a job", async (tour) => {
    const producer = await firstJobsRun(tour);
    expect((await producer.get('/v1/stats')).status).toBe(200);
    expect((await producer.get('/v1/metrics')).status).toBe(200);
    expect((await producer.get('/v1/job-types')).body.job_types).toHaveLength(4);
    expect((await producer.get('/v1/jobs/plain?status=queued')).body.jobs.map((job: { id: string }) => job.id)).toEqual(['tomorrow']);
    expect((await producer.get('/v1/jobs/plain?tag=nightly')).body.jobs).toEqual([]);
    expect((await producer.get('/v1/jobs/plain/p1')).body.status).toBe('succeeded');
  });

  tourStop("a worker's failed attempt retries in a second: it asks the poller's wake item for someone awake then", async (tour) => {
    const { producer } = await tour.producerKey();
    expect((await tour.operator.put('/v1/job-types/flaky', { target: { kind: 'handler', name: 'fail' }, retry: { kind: 'fixed', delay_s: 1 } })).status).toBe(201);
    expect((await producer.put('/v1/jobs/flaky/f1', { data: { message: 'not yet' } })).status).toBe(201);
    const claimed = await tour.poll();
    expect(claimed).toMatchObject({ claimed: 1 });
    expect((await tour.runWorker(claimed.batches[0]!)).retrying).toBe(1);
    expect((await tour.operator.post('/v1/job-types/flaky/pause', {})).status).toBe(200);
  });

  tourStop('a callback wait holds its slot for an hour', async (tour) => {
    await tour.defineTypes('hooks');
    const { producer } = await tour.producerKey();
    expect((await hookAwaitingCallback(tour, producer)).awaiting_callback).toBe(1);
  });

  tourStop('the sweeper takes back a claim whose worker died and retries it in an hour, and finds the slot of the wait held', async (tour) => {
    await tour.defineTypes('limited', 'hooks');
    const { producer } = await tour.producerKey();
    await hookAwaitingCallback(tour, producer);
    expect((await producer.put('/v1/jobs/limited/l2', { data: 2 })).status).toBe(201);
    const claimed = await tour.poll();
    expect(claimed).toMatchObject({ claimed: 1 });
    expect(claimed.batches).toHaveLength(1);
    // The worker records its batch's start, then dies: a claim never started would go back uncounted instead.
    const starts = await recordBatchStarts(tour.queue.as('worker'), claimed.batches[0]!.jobs, WORKER);
    expect([...starts.values()]).toEqual(['started']);
    tour.advanceS(301);
    expect(await tour.sweep()).toMatchObject({ requeued: 1, reconciled: 0 });
  });

  tourStop('an operator bulk-retries the failed jobs with a tag of one type and bulk-cancels the queued ones of another; the sweeper runs both', async (tour) => {
    await tour.defineTypes('plain', 'hooks');
    const { producer } = await tour.producerKey();
    await hookAwaitingCallback(tour, producer);
    expect((await producer.put('/v1/jobs/plain/tomorrow', { data: 1, run_after: tomorrowOf(tour) })).status).toBe(201);
    expect((await producer.post('/v1/jobs/hooks/h2', { status: 'failed', attempt: 1, retryable: false })).body.status).toBe('failed');
    const retry = await producer.post('/v1/jobs/hooks/bulk', { action: 'retry', status: 'failed', tag: 'tour' });
    const cancel = await producer.post('/v1/jobs/plain/bulk', { action: 'cancel', status: 'queued' });
    expect([retry.status, cancel.status]).toEqual([202, 202]);
    await tour.sweep();
    expect((await producer.get(`/v1/operations/${retry.body.id}`)).body).toMatchObject({ state: 'succeeded', matched: 1, done: 1 });
    expect((await producer.get(`/v1/operations/${cancel.body.id}`)).body).toMatchObject({ state: 'succeeded', matched: 1, done: 1 });
  });

  tourStop('a producer cancels a running job: the api marks its seat, and its worker, watching the start record, stops it', async (tour) => {
    await tour.defineTypes('plain');
    const { producer } = await tour.producerKey();
    expect((await producer.put('/v1/jobs/plain/long', { data: { ms: 60_000 } })).status).toBe(201);
    const claimed = await tour.poll();
    expect(claimed).toMatchObject({ claimed: 1 });
    let started!: () => void;
    const running = new Promise<void>((resolve) => (started = resolve));
    const sleep = registry.handlers.sleep!;
    const sleeping = tour.runWorker(
      claimed.batches[0]!,
      { ...registry, handlers: { ...registry.handlers, echo: (data, context) => (started(), sleep(data, context)) } },
      { cancelWatchIntervalMs: 20 },
    );
    await running;
    expect((await producer.delete('/v1/jobs/plain/long')).status).toBe(202);
    expect((await sleeping).cancelled).toBe(1);
  });

  tourStop('an operator bulk-cancels the running jobs of a type; the sweeper asks each to stop', async (tour) => {
    await tour.defineTypes('plain');
    const { producer } = await tour.producerKey();
    expect((await producer.put('/v1/jobs/plain/stuck', { data: 1 })).status).toBe(201);
    const claimed = await tour.poll();
    expect(claimed).toMatchObject({ claimed: 1 });
    await recordBatchStarts(tour.queue.as('worker'), claimed.batches[0]!.jobs, WORKER);
    const cancel = await producer.post('/v1/jobs/plain/bulk', { action: 'cancel', status: 'running', include_running: true });
    expect(cancel.status).toBe(202);
    await tour.sweep();
    expect((await producer.get(`/v1/operations/${cancel.body.id}`)).body).toMatchObject({ state: 'succeeded', matched: 1, done: 1 });
  });

  tourStop('an operator schedules a job every minute, skipped while the last still runs; the poller fires it twice; the operator reads, lists and deletes the schedule', async (tour) => {
    await tour.defineTypes('plain');
    const { operator } = tour;
    expect((await operator.put('/v1/schedules/minutely', { cron: '* * * * *', job_type: 'plain', overlap: 'skip', tags: ['minutely'] })).status).toBe(201);
    tour.advanceS(60);
    await tour.poll();
    tour.advanceS(60);
    await tour.poll();
    const shown = await operator.get('/v1/schedules/minutely');
    // The first fire's job is still queued: no worker ran it.
    expect(shown.body.last_fire).toMatchObject({ job_id: null, skipped: expect.stringMatching(/minutely@/) });
    expect((await operator.get('/v1/schedules')).body.schedules).toHaveLength(1);
    expect((await operator.delete('/v1/schedules/minutely')).status).toBe(200);
  });

  tourStop('the poller, back after a day away, walks its lanes through the bucket directory to the job that fell due meanwhile', async (tour) => {
    await tour.defineTypes('plain');
    expect((await tour.operator.put('/v1/jobs/plain/tomorrow', { data: 1, run_after: tomorrowOf(tour) })).status).toBe(201);
    expect(await tour.poll()).toMatchObject({ claimed: 0 });
    tour.advanceS(24 * HOUR_S);
    // A day's walk runs out of queries: each invocation walks on and says it is still behind, until it is not.
    const polls = [await tour.poll()];
    while (polls.at(-1)!.behind && polls.length < 20) polls.push(await tour.poll());
    expect(polls.at(-1)!.behind).toBe(false);
    expect(polls.reduce((claimed, poll) => claimed + poll.claimed, 0)).toBe(1);
  });

  tourStop('a batch whose invoke fails has its seats taken from any worker, then its claims handed back', async (tour) => {
    await tour.defineTypes('plain');
    expect((await tour.operator.put('/v1/jobs/plain/lost-invoke', { data: 1 })).status).toBe(201);
    expect(await tour.poll(new FailingInvoker())).toMatchObject({ claimed: 1, released: 1 });
  });

  tourStop('the waker, handed a job just enqueued by the table stream, wakes its poller; a timer that comes back looks whether its claim is still due, and wakes the sweeper', async (tour) => {
    await tour.defineTypes('plain');
    expect((await tour.operator.put('/v1/jobs/plain/streamed', { data: 1 })).status).toBe(201);
    const { queue } = tour;
    const { Item } = await queue.clients.base.send(new GetItemCommand({ TableName: queue.tableName, Key: marshall(jobKey('plain', 'streamed')) }));
    const timers: WakeTimers = { arm: async () => undefined };
    const waker = createWakerHandler({ ctx: queue.as('waker'), timers });
    await waker({ Records: [{ eventSource: 'aws:dynamodb', eventName: 'INSERT', dynamodb: { NewImage: Item } }] });
    const timer = { role: 'sweeper', partition: 0, dueAtMs: queue.clock.nowMs(), lanePartitions: [lanePartition({ kind: 'claims' }, 0, 0)] };
    await waker({ Records: [{ eventSource: 'aws:sqs', body: JSON.stringify(timer) }] });
  });

  tourStop('the operator revokes the producer key', async (tour) => {
    const { producer, keyId } = await tour.producerKey();
    expect((await tour.operator.delete(`/v1/keys/${keyId}`)).status).toBe(200);
    expect((await producer.get('/v1/stats')).status).toBe(403);
  });
});

describe('other services', () => {
  test.each(QUEUE_FUNCTIONS)('the %s may read the callback token parameter only if it signs or verifies callback tokens, and create it only if it signs them', async (fn) => {
    const { check } = stackIam();
    const { account, arns } = check.policies;
    const read = check.forFunction(fn).authorize(getParameterRequests(arns.callbackTokenParameter, account));
    const create = check.forFunction(fn).authorize(putParameterRequests(arns.callbackTokenParameter, false, account));
    const overwrite = check.forFunction(fn).authorize(putParameterRequests(arns.callbackTokenParameter, true, account));
    if (fn === 'worker' || fn === 'authorizer') await expect(read).resolves.toBeUndefined();
    else await expect(read).rejects.toBeInstanceOf(AccessDeniedException);
    if (fn === 'worker') await expect(create).resolves.toBeUndefined();
    else await expect(create).rejects.toBeInstanceOf(AccessDeniedException);
    await expect(overwrite).rejects.toBeInstanceOf(AccessDeniedException);
    takeDeniedCalls();
  });

  test.each(QUEUE_FUNCTIONS)('the %s may invoke the worker only if it is the poller', async (fn) => {
    const { check } = stackIam();
    const { account, arns } = check.policies;
    const invoke = check.forFunction(fn).authorize(lambdaInvokeRequests(arns.workerFunction, account));
    if (fn === 'poller') await expect(invoke).resolves.toBeUndefined();
    else await expect(invoke).rejects.toBeInstanceOf(AccessDeniedException);
    takeDeniedCalls();
  });
});

/**
 * Every stop of the tour, each on a table of its own, with the table calls each function made; computed once,
 * by whichever grants test runs first, since it is the same whatever order the stops run in.
 */
let tourCalls: Promise<TableCalls> | undefined;
function callsOverTheTour(): Promise<TableCalls> {
  tourCalls ??= (async () => {
    const used: TableCalls = new Map(QUEUE_FUNCTIONS.map((fn) => [fn, new Set<string>()]));
    for (const stop of stops.values()) await onItsOwnTable(stop, recordInto(used));
    return used;
  })();
  return tourCalls;
}

describe('grants', () => {
  test.each(QUEUE_FUNCTIONS)(
    'the %s used every table grant it has in the stack, and needed no other',
    async (fn) => {
      const used = await callsOverTheTour();
      expect([...used.get(fn)!].sort()).toEqual([...granted(fn)].sort());
    },
    180_000,
  );
});
