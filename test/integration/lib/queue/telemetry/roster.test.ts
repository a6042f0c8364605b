/**
 * The roster of live pollers and workers: the poller and worker handlers list
 * their own process, a process that stops refreshing drops out on its own,
 * and a roster write that fails never fails a poll or a job.
 */
import { GetCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { afterEach, beforeEach, describe, expect, test, vi, type MockInstance } from 'vitest';
import { createPollerHandler } from '../../../../../functions/poller/app.js';
import { createWorkerHandler } from '../../../../../functions/worker/app.js';
import { registry } from '../../../../../functions/worker/handlers/index.js';
import type { QueueContext } from '../../../../../lib/queue/context.js';
import { getJob } from '../../../../../lib/queue/read-job.js';
import { rosterEntryName, rosterKey } from '../../../../../lib/store/keys.js';
import type { WorkerIdentity } from '../../../../../lib/domain/job.js';
import { createRosterHeartbeat, listRoster, ROSTER_PURGE_AFTER_S, ROSTER_REFRESH_MS, ROSTER_STALE_AFTER_MS } from '../../../../../lib/queue/telemetry/roster.js';
import type { QueueFunctionName } from '../../../../../infra/local/aws/iam/stack-policies.js';
import { asFunction, manualClock } from '../../../../support/queue.js';
import { holdAwake } from '../../../../support/wake.js';
import { RecordingInvoker, defineType, enqueue, freshQueuePerTest } from '../../../../support/lib-fixtures.js';

/**
 * The manual clock starts now, not at a fixed date: DynamoDB Local applies TTL by the real clock, and would
 * delete entries whose TTL, a few minutes after a fake time long past, has already passed.
 */
const T0 = Math.floor(Date.now() / 1000) * 1000;
// One poll per invocation: the manual clock does not move, so a longer run would never end.
const queue = freshQueuePerTest({ settings: { pollerRunMs: 0 }, clock: () => manualClock(T0) });

const POLLER: WorkerIdentity = { id: 'poller-1', host: 'host-a' };
const WORKER: WorkerIdentity = { id: 'worker-1', host: 'host-b' };
const lambdaContext = { getRemainingTimeInMillis: () => 60_000 };

// The handlers log every run; the tests read the warnings and keep the rest out of the output.
let consoleError: MockInstance<typeof console.error>;
let consoleLog: MockInstance<typeof console.log>;
beforeEach(() => {
  consoleError = vi.spyOn(console, 'error').mockImplementation(() => undefined);
  consoleLog = vi.spyOn(console, 'log').mockImplementation(() => undefined);
});
afterEach(() => {
  consoleError.mockRestore();
  consoleLog.mockRestore();
});

function pollerHandler(pollerCtx: QueueContext, identity: WorkerIdentity = POLLER, invoker = new RecordingInvoker()) {
  return createPollerHandler({ ctx: pollerCtx, invoker, identity });
}

/** `fn`'s context, whose roster writes fail, and nothing else does. */
function failingRosterWrites(ctx: QueueContext, fn: QueueFunctionName): QueueContext {
  const functionCtx = asFunction(ctx, fn);
  const db = {
    send: (command: unknown) => {
      const pk = command instanceof UpdateCommand ? command.input.Key?.pk : undefined;
      if (typeof pk === 'string' && pk.startsWith('ROSTER#')) return Promise.reject(new Error('ProvisionedThroughputExceededException'));
      return functionCtx.db.send(command as UpdateCommand);
    },
  } as unknown as DynamoDBDocumentClient;
  return { ...functionCtx, db };
}

const loggedRosterFailures = (): number =>
  consoleError.mock.calls.filter(([line]) => String(line).includes('could not refresh the roster entry')).length;

describe('who is listed', () => {
  test('a poller lists itself with its host, the shards it polls, when it started and when it was last seen', async () => {
    const { ctx, clock } = queue();
    await holdAwake(ctx);
    const handler = pollerHandler(asFunction(ctx, 'poller'));
    clock.advance(5_000);
    await handler({ shards: [0, 2] }, lambdaContext);

    expect(await listRoster(ctx)).toEqual({
      poller: [{ role: 'poller', ...POLLER, shards: [0, 2], startedAtMs: T0, lastSeenAtMs: T0 + 5_000 }],
      worker: [],
    });
  });

  test('a poller invoked without shards lists every shard', async () => {
    const { ctx } = queue();
    await holdAwake(ctx);
    await pollerHandler(asFunction(ctx, 'poller'))({}, lambdaContext);
    expect((await listRoster(ctx)).poller[0]?.shards).toEqual([0, 1, 2, 3]);
  });

  test("a poller's next invocation for other shards replaces its shards: the partitions' rules share its containers", async () => {
    const { ctx } = queue();
    await holdAwake(ctx);
    const handler = pollerHandler(asFunction(ctx, 'poller'));
    await handler({ shards: [0, 2] }, lambdaContext);
    await handler({ shards: [1, 3] }, lambdaContext);
    const { poller } = await listRoster(ctx);
    expect(poller.map((entry) => entry.shards)).toEqual([[1, 3]]);
  });

  test('a worker lists itself, without shards, once it runs a batch', async () => {
    const { ctx, clock } = queue();
    await holdAwake(ctx);
    const emails = await defineType(ctx, 'emails', { target: { kind: 'handler', name: 'echo' } });
    await enqueue(ctx, emails, 'e-1');
    const invoker = new RecordingInvoker();
    await pollerHandler(asFunction(ctx, 'poller'), POLLER, invoker)({}, lambdaContext);
    const worker = createWorkerHandler({ ctx: asFunction(ctx, 'worker'), registry, worker: WORKER });
    expect((await listRoster(ctx)).worker).toEqual([]);

    clock.advance(1_000);
    const [batch] = invoker.batches;
    expect(await worker(batch!)).toMatchObject({ succeeded: 1 });

    expect((await listRoster(ctx)).worker).toEqual([{ role: 'worker', ...WORKER, startedAtMs: T0, lastSeenAtMs: T0 + 1_000 }]);
  });

  test('pollers and workers are listed apart, oldest process first', async () => {
    const { ctx, clock } = queue();
    await holdAwake(ctx);
    const second = pollerHandler(asFunction(ctx, 'poller'), { id: 'poller-2', host: 'host-c' });
    clock.advance(1_000);
    const first = pollerHandler(asFunction(ctx, 'poller'), { id: 'poller-0', host: 'host-c' });
    await first({}, lambdaContext);
    await second({}, lambdaContext);
    await createWorkerHandler({ ctx: asFunction(ctx, 'worker'), registry, worker: WORKER })({ jobs: [], jobTypes: {} });

    const roster = await listRoster(ctx);
    expect(roster.poller.map((entry) => entry.id)).toEqual(['poller-2', 'poller-0']);
    expect(roster.worker.map((entry) => entry.id)).toEqual(['worker-1']);
  });
});

describe('stale entries', () => {
  test('an entry not refreshed for a minute is left out, while a fresh one stays', async () => {
    const { ctx, clock } = queue();
    await holdAwake(ctx);
    await pollerHandler(asFunction(ctx, 'poller'), { id: 'stopped', host: 'host-a' })({}, lambdaContext);
    clock.advance(ROSTER_STALE_AFTER_MS - 10_000);
    await pollerHandler(asFunction(ctx, 'poller'), { id: 'running', host: 'host-b' })({}, lambdaContext);
    expect((await listRoster(ctx)).poller.map((entry) => entry.id)).toEqual(['stopped', 'running']);

    clock.advance(10_001);
    expect((await listRoster(ctx)).poller.map((entry) => entry.id)).toEqual(['running']);
  });

  test('each write sets the TTL attribute a few minutes after the time it was seen, so DynamoDB deletes a stale entry', async () => {
    const { ctx, clock, clients, tableName } = queue();
    await holdAwake(ctx);
    const handler = pollerHandler(asFunction(ctx, 'poller'));
    await handler({}, lambdaContext);
    clock.advance(30_000);
    await handler({}, lambdaContext);

    const { Item } = await clients.db.send(
      new GetCommand({ TableName: tableName, Key: rosterKey(rosterEntryName('poller', POLLER.id)), ConsistentRead: true }),
    );
    expect(Item).toMatchObject({ lastSeenAtMs: T0 + 30_000, purgeAtS: (T0 + 30_000) / 1000 + ROSTER_PURGE_AFTER_S });
  });
});

describe('how often a process writes', () => {
  test(`beats write at most once per ${ROSTER_REFRESH_MS / 1000} s`, async () => {
    const { ctx, clock } = queue();
    await holdAwake(ctx);
    const heartbeat = createRosterHeartbeat(ctx, { role: 'poller', ...POLLER, startedAtMs: T0 }, (error) => {
      throw error;
    });
    const seen: number[] = [];
    for (const atMs of [0, 1_000, 9_999, 10_000, 15_000, 19_999, 20_000]) {
      clock.set(T0 + atMs);
      heartbeat.beat();
      await heartbeat.settled();
      seen.push((await listRoster(ctx)).poller[0]!.lastSeenAtMs - T0);
    }
    expect(seen).toEqual([0, 0, 0, 10_000, 10_000, 10_000, 20_000]);
  });
});

describe('when roster writes fail', () => {
  test('the poll still claims and dispatches its jobs, and the failure is logged', async () => {
    const { ctx } = queue();
    await holdAwake(ctx);
    const emails = await defineType(ctx, 'emails', { target: { kind: 'handler', name: 'echo' } });
    await enqueue(ctx, emails, 'e-1');
    const invoker = new RecordingInvoker();

    const totals = await pollerHandler(failingRosterWrites(ctx, 'poller'), POLLER, invoker)({}, lambdaContext);

    expect(totals).toMatchObject({ claimed: 1, dispatched: 1 });
    expect(invoker.jobs.map((job) => job.id)).toEqual(['e-1']);
    expect(loggedRosterFailures()).toBe(1);
    expect((await listRoster(ctx)).poller).toEqual([]);
  });

  test('the worker still runs its jobs to success, and the failure is logged', async () => {
    const { ctx } = queue();
    await holdAwake(ctx);
    const emails = await defineType(ctx, 'emails', { target: { kind: 'handler', name: 'echo' } });
    await enqueue(ctx, emails, 'e-1');
    const invoker = new RecordingInvoker();
    await pollerHandler(asFunction(ctx, 'poller'), POLLER, invoker)({}, lambdaContext);

    const worker = createWorkerHandler({ ctx: failingRosterWrites(ctx, 'worker'), registry, worker: WORKER });
    expect(await worker(invoker.batches[0]!)).toMatchObject({ succeeded: 1, error: 0 });

    expect((await getJob(ctx, 'emails', 'e-1'))?.status).toBe('succeeded');
    expect(loggedRosterFailures()).toBe(1);
  });
});
