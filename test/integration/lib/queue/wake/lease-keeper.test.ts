/**
 * Pollers that sleep (lib/queue/wake/lease-keeper.ts, poller-stays.ts) and what wakes them (lib/queue/wake/ensure-awake.ts): a
 * tick with nothing before the next one ends in a few reads; one with work due soon stays, keeps a lease, and
 * gives it up once nothing is due soon, arming a timer for the earliest work it leaves; work made sure of gets a
 * hold and a wake of the poller of its partition, once for a burst; a woken invocation ends at once when the
 * holder will outlast the hold. Writers ask nothing.
 */
import { describe, expect, test } from 'vitest';
import type { QueueContext } from '../../../../../lib/queue/context.js';
import { INDEX_LAG_MS, TICK_COVER_MS, ensureAwake, pollerPartitionOf } from '../../../../../lib/queue/wake/ensure-awake.js';
import { HANDOVER_MS, IDLE_BEFORE_LOOK_MS, LEASE_MS, startAwake, TYPES_CHECK_MS, type AwakeWork } from '../../../../../lib/queue/wake/lease-keeper.js';
import { DUE_SOON_MS } from '../../../../../lib/queue/wake/timers.js';
import { leaseLoopOptions, startPollerAwake } from '../../../../../lib/queue/wake/poller-stays.js';
import { runPollerLoop } from '../../../../../lib/queue/poll/poller-loop.js';
import { setJobTypePaused } from '../../../../../lib/queue/catalog/job-types.js';
import { wakeKey } from '../../../../../lib/store/keys.js';
import { holdParams, readWakeState, recordSweptParams, stopLeaseParams, takeLeaseParams, writeWake } from '../../../../../lib/store/wake.js';
import { countQueries } from '../../../../support/sdk-calls.js';
import { startBulkOperation } from '../../../../../lib/queue/bulk/start-bulk-operation.js';
import { BACKSTOP_SWEEP_EVERY_MS, startSweeperAwake } from '../../../../../lib/queue/wake/sweeper-stays.js';
import { RecordingInvoker, T0, defineType, enqueue, freshQueuePerTest, poll, RecordingTimers, RecordingWaker } from '../../../../support/lib-fixtures.js';

const waker = new RecordingWaker();
const timers = new RecordingTimers();
const queue = freshQueuePerTest({ waker, wakeTimers: timers });
/** The same, for a poller with nowhere to send timers: it stays for work due later, as pollers did before timers. */
const queueWithoutTimers = freshQueuePerTest({ waker });
const MINUTE = 60_000;
/** A hold long enough for any test's look. */
const HOLD_FOR_MS = 5_000;

/** Forgets what earlier tests recorded. */
function recordNothingYet(): void {
  waker.requests.length = 0;
  timers.armed.length = 0;
}


/** The poller's context, whose clock moves with every sleep of its loop; `onSleep` runs before each sleep. */
function pollerLoop(ctx: QueueContext, advance: (ms: number) => void, runForMs = 55_000, onSleep: () => Promise<void> = async () => undefined) {
  const invoker = new RecordingInvoker();
  return {
    invoker,
    run: async (kind: 'tick' | 'wake' = 'tick') => {
      const awake = await startPollerAwake(ctx, { shards: [0, 1, 2, 3], endsAtMs: ctx.nowMs() + runForMs, kind });
      if (!awake.stays) return { stayed: false as const, reason: awake.reason };
      const startedAtMs = ctx.nowMs();
      const totals = await runPollerLoop(ctx, {
        invoker,
        runForMs,
        sleep: async (ms) => {
          await onSleep();
          advance(Math.max(ms, 10));
        },
        ...leaseLoopOptions(awake),
      });
      return { stayed: true as const, totals, ranForMs: ctx.nowMs() - startedAtMs };
    },
  };
}

describe('a minute tick', () => {
  test('with types but nothing enqueued, ends after a few reads, taking no lease and arming no timer', async () => {
    recordNothingYet();
    const { ctx, clock, clientsOf, as } = queue();
    for (const name of ['a', 'b', 'c']) await defineType(ctx, name);
    const queries = countQueries(clientsOf('poller').base);
    const outcome = await pollerLoop(as('poller'), clock.advance).run();
    expect(outcome).toEqual({ stayed: false, reason: 'idle' });
    // The next schedule, the types' listing, and one look at each type's bucket directory.
    expect(queries.count).toBe(1 + 1 + 3);
    expect((await readWakeState(ctx, 'poller', 0)).ownerId).toBeUndefined();
    expect(timers.armed).toEqual([]);
  });

  test('with a job due now, stays and claims it', async () => {
    const { ctx, clock, as } = queue();
    await enqueue(ctx, await defineType(ctx, 'now'), 'j1');
    expect(await pollerLoop(as('poller'), clock.advance).run()).toMatchObject({ stayed: true, totals: { claimed: 1 } });
  });

  test('with a job due two hours from now, sleeps and arms nothing: a later tick finds it', async () => {
    recordNothingYet();
    const { ctx, clock, as } = queue();
    await enqueue(ctx, await defineType(ctx, 'later'), 'in-2h', { runAfterMs: T0 + 120 * MINUTE });
    expect(await pollerLoop(as('poller'), clock.advance).run()).toEqual({ stayed: false, reason: 'idle' });
    expect(timers.armed).toEqual([]);
  });

  test('with a job due before the next tick, sleeps, having armed one timer for its due second, which wakes whatever it finds', async () => {
    recordNothingYet();
    const { ctx, clock, as } = queue();
    await enqueue(ctx, await defineType(ctx, 'soon'), 'in-30s', { runAfterMs: T0 + 30_000 });
    expect(await pollerLoop(as('poller'), clock.advance).run()).toEqual({ stayed: false, reason: 'timer' });
    // It names no lane partition: the work behind this job waits on the invocation the timer starts.
    expect(timers.armed).toEqual([{ timer: { role: 'poller', partition: 0, dueAtMs: T0 + 30_000 }, delayS: 29 }]);
    expect((await readWakeState(ctx, 'poller', 0)).ownerId).toBeUndefined();
  });

  test('after sleeping, records where its walks stood, so the next ticks look from there', async () => {
    const { ctx, clock, as } = queue();
    const jobType = await defineType(ctx, 'once');
    await enqueue(ctx, jobType, 'now');
    await pollerLoop(as('poller'), clock.advance).run();
    expect((await readWakeState(ctx, 'poller', 0)).walkedFromBucket).toBeGreaterThanOrEqual(Math.floor(T0 / ctx.settings.bucketMs));
  });

  test('stays for a hold the waker asked for, though nothing is due', async () => {
    const { ctx, clock, as } = queue();
    await defineType(ctx, 'quiet');
    await writeWake(ctx, holdParams(wakeKey('poller', 0), T0 + HOLD_FOR_MS));
    expect(await pollerLoop(as('poller'), clock.advance).run()).toMatchObject({ stayed: true });
  });

  test('gives the lease up removing the lane holds that ended, so the wake item does not grow with every type ever held', async () => {
    const { ctx, clock, as } = queue();
    await defineType(ctx, 'quiet');
    await writeWake(ctx, holdParams(wakeKey('poller', 0), T0 + HOLD_FOR_MS, ['quiet', 'gone']));
    expect(await pollerLoop(as('poller'), clock.advance).run()).toMatchObject({ stayed: true });
    expect(await readWakeState(ctx, 'poller', 0)).toMatchObject({ stopping: true, laneHoldsUntilMs: new Map() });
  });
});

describe('a poller with nowhere to send timers', () => {
  test('stays for a job due before the next tick, claims it on time, then ends long before its run would', async () => {
    const { ctx, clock, as } = queueWithoutTimers();
    await enqueue(ctx, await defineType(ctx, 'soon'), 'in-30s', { runAfterMs: T0 + 30_000 });
    const loop = pollerLoop(as('poller'), clock.advance);
    const outcome = await loop.run();
    expect(outcome).toMatchObject({ stayed: true, totals: { claimed: 1 } });
    expect(loop.invoker.batches[0]!.jobs[0]!.claimedAtMs).toBeGreaterThanOrEqual(T0 + 30_000);
    expect(outcome.stayed && outcome.ranForMs).toBeLessThan(35_000);
    expect(await readWakeState(ctx, 'poller', 0)).toMatchObject({ stopping: true });
  });
});

describe('a writer', () => {
  test('of a job due now asks no one: it reads no wake item, asks no hold and wakes no one', async () => {
    recordNothingYet();
    const { ctx, as } = queue();
    await enqueue(as('api'), await defineType(ctx, 'now'), 'j1');
    expect(waker.requests).toEqual([]);
    expect(await readWakeState(ctx, 'poller', 0)).toMatchObject({ holdUntilMs: 0, ownerId: undefined });
  });

  test('starting a bulk operation asks no one: the waker reads it on the stream', async () => {
    recordNothingYet();
    const { ctx, as } = queue();
    await startBulkOperation(as('api'), await defineType(ctx, 'bulk'), { action: 'cancel', status: 'queued' }, 'operator');
    expect(waker.requests).toEqual([]);
    expect((await readWakeState(ctx, 'sweeper', 0)).holdUntilMs).toBe(0);
  });

  test('resuming a type asks no one: the waker reads the type on the stream', async () => {
    const { ctx, as } = queue();
    await defineType(ctx, 'resumed');
    await setJobTypePaused(ctx, 'resumed', true);
    recordNothingYet();
    await setJobTypePaused(as('api'), 'resumed', false);
    expect(waker.requests).toEqual([]);
    expect((await readWakeState(ctx, 'poller', 0)).holdUntilMs).toBe(0);
  });
});

describe('making sure of work written (ensureAwake, as the waker does)', () => {
  test('due now, with no poller awake, asks for a hold past the index\'s lag and wakes the poller of its partition', async () => {
    recordNothingYet();
    const { ctx, as } = queue();
    await enqueue(ctx, await defineType(ctx, 'now'), 'j1');
    await ensureAwake(as('waker'), 'poller', 0, { dueAtMs: T0, writtenAtMs: T0 });
    expect(waker.requests).toEqual([{ role: 'poller', shards: [0, 1, 2, 3] }]);
    expect((await readWakeState(ctx, 'poller', 0)).holdUntilMs).toBe(T0 + INDEX_LAG_MS);
  });

  test('due later (a timer), asks for a hold only until a poll after it falls due', async () => {
    const { ctx, as } = queue();
    await ensureAwake(as('waker'), 'poller', 0, { dueAtMs: T0 + 1_000 });
    const { holdUntilMs } = await readWakeState(ctx, 'poller', 0);
    expect(holdUntilMs).toBeGreaterThan(T0 + 1_000 + ctx.settings.pollIntervalMs);
    expect(holdUntilMs).toBeLessThan(T0 + 1_000 + ctx.settings.pollIntervalMs + 1_000);
  });

  test('wakes once for a burst: the hold it asked for covers the work after it, until the hold ends', async () => {
    recordNothingYet();
    const { clock, as } = queue();
    const wakerCtx = as('waker');
    for (let i = 0; i < 5; i++) await ensureAwake(wakerCtx, 'poller', 0, { dueAtMs: T0, writtenAtMs: T0 });
    expect(waker.requests).toHaveLength(1);
    clock.advance(INDEX_LAG_MS);
    await ensureAwake(wakerCtx, 'poller', 0, { dueAtMs: clock.nowMs(), writtenAtMs: clock.nowMs() });
    expect(waker.requests).toHaveLength(2);
  });

  test('due past a tick\'s cover wakes no one and writes nothing', async () => {
    recordNothingYet();
    const { ctx, as } = queue();
    await ensureAwake(as('waker'), 'poller', 0, { dueAtMs: T0 + TICK_COVER_MS });
    expect(waker.requests).toEqual([]);
    expect((await readWakeState(ctx, 'poller', 0)).holdUntilMs).toBe(0);
  });

  test('asks for a hold, and wakes no one, while the lease\'s holder will outlast it', async () => {
    recordNothingYet();
    const { ctx, as } = queue();
    await writeWake(ctx, takeLeaseParams(wakeKey('poller', 0), { ownerId: 'holder', awakeUntilMs: T0 + LEASE_MS, ownerEndsAtMs: T0 + 50_000 }));
    await ensureAwake(as('waker'), 'poller', 0, { dueAtMs: T0, writtenAtMs: T0 });
    expect(waker.requests).toEqual([]);
    expect((await readWakeState(ctx, 'poller', 0)).holdUntilMs).toBe(T0 + INDEX_LAG_MS);
  });

  test('wakes a poller when the lease\'s holder gave it up, though the lease has not run out: that holder is ending', async () => {
    recordNothingYet();
    const { ctx, as } = queue();
    const key = wakeKey('poller', 0);
    await writeWake(ctx, takeLeaseParams(key, { ownerId: 'holder', awakeUntilMs: T0 + LEASE_MS, ownerEndsAtMs: T0 + 50_000 }));
    await writeWake(ctx, stopLeaseParams(key, 'holder', T0, undefined));
    await ensureAwake(as('waker'), 'poller', 0, { dueAtMs: T0, writtenAtMs: T0 });
    expect(waker.requests).toHaveLength(1);
  });

  test('wakes the poller of the partition owning its shard', async () => {
    recordNothingYet();
    const { ctx, as } = queue();
    const two = { ...as('waker'), settings: { ...ctx.settings, pollerPartitions: 2 } };
    const id = 'job-in-some-shard';
    await ensureAwake(two, 'poller', pollerPartitionOf(two, id), { dueAtMs: T0 });
    const partition = pollerPartitionOf(two, id);
    expect(waker.requests).toEqual([{ role: 'poller', shards: partition === 0 ? [0, 2] : [1, 3] }]);
  });
});

describe('an awake poller waiting between polls', () => {
  test('polls a type made meanwhile within a quarter of a second, not a poll interval later', async () => {
    const { ctx, clock, as } = queueWithoutTimers();
    // A job due later keeps the poller awake (it has nowhere to send a timer), with nothing to claim for a while.
    await enqueue(ctx, await defineType(ctx, 'later'), 'in-20s', { runAfterMs: T0 + 20_000 });
    let enqueuedAtMs: number | undefined;
    const loop = pollerLoop(as('poller'), clock.advance, 55_000, async () => {
      if (enqueuedAtMs !== undefined || clock.nowMs() < T0 + 2_000) return;
      await enqueue(as('api'), await defineType(as('api'), 'fresh'), 'first');
      enqueuedAtMs = clock.nowMs();
    });
    await loop.run();
    const first = loop.invoker.jobs.find((job) => job.id === 'first');
    expect(first?.claimedAtMs).toBeDefined();
    expect(first!.claimedAtMs! - enqueuedAtMs!).toBeLessThanOrEqual(TYPES_CHECK_MS);
  });
});

describe('a woken invocation', () => {
  test('ends at once when a live holder will outlast the hold that asked for it', async () => {
    const { ctx, clock, as } = queue();
    await writeWake(ctx, takeLeaseParams(wakeKey('poller', 0), { ownerId: 'holder', awakeUntilMs: T0 + LEASE_MS, ownerEndsAtMs: T0 + 50_000 }));
    await writeWake(ctx, holdParams(wakeKey('poller', 0), T0 + HOLD_FOR_MS));
    expect(await pollerLoop(as('poller'), clock.advance).run('wake')).toEqual({ stayed: false, reason: 'covered' });
  });

  test('takes the lease over from a holder whose invocation ends before the hold does', async () => {
    const { ctx, clock, as } = queue();
    await writeWake(ctx, takeLeaseParams(wakeKey('poller', 0), { ownerId: 'holder', awakeUntilMs: T0 + LEASE_MS, ownerEndsAtMs: T0 + 2_000 }));
    await writeWake(ctx, holdParams(wakeKey('poller', 0), T0 + HOLD_FOR_MS));
    const awake = await startPollerAwake(as('poller'), { shards: [0, 1, 2, 3], endsAtMs: clock.nowMs() + 55_000, kind: 'wake' });
    expect(awake.stays).toBe(true);
    expect((await readWakeState(ctx, 'poller', 0)).ownerId).not.toBe('holder');
  });
});

/** A poller partition's holder after a tick that stayed, looking with `work`, its invocation ending at `endsAtMs`. */
async function holderAt(ctx: QueueContext, work: AwakeWork, endsAtMs = T0 + 55_000) {
  const state = await readWakeState(ctx, 'poller', 0);
  const start = await startAwake(ctx, { role: 'poller', partition: 0, ownerId: 'me', endsAtMs, kind: 'tick', work, state });
  if (!start.awake) throw new Error('expected to stay');
  return start;
}

/** Looks that answer `found` in turn (the last one after), due now for the start. */
function looksFinding(ctx: QueueContext, ...found: ((nowMs: number) => number | undefined)[]): AwakeWork & { looks: number } {
  const work = {
    looks: -1,
    earliestDueAtMs: async () => {
      work.looks++;
      if (work.looks === 0) return ctx.nowMs();
      return found[Math.min(work.looks - 1, found.length - 1)]!(ctx.nowMs());
    },
    walkedFromBucket: () => undefined,
  };
  return work;
}

describe('a holder about to stop', () => {
  test(`stays while work is due within ${DUE_SOON_MS} ms`, async () => {
    const { ctx, clock } = queue();
    const start = await holderAt(ctx, looksFinding(ctx, (nowMs) => nowMs + DUE_SOON_MS));
    clock.advance(IDLE_BEFORE_LOOK_MS);
    await start.keeper.afterRound(false);
    expect(start.keeper.stopping).toBe(false);
  });

  test('gives the lease up on the first look that finds nothing due soon, ending at once, and arms a timer for the earliest work it leaves', async () => {
    recordNothingYet();
    const { clock, as } = queue();
    const ctx = as('poller');
    const start = await holderAt(ctx, looksFinding(ctx, (nowMs) => nowMs + 20_000));
    clock.advance(IDLE_BEFORE_LOOK_MS);
    const round = await start.keeper.afterRound(false);
    expect(start.keeper.stopping).toBe(true);
    expect(round.untilMs).toBe(clock.nowMs());
    expect(await readWakeState(ctx, 'poller', 0)).toMatchObject({ stopping: true });
    expect(timers.armed.map(({ timer }) => timer)).toEqual([{ role: 'poller', partition: 0, dueAtMs: clock.nowMs() + 20_000 }]);
  });

  test('does not stop when the waker asked for a hold after its look began: the look may have missed that work', async () => {
    const { ctx, clock } = queue();
    const work = looksFinding(ctx, () => undefined);
    const lookAskingForHold: AwakeWork = {
      earliestDueAtMs: async (untilMs) => {
        const found = await work.earliestDueAtMs(untilMs);
        // The waker asks for someone awake while the holder takes the look it would stop on.
        if (work.looks === 1) await writeWake(ctx, holdParams(wakeKey('poller', 0), ctx.nowMs() + HOLD_FOR_MS));
        return found;
      },
      walkedFromBucket: () => undefined,
    };
    const start = await holderAt(ctx, lookAskingForHold);
    clock.advance(IDLE_BEFORE_LOOK_MS);
    await start.keeper.afterRound(false);
    expect(start.keeper.stopping).toBe(false);
    // Past the hold, nothing due: it stops.
    clock.advance(HOLD_FOR_MS);
    await start.keeper.afterRound(false);
    expect(start.keeper.stopping).toBe(true);
  });

  test(`still busy ${HANDOVER_MS} ms before its invocation ends, wakes its successor once: the next tick may be seconds away`, async () => {
    recordNothingYet();
    const { clock, as } = queue();
    const ctx = as('poller');
    const start = await holderAt(ctx, looksFinding(ctx, (nowMs) => nowMs), T0 + 10_000);
    clock.advance(10_000 - HANDOVER_MS - 100);
    await start.keeper.afterRound(true);
    expect(waker.requests).toEqual([]);
    clock.advance(200);
    await start.keeper.afterRound(true);
    await start.keeper.afterRound(true);
    expect(waker.requests).toEqual([{ role: 'poller', shards: [0, 1, 2, 3] }]);
  });

  test('lists job types again once a type changed while it was awake', async () => {
    const { ctx, clock } = queue();
    const start = await holderAt(ctx, looksFinding(ctx, (nowMs) => nowMs));
    const before = (await start.keeper.afterRound(true)).typesChangedAtMs;
    await defineType(queue().as('api'), 'new-type');
    // Well before its lease needs renewing: a type's first job may be due now.
    clock.advance(TYPES_CHECK_MS);
    expect((await start.keeper.afterRound(true)).typesChangedAtMs).not.toBe(before);
  });
});

describe('a sweeper', () => {
  const sweeperTick = (ctx: QueueContext, kind: 'tick' | 'wake' = 'tick') => startSweeperAwake(ctx, { endsAtMs: ctx.nowMs() + 55_000, kind });
  /** Whether a sweeper's tick stays; one that stays is stopped again at once. */
  const sweeperStays = async (ctx: QueueContext): Promise<boolean> => {
    const awake = await sweeperTick(ctx);
    if (awake.stays) await awake.stop();
    return awake.stays;
  };

  test('with no claim outstanding and no bulk operation, ends at its tick', async () => {
    const { ctx, as } = queue();
    await writeWake(ctx, recordSweptParams(wakeKey('sweeper', 0), T0));
    await enqueue(ctx, await defineType(ctx, 'queued-only'), 'j1');
    expect(await sweeperTick(as('sweeper'))).toEqual({ stays: false, reason: 'idle' });
  });

  test(`stays for a whole sweep at least every ${BACKSTOP_SWEEP_EVERY_MS / MINUTE} minutes, idle or not: the backstop and the counters wait for nothing else`, async () => {
    const { ctx, clock, as } = queue();
    await writeWake(ctx, recordSweptParams(wakeKey('sweeper', 0), T0));
    clock.advance(BACKSTOP_SWEEP_EVERY_MS);
    expect(await sweeperStays(as('sweeper'))).toBe(true);
  });

  test('is not woken by the claim of a poller, which waits on no wake: the waker arms a timer for its lapse from the stream', async () => {
    recordNothingYet();
    const { ctx } = queue();
    const jobType = await defineType(ctx, 'claimed');
    await enqueue(ctx, jobType, 'j1');
    expect(await poll(ctx, [jobType], new RecordingInvoker())).toMatchObject({ claimed: 1 });
    expect(waker.requests).not.toContainEqual({ role: 'sweeper' });
  });

  test('with a claim lapsing before the next tick, sleeps, having armed a timer that comes back after the lapse', async () => {
    recordNothingYet();
    const { ctx, as } = queue();
    await writeWake(ctx, recordSweptParams(wakeKey('sweeper', 0), T0));
    const jobType = await defineType(ctx, 'claimed');
    await enqueue(ctx, jobType, 'j1');
    expect(await poll(ctx, [jobType], new RecordingInvoker())).toMatchObject({ claimed: 1 });
    expect(await sweeperTick(as('sweeper'))).toEqual({ stays: false, reason: 'timer' });
    const lapseAtMs = T0 + jobType.visibilityTimeoutS * 1000;
    expect(timers.armed).toEqual([{ timer: { role: 'sweeper', partition: 0, dueAtMs: lapseAtMs }, delayS: (lapseAtMs - T0) / 1000 + 1 }]);
  });

  test('stays while a bulk operation runs', async () => {
    const { ctx, as } = queue();
    await writeWake(ctx, recordSweptParams(wakeKey('sweeper', 0), T0));
    await startBulkOperation(as('api'), await defineType(ctx, 'bulk'), { action: 'cancel', status: 'queued' }, 'operator');
    expect(await sweeperStays(as('sweeper'))).toBe(true);
  });
});
