/**
 * Races around the counters of a limited type (domain/slots.ts): a claim whose
 * answer is lost, a return still in flight when the sweeper settles, a
 * reservation answered late, a page with more keys than a transaction holds, a
 * refused reservation beside a critical job. After each, the counter is not
 * below what its jobs hold and nothing waits that should run.
 */
import { expect, test } from 'vitest';
import type { FinalizeHandler, FinalizeHandlerArguments, MetadataBearer } from '@smithy/types';
import { MAX_DYNAMODB_CALL_MS } from '../../../../../lib/domain/limits.js';
import { RESERVATION_MS } from '../../../../../lib/queue/limits/slot-reservations.js';
import { endAttempt } from '../../../../../lib/queue/attempt/end-attempt.js';
import { getJob } from '../../../../../lib/queue/read-job.js';
import { reconcileCounters, settleWaitMs } from '../../../../../lib/queue/limits/counter-reconcile.js';
import { createSlotReturnQueue } from '../../../../../lib/queue/limits/slot-returns.js';
import { readInFlight, reserveItems } from '../../../../../lib/store/counters.js';
import { transactWrite } from '../../../../../lib/store/send.js';
import { jobKey } from '../../../../../lib/store/keys.js';
import { writesTo } from '../../../../support/faults.js';
import { asFunction } from '../../../../support/queue.js';
import { eventually } from '../../../../support/eventually.js';
import { defineType, enqueue, freshQueuePerTest, poll, RecordingInvoker } from '../../../../support/lib-fixtures.js';

const queue = freshQueuePerTest();
/** How long after a handover the earlier part of a counter can be settled. */
const SETTLE_AFTER_MS = settleWaitMs({ cursorSafetyMarginMs: 60_000 });
const MARGIN_MS = 60_000;
const typeInFlight = async (type: string): Promise<number> => (await readInFlight(queue().ctx, type, [])).type;

type Mw = (call: { commandName: string; input: Record<string, unknown> }, next: () => Promise<unknown>) => Promise<unknown>;
function intercept(client: { middlewareStack: { addRelativeTo: (...args: never[]) => void } }, name: string, mw: Mw): void {
  (client.middlewareStack.addRelativeTo as (...args: unknown[]) => void)(
    (next: FinalizeHandler<object, MetadataBearer>, context: { commandName?: string }) => (args: FinalizeHandlerArguments<object>) =>
      mw({ commandName: context.commandName ?? '', input: args.input as Record<string, unknown> }, () => next(args)),
    { relation: 'after', toMiddleware: 'retryMiddleware', name },
  );
}
const fatal = (): Error => Object.assign(new Error('injected: answer lost, SDK gave up'), { name: 'InternalFailure', $fault: 'client', $metadata: { httpStatusCode: 400 } });

test('a claim that landed but whose call threw keeps its reserved weight, so the next job of a type limited to 1 waits', async () => {
  const { ctx } = queue();
  const limited = await defineType(ctx, 'limited', { concurrency: 1 });
  await enqueue(ctx, limited, 'a');
  let landedThenThrew = 0;
  intercept(queue().clientsOf('poller').base, 'landThenThrow', async (call, next) => {
    if (landedThenThrew === 0 && writesTo(jobKey('limited', 'a').pk)(call) && call.commandName === 'UpdateItemCommand') {
      await next(); // the claim lands
      landedThenThrew++;
      throw fatal(); // ... and the poller only sees an error
    }
    return next();
  });
  await poll(ctx, [limited], new RecordingInvoker()).catch(() => undefined);
  // Without the fault the end state would be the same: it must have fired.
  expect(landedThenThrew).toBe(1);
  const counterAfterFirstPoll = await typeInFlight('limited');
  const a = await getJob(ctx, 'limited', 'a');
  expect(a?.status).toBe('running');
  expect(a?.heldSlots).toMatchObject({ weight: 1, type: true });
  await enqueue(ctx, limited, 'b');
  const second = (await poll(ctx, [limited], new RecordingInvoker())).claimed;
  // The job holds 1, so the counter must too, and b of a type limited to 1 must wait.
  expect({ counterAfterFirstPoll, secondPollClaimed: second, b: (await getJob(ctx, 'limited', 'b'))?.status }).toEqual({ counterAfterFirstPoll: 1, secondPollClaimed: 0, b: 'queued' });
});

test('a return still on its way when the sweeper settles the earlier part is not subtracted on top of it', async () => {
  const { ctx, clock } = queue();
  const limited = await defineType(ctx, 'limited', { concurrency: 2, timeout_s: 3_600 });
  for (const id of ['a', 'b']) await enqueue(ctx, limited, id);
  const invoker = new RecordingInvoker();
  expect((await poll(ctx, [limited], invoker)).claimed).toBe(2);
  const sweeperCtx = asFunction(ctx, 'sweeper');
  // Long-running jobs: the sweeper hands the counter over, and later proposes what a and b hold.
  await reconcileCounters(sweeperCtx, limited);
  clock.advance(SETTLE_AFTER_MS);
  await reconcileCounters(sweeperCtx, limited);
  clock.advance(MARGIN_MS - 1_000);
  // a ends; its slot return (one transaction, after the job's write) is still on the wire (a slow network, an SDK
  // retry) while the sweeper lists the jobs again and sets the earlier part: it lands only after.
  let settled!: () => void;
  const settlement = new Promise<void>((resolve) => (settled = resolve));
  intercept(queue().clientsOf('worker').base, 'slowReturn', async (call, next) => {
    if (call.commandName === 'TransactWriteItemsCommand') await settlement;
    return next();
  });
  const ending = endAttempt(asFunction(ctx, 'worker'), invoker.jobs.find((job) => job.id === 'a')!, { ending: { outcome: 'succeeded' }, jobType: limited, customPolicies: {} });
  expect((await eventually(() => getJob(ctx, 'limited', 'a'), (a) => a?.status === 'succeeded', 30_000, 2))?.status).toBe('succeeded');
  clock.advance(1_000);
  // The second listing shows b only; the proposal still counts a, whose return has not landed.
  await reconcileCounters(sweeperCtx, limited);
  settled();
  await ending;
  // b holds 1.
  expect({ b: (await getJob(ctx, 'limited', 'b'))?.status, counted: await typeInFlight('limited') }).toEqual({ b: 'running', counted: 1 });
});

test('a reservation made just before a handover lands, whose claim lands late and whose return later too, is settled without going below', async () => {
  const { ctx, clock } = queue();
  const limited = await defineType(ctx, 'limited', { concurrency: 2, timeout_s: 3_600 });
  // 1 leaked by a poll that died: the sweeper has weight to hand over.
  await transactWrite(ctx, reserveItems(ctx.settings.tableName, 'limited', [{ counter: {}, weight: 1, limit: 2, epoch: 0 }]));
  await enqueue(ctx, limited, 'a');
  const sweeperCtx = asFunction(ctx, 'sweeper');
  const below: { atMs: number; counted: number; held: number }[] = [];
  const sweepFor = async (ms: number, held: number) => {
    for (let waitedMs = 0; waitedMs < ms; waitedMs += 10_000) {
      clock.advance(10_000);
      await reconcileCounters(sweeperCtx, limited);
      const counted = await typeInFlight('limited');
      if (counted < held) below.push({ atMs: clock.nowMs(), counted, held });
    }
  };
  const gate = () => {
    let open!: () => void;
    const opened = new Promise<void>((resolve) => (open = resolve));
    return { open, opened };
  };
  const reservation = gate();
  const claim = gate();
  const slotReturn = gate();
  let polling: Promise<unknown> | undefined;
  intercept(queue().clientsOf('poller').base, 'slowClaim', async (call, next) => {
    if (call.commandName === 'TransactWriteItemsCommand') {
      const answer = await next();
      reservation.open();
      return answer;
    }
    if (!writesTo(jobKey('limited', 'a').pk)(call)) return next();
    clock.advance(RESERVATION_MS - 100); // sent just within the reservation's time ...
    await claim.opened; // ... and on the wire until the test lets it land
    return next();
  });
  // The sweeper sends a handover that takes 44 s to land: meanwhile a poll reads the old epoch and reserves in it.
  intercept(queue().clientsOf('sweeper').base, 'slowHandover', async (call, next) => {
    if (call.commandName === 'UpdateItemCommand' && polling === undefined) {
      clock.advance(44_000);
      polling = poll(ctx, [limited], new RecordingInvoker());
      await reservation.opened;
    }
    return next();
  });
  intercept(queue().clientsOf('worker').base, 'slowReturn', async (call, next) => {
    if (call.commandName === 'TransactWriteItemsCommand') await slotReturn.opened;
    return next();
  });
  await reconcileCounters(sweeperCtx, limited);
  // The claim lands 50 s after it was sent, the longest one call may take.
  await sweepFor(MAX_DYNAMODB_CALL_MS, 1);
  claim.open();
  await polling;
  const a = (await getJob(ctx, 'limited', 'a'))!;
  expect(a.status).toBe('running');
  // a ends at once; the return of its slot is on the wire for as long as one call may take.
  const ending = endAttempt(asFunction(ctx, 'worker'), a, { ending: { outcome: 'succeeded' }, jobType: limited, customPolicies: {} });
  expect((await eventually(() => getJob(ctx, 'limited', 'a'), (a) => a?.status === 'succeeded', 30_000, 2))?.status).toBe('succeeded');
  await sweepFor(MAX_DYNAMODB_CALL_MS, 0);
  slotReturn.open();
  await ending;
  await sweepFor(300_000, 0);
  expect(below, 'the counter never below what the jobs hold').toEqual([]);
  expect(await typeInFlight('limited'), 'the leaked 1 settled away').toBe(0);
});

test('returns of one counter reserved in two epochs, ending together, are both given back', async () => {
  const { ctx } = queue();
  const limited = await defineType(ctx, 'limited', { concurrency: 4, timeout_s: 3_600 });
  await enqueue(ctx, limited, 'before');
  const invoker = new RecordingInvoker();
  await poll(ctx, [limited], invoker);
  await reconcileCounters(asFunction(ctx, 'sweeper'), limited); // handed over between the two claims
  await enqueue(ctx, limited, 'after');
  await poll(ctx, [limited], invoker);
  expect(invoker.jobs.map((job) => job.heldSlots?.typeEpoch)).toEqual([0, 1]);
  // One transaction writing the counter twice would be refused, as AWS refuses it (infra/local/aws/dynamodb-rules.ts).
  const workerCtx = asFunction(ctx, 'worker');
  const batchCtx = { ...workerCtx, slotReturns: createSlotReturnQueue(workerCtx, 25) };
  await Promise.all(invoker.jobs.map((job) => endAttempt(batchCtx, job, { ending: { outcome: 'succeeded' }, jobType: limited, customPolicies: {} })));
  expect(await typeInFlight('limited')).toBe(0);
});

test('a page with more limited throttle keys than one transaction holds is claimed over two polls', async () => {
  const { ctx } = queue();
  const tenants = await defineType(ctx, 'tenants', { concurrency: 1_000, throttle: { key_field: 'tenant', limits: { '*': { limit: 2 } } } });
  for (let i = 0; i < 120; i++) await enqueue(ctx, tenants, `j${i}`, { data: { tenant: `t${i}` } });
  const outcomes: (number | string)[] = [];
  for (let i = 0; i < 2; i++) {
    outcomes.push(await poll(ctx, [tenants], new RecordingInvoker()).then((result) => result.claimed, (error: unknown) => String(error)));
  }
  expect(outcomes.reduce<number>((sum, o) => sum + (typeof o === 'number' ? o : 0), 0)).toBe(120);
});

test('two ends of one attempt in the same millisecond (a job delivered twice) give its slots back once', async () => {
  const { ctx } = queue();
  const limited = await defineType(ctx, 'limited', { concurrency: 2, timeout_s: 3_600 });
  for (const id of ['a', 'b']) await enqueue(ctx, limited, id);
  const invoker = new RecordingInvoker();
  await poll(ctx, [limited], invoker);
  const jobA = invoker.jobs.find((job) => job.id === 'a')!;
  const apiCtx = asFunction(ctx, 'worker');
  // e.g. a callback delivered twice at once: the clock reads the same ms for both
  const ends = await Promise.all([1, 2].map(() => endAttempt(apiCtx, jobA, { ending: { outcome: 'succeeded' }, jobType: limited, customPolicies: {} })));
  expect({ ends: ends.filter(Boolean).length, counter: await typeInFlight('limited') }).toEqual({ ends: 1, counter: 1 });
});

test('a critical job (weight 0) is claimed even when the reservation for the others in its poll is refused', async () => {
  const { ctx } = queue();
  const limited = await defineType(ctx, 'limited', { concurrency: 1 });
  await enqueue(ctx, limited, 'heavy', { weight: 1 });
  await enqueue(ctx, limited, 'critical', { weight: 0 });
  let raced = false;
  intercept(queue().clientsOf('poller').base, 'race', async (call, next) => {
    if (call.commandName === 'TransactWriteItemsCommand' && !raced) {
      raced = true; // another poller fills the type between this poll's read and its reservation
      await transactWrite(ctx, reserveItems(ctx.settings.tableName, 'limited', [{ counter: {}, weight: 1, limit: 1, epoch: 0 }]));
    }
    return next();
  });
  await poll(ctx, [limited], new RecordingInvoker());
  expect((await getJob(ctx, 'limited', 'critical'))?.status).toBe('running');
});
