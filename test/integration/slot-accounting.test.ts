/**
 * The counters of a limited type between their writes (domain/slots.ts): a
 * poll reserves before it claims and gives back what it did not claim, an end
 * gives back after the job's write, so a process dying in between leaves a
 * counter above what its jobs hold, never below; the sweeper reconciles a
 * counter once it has been quiet, and never under a claim it cannot see yet.
 */
import { expect, test } from 'vitest';
import { AWAIT_CALLBACK } from '../../lib/targets/handler.js';
import { RESERVATION_MS } from '../../lib/queue/claim-due.js';
import { endAttempt } from '../../lib/queue/claims.js';
import { getJob } from '../../lib/queue/jobs.js';
import { reconcileCounters } from '../../lib/queue/reconcile.js';
import { lowerCounters } from '../../lib/queue/slot-returns.js';
import { sweepOnce } from '../../lib/queue/sweeper.js';
import { readInFlight, releaseItems, reserveItems, type Reservation } from '../../lib/store/counters.js';
import { jobKey, typeCounterKey } from '../../lib/store/keys.js';
import { transactWrite } from '../../lib/store/send.js';
import { loseAnswers, refuseCalls, writesTo } from '../support/faults.js';
import { asFunction } from '../support/queue.js';
import { defineType, enqueue, freshQueuePerTest, poll, RecordingInvoker, RunningInvoker } from './lib-fixtures.js';

const queue = freshQueuePerTest();

/** Past a reservation and the cursor safety margin: long enough for a counter to count as quiet. */
const QUIET_MS = RESERVATION_MS + 60_000;
/** The cursor safety margin: how long a reconcile's proposal waits before it is applied. */
const MARGIN_MS = 60_000;

const typeInFlight = async (type: string): Promise<number> => (await readInFlight(queue().ctx, type, [])).type;
const sweep = () => sweepOnce(asFunction(queue().ctx, 'sweeper'), { customPolicies: {} });

test('a poll reserves its jobs in one counter write and claims each with a plain update', async () => {
  const { ctx } = queue();
  const limited = await defineType(ctx, 'limited', { concurrency: 3 });
  for (const id of ['a', 'b', 'c', 'd']) await enqueue(ctx, limited, id);
  const invoker = new RecordingInvoker();
  const calls: string[] = [];
  queue().clientsOf('poller').base.middlewareStack.add((next, context) => (args) => {
    calls.push(context.commandName ?? '');
    return next(args);
  });
  expect((await poll(ctx, [limited], invoker)).claimed).toBe(3);
  expect(await typeInFlight('limited')).toBe(3);
  expect(calls.filter((name) => name === 'TransactWriteItemsCommand')).toHaveLength(1);
  expect(calls.filter((name) => name === 'UpdateItemCommand')).toHaveLength(3);
});

test('an end whose answer was lost after it landed, and whose return was too, publishes once and gives back once', async () => {
  const { ctx } = queue();
  const limited = await defineType(ctx, 'limited', { concurrency: 2 });
  await enqueue(ctx, limited, 'l-1');
  const invoker = new RecordingInvoker();
  await poll(ctx, [limited], invoker);
  const worker = queue().clientsOf('worker').base;
  const jobPk = JSON.stringify(jobKey('limited', 'l-1').pk);
  const counterPk = JSON.stringify(typeCounterKey('limited').pk);
  const lost = loseAnswers(
    worker,
    ({ commandName, input }) =>
      (commandName === 'UpdateItemCommand' && JSON.stringify(input).includes(jobPk)) ||
      (commandName === 'TransactWriteItemsCommand' && JSON.stringify(input).includes(counterPk)),
    2,
  );
  const ended = await endAttempt(asFunction(ctx, 'worker'), invoker.jobs[0]!, { ending: { outcome: 'succeeded' }, jobType: limited, customPolicies: {} });
  expect(lost.lost).toBe(2);
  expect(ended?.job).toMatchObject({ status: 'succeeded', attempt: 1 });
  expect(await typeInFlight('limited')).toBe(0);
});

test('a poll that dies between its reservation and its claims leaves the counter high until it has been quiet, then the sweeper gives it back', async () => {
  const { ctx, clock } = queue();
  const limited = await defineType(ctx, 'limited', { concurrency: 2 });
  for (const id of ['a', 'b']) await enqueue(ctx, limited, id);
  const poller = queue().clientsOf('poller').base;
  // The reservation lands; then every job claim and the release fail, as in a process that died.
  let transactions = 0;
  refuseCalls(poller, (call) => (call.commandName === 'TransactWriteItemsCommand' && ++transactions > 1) || writesTo(jobKey('limited', 'a').pk)(call) || writesTo(jobKey('limited', 'b').pk)(call));
  await poll(ctx, [limited], new RecordingInvoker()).catch(() => undefined);
  expect(await typeInFlight('limited')).toBe(2);

  clock.advance(QUIET_MS - 1_000);
  expect((await sweep()).reconciled).toBe(0);
  expect(await typeInFlight('limited')).toBe(2);
  clock.advance(1_000);
  // Once quiet, the first sweep proposes what the jobs hold; a sweep a safety margin later applies it.
  expect((await sweep()).reconciled).toBe(0);
  expect(await typeInFlight('limited')).toBe(2);
  clock.advance(MARGIN_MS);
  expect((await sweep()).reconciled).toBe(1);
  expect(await typeInFlight('limited')).toBe(0);
  for (const id of ['a', 'b']) expect((await getJob(ctx, 'limited', id))?.status).toBe('queued');
});

test('a worker that dies between an end and its return: the sweeper keeps the weight of the job still waiting and drops the rest', async () => {
  const { ctx, clock } = queue();
  const hooks = await defineType(ctx, 'hooks', { concurrency: 4, timeout_s: 3_600 });
  await enqueue(ctx, hooks, 'waits', { data: { wait: true }, weight: 1 });
  await enqueue(ctx, hooks, 'ends', { data: { wait: false }, weight: 3 });
  refuseCalls(queue().clientsOf('worker').base, ({ commandName }) => commandName === 'TransactWriteItemsCommand');
  const invoker = new RunningInvoker(ctx, { hooks: (data) => ((data as { wait: boolean }).wait ? AWAIT_CALLBACK : 'done') });
  expect((await poll(ctx, [hooks], invoker)).claimed).toBe(2);
  expect(invoker.results[0]).toMatchObject({ succeeded: 1, awaiting_callback: 1 });
  expect(await typeInFlight('hooks')).toBe(4);

  clock.advance(QUIET_MS);
  expect((await sweep()).reconciled).toBe(0);
  clock.advance(MARGIN_MS);
  expect((await sweep()).reconciled).toBe(1);
  expect(await typeInFlight('hooks')).toBe(1);
});

test('a counter whose jobs hold all of it is left as it is', async () => {
  const { ctx, clock } = queue();
  const hooks = await defineType(ctx, 'hooks', { concurrency: 2, timeout_s: 3_600 });
  await enqueue(ctx, hooks, 'waits');
  await poll(ctx, [hooks], new RunningInvoker(ctx, { hooks: () => AWAIT_CALLBACK }));
  clock.advance(QUIET_MS);
  expect(await reconcileCounters(asFunction(ctx, 'sweeper'), hooks)).toBe(0);
  expect(await typeInFlight('hooks')).toBe(1);
});

test('a reservation made before a reconcile is not given back after it', async () => {
  const { ctx, clock } = queue();
  const limited = await defineType(ctx, 'limited', { concurrency: 5 });
  const reservation: Reservation = { counter: {}, weight: 3, limit: 5, epoch: 0 };
  expect((await transactWrite(ctx, reserveItems(ctx.settings.tableName, 'limited', [reservation], clock.nowMs()))).ok).toBe(true);
  clock.advance(QUIET_MS);
  expect(await reconcileCounters(asFunction(ctx, 'sweeper'), limited)).toBe(0);
  clock.advance(MARGIN_MS);
  expect(await reconcileCounters(asFunction(ctx, 'sweeper'), limited)).toBe(1);
  await lowerCounters(ctx, releaseItems(ctx.settings.tableName, 'limited', [reservation], clock.nowMs()));
  expect(await typeInFlight('limited')).toBe(0);
});

test('a reservation refused because another poller took room since the read is made again on a fresh read, within the room left', async () => {
  const { ctx } = queue();
  const limited = await defineType(ctx, 'limited', { concurrency: 2 });
  for (const id of ['a', 'b']) await enqueue(ctx, limited, id);
  // Another poller takes the room between this poll's read of the counter and its reservation.
  let raced = false;
  queue().clientsOf('poller').base.middlewareStack.add((next, context) => async (args) => {
    if (context.commandName === 'TransactWriteItemsCommand' && !raced) {
      raced = true;
      await transactWrite(ctx, reserveItems(ctx.settings.tableName, 'limited', [{ counter: {}, weight: 1, limit: 2, epoch: 0 }], ctx.nowMs()));
    }
    return next(args);
  });
  expect((await poll(ctx, [limited], new RecordingInvoker())).claimed).toBe(1);
  expect(await typeInFlight('limited')).toBe(2);
  expect((await poll(ctx, [limited], new RecordingInvoker())).claimed).toBe(0);
});
