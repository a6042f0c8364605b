/**
 * The counters of a limited type between their writes (domain/slots.ts): a
 * poll reserves before it claims and gives back what it did not claim, an end
 * gives back after the job's write, so a process dying in between leaves a
 * counter above what its jobs hold, never below; the sweeper hands a counter
 * over to a new epoch and settles the earlier part to what its jobs hold, busy
 * or quiet, and never under a claim it cannot see yet.
 */
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { expect, test } from 'vitest';
import type { Job } from '../../../../../lib/domain/job.js';
import { AWAIT_CALLBACK } from '../../../../../lib/targets/handler.js';
import { endAttempt } from '../../../../../lib/queue/attempt/end-attempt.js';
import { getJob } from '../../../../../lib/queue/read-job.js';
import { lowerCounters } from '../../../../../lib/queue/limits/slot-returns.js';
import { settleWaitMs } from '../../../../../lib/queue/limits/counter-reconcile.js';
import { sweepOnce } from '../../../../../lib/queue/sweep/sweep.js';
import { readInFlight, releaseDecreases, reserveItems, type Reservation } from '../../../../../lib/store/counters.js';
import { jobKey, typeCounterKey } from '../../../../../lib/store/keys.js';
import { transactWrite } from '../../../../../lib/store/send.js';
import { loseAnswers, refuseCalls, writesTo } from '../../../../support/faults.js';
import { asFunction } from '../../../../support/queue.js';
import { beforeCall } from '../../../../support/hold-calls.js';
import { defineType, enqueue, freshQueuePerTest, poll, RecordingInvoker, RunningInvoker } from '../../../../support/lib-fixtures.js';

const queue = freshQueuePerTest();

/** How long after a handover the earlier part of a counter can be settled. */
const SETTLE_AFTER_MS = settleWaitMs({ cursorSafetyMarginMs: 60_000 });
/** The cursor safety margin: how long a settlement's proposal waits before it is applied. */
const MARGIN_MS = 60_000;

const typeInFlight = async (type: string): Promise<number> => (await readInFlight(queue().ctx, type, [])).type;
const sweep = () => sweepOnce(asFunction(queue().ctx, 'sweeper'), { customPolicies: {} });

/** Sweeps that hand the counters over, propose a settlement and apply it: how many counters each lowered. */
async function settleCycle(): Promise<number[]> {
  const lowered = [(await sweep()).reconciled];
  queue().clock.advance(SETTLE_AFTER_MS);
  lowered.push((await sweep()).reconciled);
  queue().clock.advance(MARGIN_MS);
  lowered.push((await sweep()).reconciled);
  return lowered;
}

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

test('a poll that dies between its reservation and its claims leaves the counter high until the sweeper has handed it over and settled it', async () => {
  const { ctx, clock } = queue();
  const limited = await defineType(ctx, 'limited', { concurrency: 2 });
  for (const id of ['a', 'b']) await enqueue(ctx, limited, id);
  const poller = queue().clientsOf('poller').base;
  // The reservation lands; then every job claim and the release fail, as in a process that died.
  let transactions = 0;
  refuseCalls(poller, (call) => (call.commandName === 'TransactWriteItemsCommand' && ++transactions > 1) || writesTo(jobKey('limited', 'a').pk)(call) || writesTo(jobKey('limited', 'b').pk)(call));
  await poll(ctx, [limited], new RecordingInvoker()).catch(() => undefined);
  expect(await typeInFlight('limited')).toBe(2);

  // The first sweep hands the counter over; until the reservation's claims could have been listed, it waits.
  expect((await sweep()).reconciled).toBe(0);
  clock.advance(SETTLE_AFTER_MS - 1_000);
  expect((await sweep()).reconciled).toBe(0);
  expect(await typeInFlight('limited')).toBe(2);
  clock.advance(1_000);
  // Then a sweep proposes what the jobs hold; a sweep a safety margin later applies it.
  expect((await sweep()).reconciled).toBe(0);
  expect(await typeInFlight('limited')).toBe(2);
  clock.advance(MARGIN_MS);
  expect((await sweep()).reconciled).toBe(1);
  expect(await typeInFlight('limited')).toBe(0);
  for (const id of ['a', 'b']) expect((await getJob(ctx, 'limited', id))?.status).toBe('queued');
});

test('a worker that dies between an end and its return: the sweeper keeps the weight of the job still waiting and drops the rest', async () => {
  const { ctx } = queue();
  const hooks = await defineType(ctx, 'hooks', { concurrency: 4, timeout_s: 3_600 });
  await enqueue(ctx, hooks, 'waits', { data: { wait: true }, weight: 1 });
  await enqueue(ctx, hooks, 'ends', { data: { wait: false }, weight: 3 });
  refuseCalls(queue().clientsOf('worker').base, ({ commandName }) => commandName === 'TransactWriteItemsCommand');
  const invoker = new RunningInvoker(ctx, { hooks: (data) => ((data as { wait: boolean }).wait ? AWAIT_CALLBACK : 'done') });
  expect((await poll(ctx, [hooks], invoker)).claimed).toBe(2);
  expect(invoker.results[0]).toMatchObject({ succeeded: 1, awaiting_callback: 1 });
  expect(await typeInFlight('hooks')).toBe(4);

  expect(await settleCycle()).toEqual([0, 0, 1]);
  expect(await typeInFlight('hooks')).toBe(1);
});

test('a counter whose jobs hold all of it is left as it is', async () => {
  const { ctx } = queue();
  const hooks = await defineType(ctx, 'hooks', { concurrency: 2, timeout_s: 3_600 });
  await enqueue(ctx, hooks, 'waits');
  await poll(ctx, [hooks], new RunningInvoker(ctx, { hooks: () => AWAIT_CALLBACK }));
  expect(await settleCycle()).toEqual([0, 0, 0]);
  expect(await typeInFlight('hooks')).toBe(1);
});

test('weight leaked while the counter is busy is settled away, though claims and returns never stop', async () => {
  const { ctx, clock } = queue();
  const limited = await defineType(ctx, 'limited', { concurrency: 5, timeout_s: 3_600 });
  // A poll that died after its reservation leaves 1 in the counter that no job holds.
  await transactWrite(ctx, reserveItems(ctx.settings.tableName, 'limited', [{ counter: {}, weight: 1, limit: 5, epoch: 0 }]));
  const running: Job[] = [];
  const belowHeld: { atS: number; counted: number; held: number }[] = [];
  for (let second = 0; second < 360; second += 10) {
    // A job is claimed every 10 s and each runs 20 s: its return often comes after a handover, from the earlier part.
    await enqueue(ctx, limited, `j${second}`);
    const invoker = new RecordingInvoker();
    await poll(ctx, [limited], invoker);
    running.push(...invoker.jobs);
    if (running.length > 2) await endAttempt(asFunction(ctx, 'worker'), running.shift()!, { ending: { outcome: 'succeeded' }, jobType: limited, customPolicies: {} });
    clock.advance(10_000);
    await sweep();
    const counted = await typeInFlight('limited');
    if (counted < running.length) belowHeld.push({ atS: second, counted, held: running.length });
  }
  expect(belowHeld, 'never below what the jobs hold').toEqual([]);
  expect(running.length, 'claims went on').toBe(2);
  expect(await typeInFlight('limited'), 'the leaked slot is back').toBe(2);
});

test('a counter the previous release reconciled into an epoch of its own is handed over before it is settled', async () => {
  const { ctx } = queue();
  await defineType(ctx, 'limited', { concurrency: 5 });
  // As the previous release left it: no epochAtMs, no epochInFlight; 2 reserved by one of its polls, still claiming.
  await ctx.db.send(new PutCommand({ TableName: ctx.settings.tableName, Item: { ...typeCounterKey('limited'), inFlight: 2, epoch: 3, rev: 7, changedAtMs: 0 } }));
  expect((await sweep()).reconciled).toBe(0);
  expect(await readInFlight(ctx, 'limited', [])).toMatchObject({ type: 2, epochs: { type: 4 } });
  // Nothing claimed under it by the time the earlier part is settled: it was leaked.
  expect(await settleCycle()).toEqual([0, 0, 1]);
  expect(await typeInFlight('limited')).toBe(0);
});

/** A type limited to 5 with 3 reserved in epoch 0 by a poll that has not given back what it did not claim. */
async function reservedAndUnreleased(): Promise<Reservation> {
  const { ctx } = queue();
  await defineType(ctx, 'limited', { concurrency: 5 });
  const reservation: Reservation = { counter: {}, weight: 3, limit: 5, epoch: 0 };
  expect((await transactWrite(ctx, reserveItems(ctx.settings.tableName, 'limited', [reservation]))).ok).toBe(true);
  return reservation;
}

test('a reservation released after a handover gives its weight back from the earlier part', async () => {
  const { ctx } = queue();
  const reservation = await reservedAndUnreleased();
  await sweep();
  expect((await readInFlight(ctx, 'limited', [])).epochs.type).toBe(1);
  await lowerCounters(ctx, releaseDecreases(ctx.settings.tableName, 'limited', [reservation]));
  expect(await typeInFlight('limited')).toBe(0);
});

test('a reservation released after its epoch was settled is not given back again', async () => {
  const { ctx } = queue();
  const reservation = await reservedAndUnreleased();
  expect(await settleCycle()).toEqual([0, 0, 1]);
  await lowerCounters(ctx, releaseDecreases(ctx.settings.tableName, 'limited', [reservation]));
  expect(await typeInFlight('limited')).toBe(0);
});

test('a reservation refused because another poller took room since the read is made again on a fresh read, within the room left', async () => {
  const { ctx } = queue();
  const limited = await defineType(ctx, 'limited', { concurrency: 2 });
  for (const id of ['a', 'b']) await enqueue(ctx, limited, id);
  // Another poller takes the room between this poll's read of the counter and its reservation.
  beforeCall(
    queue().clientsOf('poller').base,
    ({ commandName }) => commandName === 'TransactWriteItemsCommand',
    () => transactWrite(ctx, reserveItems(ctx.settings.tableName, 'limited', [{ counter: {}, weight: 1, limit: 2, epoch: 0 }])),
  );
  expect((await poll(ctx, [limited], new RecordingInvoker())).claimed).toBe(1);
  expect(await typeInFlight('limited')).toBe(2);
  expect((await poll(ctx, [limited], new RecordingInvoker())).claimed).toBe(0);
});
