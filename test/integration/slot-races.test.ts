/**
 * Races around the counters of a limited type (domain/slots.ts): a claim whose
 * answer is lost, a return still in flight when the sweeper reconciles, a
 * reservation answered late, a page with more keys than a transaction holds, a
 * refused reservation beside a critical job. After each, the counter is not
 * below what its jobs hold and nothing waits that should run.
 */
import { expect, test } from 'vitest';
import type { FinalizeHandler, FinalizeHandlerArguments, MetadataBearer } from '@smithy/types';
import { RESERVATION_MS } from '../../lib/queue/claim-due.js';
import { endAttempt } from '../../lib/queue/claims.js';
import { getJob } from '../../lib/queue/jobs.js';
import { reconcileCounters } from '../../lib/queue/reconcile.js';
import { createSlotReturnQueue } from '../../lib/queue/slot-returns.js';
import { readInFlight, reserveItems } from '../../lib/store/counters.js';
import { transactWrite } from '../../lib/store/send.js';
import { jobKey } from '../../lib/store/keys.js';
import { writesTo } from '../support/faults.js';
import { asFunction } from '../support/queue.js';
import { defineType, enqueue, freshQueuePerTest, poll, RecordingInvoker } from './lib-fixtures.js';

const queue = freshQueuePerTest();
const QUIET_MS = RESERVATION_MS + 60_000;
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
  let once = false;
  intercept(queue().clientsOf('poller').base, 'landThenThrow', async (call, next) => {
    if (!once && writesTo(jobKey('limited', 'a').pk)(call) && call.commandName === 'UpdateItemCommand') {
      once = true;
      await next(); // the claim lands
      throw fatal(); // ... and the poller only sees an error
    }
    return next();
  });
  await poll(ctx, [limited], new RecordingInvoker()).catch(() => undefined);
  const counterAfterFirstPoll = await typeInFlight('limited');
  const a = await getJob(ctx, 'limited', 'a');
  expect(a?.status).toBe('running');
  expect(a?.heldSlots).toMatchObject({ weight: 1, type: true });
  await enqueue(ctx, limited, 'b');
  const second = (await poll(ctx, [limited], new RecordingInvoker())).claimed;
  // The job holds 1, so the counter must too, and b of a type limited to 1 must wait.
  expect({ counterAfterFirstPoll, secondPollClaimed: second, b: (await getJob(ctx, 'limited', 'b'))?.status }).toEqual({ counterAfterFirstPoll: 1, secondPollClaimed: 0, b: 'queued' });
});

test('an end whose return is still in flight while the sweeper lists the jobs is not subtracted twice', async () => {
  const { ctx, clock } = queue();
  const limited = await defineType(ctx, 'limited', { concurrency: 2, timeout_s: 3_600 });
  for (const id of ['a', 'b']) await enqueue(ctx, limited, id);
  const invoker = new RecordingInvoker();
  expect((await poll(ctx, [limited], invoker)).claimed).toBe(2);
  clock.advance(QUIET_MS); // long-running jobs: the counter has been quiet
  const workerCtx = asFunction(ctx, 'worker');
  // The worker's slot return (25 ms coalescing window, then one transaction) is still on the wire while the
  // sweeper lists and writes (a slow network, an SDK retry): it is held until the reconcile below has written.
  let reconciled!: () => void;
  const reconcileDone = new Promise<void>((resolve) => (reconciled = resolve));
  intercept(queue().clientsOf('worker').base, 'slowReturn', async (call, next) => {
    if (call.commandName === 'TransactWriteItemsCommand') await reconcileDone;
    return next();
  });
  const batchCtx = { ...workerCtx, slotReturns: createSlotReturnQueue(workerCtx, 25) };
  const jobA = invoker.jobs.find((job) => job.id === 'a')!;
  const ending = endAttempt(batchCtx, jobA, { ending: { outcome: 'succeeded' }, jobType: limited, customPolicies: {} });
  // The job's own write lands first ...
  while ((await getJob(ctx, 'limited', 'a'))?.status !== 'succeeded') await new Promise((resolve) => setTimeout(resolve, 2));
  // ... the sweeper's reconcile runs now: the counter is quiet, a is no longer listed, b is.
  await reconcileCounters(asFunction(ctx, 'sweeper'), limited);
  reconciled();
  await ending; // a's return lands after the reconcile
  expect((await getJob(ctx, 'limited', 'b'))?.status).toBe('running');
  const seen = [await typeInFlight('limited')];
  for (let i = 0; i < 3; i++) {
    clock.advance(QUIET_MS);
    await reconcileCounters(asFunction(ctx, 'sweeper'), limited);
    seen.push(await typeInFlight('limited'));
  }
  // b holds 1 throughout.
  expect(seen).toEqual([1, 1, 1, 1]);
});

test('a reservation answered late leaves no time to claim past the quiet period a reconcile waits for', async () => {
  const { ctx, clock } = queue();
  const limited = await defineType(ctx, 'limited', { concurrency: 1, timeout_s: 3_600 });
  await enqueue(ctx, limited, 'a');
  const sweeperCtx = asFunction(ctx, 'sweeper');
  intercept(queue().clientsOf('poller').base, 'slowCalls', async (call, next) => {
    if (call.commandName === 'TransactWriteItemsCommand') {
      const answer = await next(); // the reservation lands at t0 with changedAtMs = t0 ...
      clock.advance(55_000); // ... its answer arrives after the SDK's retries, 55 s later (MAX_DYNAMODB_CALL_MS is 50 s, plus conflict retries)
      return answer;
    }
    if (writesTo(jobKey('limited', 'a').pk)(call)) {
      // The claim was sent at t0+55 s, within claimUntilMs; it is in flight 11 s (one call may take 50 s).
      clock.advance(11_000);
      // The sweeper sees a counter quiet for 66 s and no running job: it sets the counter to 0.
      await reconcileCounters(sweeperCtx, limited);
    }
    return next();
  });
  const claimed = (await poll(ctx, [limited], new RecordingInvoker())).claimed;
  const status = (await getJob(ctx, 'limited', 'a'))?.status;
  const counter = await typeInFlight('limited');
  // Invariant: the counter is never below what the jobs hold.
  expect({ claimed, status, counterBelowJobs: counter < (status === 'running' ? 1 : 0) }).toMatchObject({ counterBelowJobs: false });
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
      await transactWrite(ctx, reserveItems(ctx.settings.tableName, 'limited', [{ counter: {}, weight: 1, limit: 1, epoch: 0 }], ctx.nowMs()));
    }
    return next();
  });
  await poll(ctx, [limited], new RecordingInvoker());
  expect((await getJob(ctx, 'limited', 'critical'))?.status).toBe('running');
});
