/**
 * Pollers that sleep (lib/queue/wake/lease-keeper.ts, poller-stays.ts) and what wakes them (lib/queue/wake/ensure-awake.ts): a
 * tick with nothing in reach ends in a few reads; one with work stays, keeps a lease, and ends once nothing is
 * in reach; an entry written due soon that no lease covers gets a hold and a wake of the poller of its partition,
 * once for a burst; a woken invocation ends at once when the holder will outlast the hold. Writers ask nothing.
 */
import { describe, expect, test } from 'vitest';
import type { QueueContext } from '../../../../../lib/queue/context.js';
import { COVER_MARGIN_MS, HOLD_MS, TICK_COVER_MS, ensureAwake, pollerPartitionOf } from '../../../../../lib/queue/wake/ensure-awake.js';
import { HANDOVER_MS, LEASE_MS, SETTLE_MS, startAwake, TYPES_CHECK_MS, type AwakeWork } from '../../../../../lib/queue/wake/lease-keeper.js';
import { startPollerAwake } from '../../../../../lib/queue/wake/poller-stays.js';
import { runPollerLoop } from '../../../../../lib/queue/poll/poller-loop.js';
import { setJobTypePaused } from '../../../../../lib/queue/catalog/job-types.js';
import { wakeKey } from '../../../../../lib/store/keys.js';
import { holdParams, readWakeState, recordSweptParams, stopLeaseParams, takeLeaseParams, writeWake } from '../../../../../lib/store/wake.js';
import { countQueries, recordQueryItemCounts } from '../../../../support/sdk-calls.js';
import { startBulkOperation } from '../../../../../lib/queue/bulk/start-bulk-operation.js';
import { BACKSTOP_SWEEP_EVERY_MS, startSweeperAwake } from '../../../../../lib/queue/wake/sweeper-stays.js';
import { RecordingInvoker, T0, defineType, enqueue, freshQueuePerTest, poll, RecordingWaker } from '../../../../support/lib-fixtures.js';

const waker = new RecordingWaker();
const queue = freshQueuePerTest({ waker });
const MINUTE = 60_000;

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
        ...(awake.afterRound ? { afterRound: awake.afterRound } : {}),
        ...(awake.typesChangedAtMs !== undefined ? { typesChangedAtMs: awake.typesChangedAtMs } : {}),
        ...(awake.typesChangedAtMsNow ? { typesChangedAtMsNow: awake.typesChangedAtMsNow } : {}),
      });
      return { stayed: true as const, totals, ranForMs: ctx.nowMs() - startedAtMs };
    },
  };
}

describe('a minute tick', () => {
  test('with types but nothing enqueued, ends after a few reads, taking no lease', async () => {
    const { ctx, clock, clientsOf, as } = queue();
    for (const name of ['a', 'b', 'c']) await defineType(ctx, name);
    const queries = countQueries(clientsOf('poller').base);
    const outcome = await pollerLoop(as('poller'), clock.advance).run();
    expect(outcome).toEqual({ stayed: false, reason: 'idle' });
    // The schedules due, the types' listing, and one look at each type's bucket directory.
    expect(queries.count).toBe(1 + 1 + 3);
    expect((await readWakeState(ctx, 'poller', 0)).ownerId).toBeUndefined();
  });

  test('with work recorded in several buckets within reach, reads one record of the type\'s bucket directory', async () => {
    const { ctx, clientsOf, as } = queue();
    const jobType = await defineType(ctx, 'spread');
    for (const [at, dueInMs] of [0, ctx.settings.bucketMs, 2 * ctx.settings.bucketMs].entries()) await enqueue(ctx, jobType, `j${at}`, { runAfterMs: T0 + Math.min(dueInMs, 80_000) });
    const directoryAnswers = recordQueryItemCounts(clientsOf('poller').base, 'DIR#');
    const awake = await startPollerAwake(as('poller'), { shards: [0, 1, 2, 3], endsAtMs: T0 + 55_000, kind: 'tick' });
    expect(awake.stays).toBe(true);
    expect(directoryAnswers).toEqual([1]);
  });

  test('with a job due two hours from now, sleeps: a later tick finds it', async () => {
    const { ctx, clock, as } = queue();
    await enqueue(ctx, await defineType(ctx, 'later'), 'in-2h', { runAfterMs: T0 + 120 * MINUTE });
    expect(await pollerLoop(as('poller'), clock.advance).run()).toEqual({ stayed: false, reason: 'idle' });
  });

  test('with a job due within the next tick, stays, claims it on time, then ends long before its run would', async () => {
    const { ctx, clock, as } = queue();
    await enqueue(ctx, await defineType(ctx, 'soon'), 'in-30s', { runAfterMs: T0 + 30_000 });
    const loop = pollerLoop(as('poller'), clock.advance);
    const outcome = await loop.run();
    expect(outcome).toMatchObject({ stayed: true, totals: { claimed: 1 } });
    expect(loop.invoker.batches[0]!.jobs[0]!.claimedAtMs).toBeGreaterThanOrEqual(T0 + 30_000);
    expect(outcome.stayed && outcome.ranForMs).toBeLessThan(45_000);
    expect(await readWakeState(ctx, 'poller', 0)).toMatchObject({ stopping: true });
  });

  test('after ending, records where its walks stood, so the next ticks look from there', async () => {
    const { ctx, clock, as } = queue();
    const jobType = await defineType(ctx, 'once');
    await enqueue(ctx, jobType, 'now');
    await pollerLoop(as('poller'), clock.advance).run();
    expect((await readWakeState(ctx, 'poller', 0)).walkedFromBucket).toBeGreaterThanOrEqual(Math.floor(T0 / ctx.settings.bucketMs));
  });

  test('stays for a hold a writer asked for, though nothing is due', async () => {
    const { ctx, clock, as } = queue();
    await defineType(ctx, 'quiet');
    await writeWake(ctx, holdParams(wakeKey('poller', 0), T0 + HOLD_MS));
    expect(await pollerLoop(as('poller'), clock.advance).run()).toMatchObject({ stayed: true });
  });
});

describe('a writer', () => {
  test('of a job due now asks no one: it reads no wake item, asks no hold and wakes no one', async () => {
    const { ctx, as } = queue();
    waker.requests.length = 0;
    await enqueue(as('api'), await defineType(ctx, 'now'), 'j1');
    expect(waker.requests).toEqual([]);
    expect(await readWakeState(ctx, 'poller', 0)).toMatchObject({ holdUntilMs: 0, ownerId: undefined });
  });
});

describe('making sure of an entry written (ensureAwake, as the waker does)', () => {
  test('due now, with no poller awake, asks for a hold and wakes the poller of its partition', async () => {
    const { ctx, as } = queue();
    waker.requests.length = 0;
    await enqueue(ctx, await defineType(ctx, 'now'), 'j1');
    await ensureAwake(as('waker'), 'poller', 0, T0);
    expect(waker.requests).toEqual([{ role: 'poller', shards: [0, 1, 2, 3] }]);
    expect((await readWakeState(ctx, 'poller', 0)).holdUntilMs).toBe(T0 + HOLD_MS);
  });

  test('wakes once for a burst: the hold it asked for covers the entries after it, until the hold nears its end', async () => {
    const { clock, as } = queue();
    waker.requests.length = 0;
    const wakerCtx = as('waker');
    for (let i = 0; i < 5; i++) await ensureAwake(wakerCtx, 'poller', 0, T0);
    expect(waker.requests).toHaveLength(1);
    clock.advance(HOLD_MS - COVER_MARGIN_MS);
    await ensureAwake(wakerCtx, 'poller', 0, clock.nowMs());
    expect(waker.requests).toHaveLength(2);
  });

  test('due past a tick\'s cover wakes no one and reads nothing', async () => {
    const { ctx, as } = queue();
    waker.requests.length = 0;
    await ensureAwake(as('waker'), 'poller', 0, T0 + TICK_COVER_MS);
    expect(waker.requests).toEqual([]);
    expect((await readWakeState(ctx, 'poller', 0)).holdUntilMs).toBe(0);
  });

  test('a live lease outlasts wakes no one', async () => {
    const { ctx, as } = queue();
    waker.requests.length = 0;
    await writeWake(ctx, takeLeaseParams(wakeKey('poller', 0), { ownerId: 'holder', awakeUntilMs: T0 + LEASE_MS, ownerEndsAtMs: T0 + 50_000 }));
    await ensureAwake(as('waker'), 'poller', 0, T0);
    expect(waker.requests).toEqual([]);
  });

  test('a lease outlasts covers it though its holder will not renew: written, the entry is there for the holder\'s last polls', async () => {
    const { ctx, as } = queue();
    waker.requests.length = 0;
    const key = wakeKey('poller', 0);
    await writeWake(ctx, takeLeaseParams(key, { ownerId: 'holder', awakeUntilMs: T0 + LEASE_MS, ownerEndsAtMs: T0 + 50_000 }));
    await writeWake(ctx, stopLeaseParams(key, 'holder', T0, undefined));
    await ensureAwake(as('waker'), 'poller', 0, T0);
    expect(waker.requests).toEqual([]);
  });

  test('due past the lease asks for a hold, and wakes no one while the holder will outlast it', async () => {
    const { ctx, as } = queue();
    waker.requests.length = 0;
    await writeWake(ctx, takeLeaseParams(wakeKey('poller', 0), { ownerId: 'holder', awakeUntilMs: T0 + LEASE_MS, ownerEndsAtMs: T0 + 50_000 }));
    await ensureAwake(as('waker'), 'poller', 0, T0 + 20_000);
    expect(waker.requests).toEqual([]);
    expect((await readWakeState(ctx, 'poller', 0)).holdUntilMs).toBe(T0 + HOLD_MS);
  });

  test('due past the lease of a holder that will not renew wakes a poller: the holder will not stay for the hold', async () => {
    const { ctx, as } = queue();
    waker.requests.length = 0;
    const key = wakeKey('poller', 0);
    await writeWake(ctx, takeLeaseParams(key, { ownerId: 'holder', awakeUntilMs: T0 + LEASE_MS, ownerEndsAtMs: T0 + 50_000 }));
    await writeWake(ctx, stopLeaseParams(key, 'holder', T0, undefined));
    await ensureAwake(as('waker'), 'poller', 0, T0 + 20_000);
    expect(waker.requests).toHaveLength(1);
  });

  test('starting a bulk operation while the sweeper stops wakes another: one stopping runs no new operation', async () => {
    const { ctx, as } = queue();
    const key = wakeKey('sweeper', 0);
    await writeWake(ctx, takeLeaseParams(key, { ownerId: 'sweeper-1', awakeUntilMs: T0 + LEASE_MS, ownerEndsAtMs: T0 + 50_000 }));
    await writeWake(ctx, stopLeaseParams(key, 'sweeper-1', T0, undefined));
    waker.requests.length = 0;
    await startBulkOperation(as('api'), await defineType(ctx, 'bulk-late'), { action: 'cancel', status: 'queued' }, 'operator');
    expect(waker.requests).toEqual([{ role: 'sweeper' }]);
  });

  test('wakes the poller of the partition owning its shard', async () => {
    const { ctx, as } = queue();
    waker.requests.length = 0;
    const two = { ...as('waker'), settings: { ...ctx.settings, pollerPartitions: 2 } };
    const id = 'job-in-some-shard';
    await ensureAwake(two, 'poller', pollerPartitionOf(two, id), T0);
    const partition = pollerPartitionOf(two, id);
    expect(waker.requests).toEqual([{ role: 'poller', shards: partition === 0 ? [0, 2] : [1, 3] }]);
  });

  test('resuming a type wakes every poller partition, whatever the leases say', async () => {
    const { ctx, as } = queue();
    const two = { ...as('api'), settings: { ...ctx.settings, pollerPartitions: 2 } };
    await defineType(ctx, 'resumed');
    await setJobTypePaused(two, 'resumed', true);
    waker.requests.length = 0;
    await setJobTypePaused(two, 'resumed', false);
    // Both partitions are woken side by side, in either order.
    expect(waker.requests).toHaveLength(2);
    expect(waker.requests).toEqual(
      expect.arrayContaining([
        { role: 'poller', shards: [0, 2] },
        { role: 'poller', shards: [1, 3] },
      ]),
    );
  });
});

describe('an awake poller waiting between polls', () => {
  test('polls a type made meanwhile within a quarter of a second, not a poll interval later', async () => {
    const { ctx, clock, as } = queue();
    // A job due later keeps the poller awake, with nothing to claim for a while.
    await enqueue(ctx, await defineType(ctx, 'later'), 'in-20s', { runAfterMs: T0 + 20_000 });
    let enqueuedAtMs: number | undefined;
    waker.requests.length = 0;
    const loop = pollerLoop(as('poller'), clock.advance, 55_000, async () => {
      if (enqueuedAtMs !== undefined || clock.nowMs() < T0 + 2_000) return;
      // Made while the poller waits: its lease covers the job, so no wake comes for it.
      await enqueue(as('api'), await defineType(as('api'), 'fresh'), 'first');
      enqueuedAtMs = clock.nowMs();
    });
    await loop.run();
    const first = loop.invoker.jobs.find((job) => job.id === 'first');
    expect(first?.claimedAtMs).toBeDefined();
    expect(first!.claimedAtMs! - enqueuedAtMs!).toBeLessThanOrEqual(TYPES_CHECK_MS);
    expect(waker.requests.filter((request) => request.role === 'poller')).toEqual([]);
  });
});

describe('a woken invocation', () => {
  test('ends at once when a live holder will outlast the hold that asked for it', async () => {
    const { ctx, clock, as } = queue();
    await writeWake(ctx, takeLeaseParams(wakeKey('poller', 0), { ownerId: 'holder', awakeUntilMs: T0 + LEASE_MS, ownerEndsAtMs: T0 + 50_000 }));
    await writeWake(ctx, holdParams(wakeKey('poller', 0), T0 + HOLD_MS));
    expect(await pollerLoop(as('poller'), clock.advance).run('wake')).toEqual({ stayed: false, reason: 'covered' });
  });

  test('takes the lease over from a holder that will not renew', async () => {
    const { ctx, clock, as } = queue();
    await writeWake(ctx, takeLeaseParams(wakeKey('poller', 0), { ownerId: 'holder', awakeUntilMs: T0 + LEASE_MS, ownerEndsAtMs: T0 + 2_000 }));
    await writeWake(ctx, holdParams(wakeKey('poller', 0), T0 + HOLD_MS));
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

describe('a holder about to stop', () => {
  test('does not stop when a writer asked for a hold after its look began: the look may have missed that entry', async () => {
    const { ctx, clock } = queue();
    let looks = 0;
    const work: AwakeWork = {
      inReach: async (_untilMs, how) => {
        if (how === 'coarse') return true;
        looks++;
        // A writer asks for someone awake while the holder takes the look it would stop on.
        if (looks === 2) await writeWake(ctx, holdParams(wakeKey('poller', 0), ctx.nowMs() + HOLD_MS));
        return false;
      },
      walkedFromBucket: () => undefined,
    };
    const start = await holderAt(ctx, work);
    clock.advance(2_000);
    await start.keeper.afterRound(false);
    clock.advance(SETTLE_MS);
    await start.keeper.afterRound(false);
    expect(looks).toBe(2);
    expect(start.keeper.stopping).toBe(false);
    // Past the hold, nothing in reach: it stops.
    clock.advance(HOLD_MS + 2_000);
    await start.keeper.afterRound(false);
    expect(start.keeper.stopping).toBe(true);
  });

  test('lists job types again after it stopped renewing: its lease may cover the first job of a type made since', async () => {
    const { ctx, clock } = queue();
    const work: AwakeWork = { inReach: async (_untilMs, how) => how === 'coarse', walkedFromBucket: () => undefined };
    const start = await holderAt(ctx, work);
    clock.advance(2_000);
    await start.keeper.afterRound(false);
    clock.advance(SETTLE_MS);
    const before = (await start.keeper.afterRound(false)).typesChangedAtMs;
    expect(start.keeper.stopping).toBe(true);
    await defineType(queue().as('api'), 'made-while-stopping');
    clock.advance(TYPES_CHECK_MS);
    expect((await start.keeper.afterRound(false)).typesChangedAtMs).not.toBe(before);
  });

  test(`stops only on a second look ${SETTLE_MS} ms after a first that found nothing: an entry whose write was on its way when the first looked keeps it awake`, async () => {
    const { ctx, clock } = queue();
    const closeLooks: boolean[] = [false, true];
    const work: AwakeWork = { inReach: async (_untilMs, how) => how === 'coarse' || (closeLooks.shift() ?? false), walkedFromBucket: () => undefined };
    const start = await holderAt(ctx, work);
    clock.advance(2_000);
    await start.keeper.afterRound(false);
    clock.advance(SETTLE_MS);
    await start.keeper.afterRound(false);
    expect(start.keeper.stopping).toBe(false);
    // Two quiet looks in a row, SETTLE_MS apart: it stops.
    clock.advance(2_000);
    await start.keeper.afterRound(false);
    clock.advance(SETTLE_MS);
    await start.keeper.afterRound(false);
    expect(start.keeper.stopping).toBe(true);
  });

  test(`still busy ${HANDOVER_MS} ms before its invocation ends, wakes its successor once: the next tick may be seconds away`, async () => {
    const { clock, as } = queue();
    waker.requests.length = 0;
    const work: AwakeWork = { inReach: async () => true, walkedFromBucket: () => undefined };
    const start = await holderAt(as('poller'), work, T0 + 10_000);
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
    const work: AwakeWork = { inReach: async () => true, walkedFromBucket: () => undefined };
    const start = await holderAt(ctx, work);
    const before = (await start.keeper.afterRound(true)).typesChangedAtMs;
    await defineType(queue().as('api'), 'new-type');
    // Well before its lease needs renewing: a type's first job is due now, and a lease covers it, so no wake comes.
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

  test('is not woken by the claim of a poller, which waits on no wake: the waker wakes it from the stream as the claim lapses', async () => {
    const { ctx } = queue();
    const jobType = await defineType(ctx, 'claimed');
    await enqueue(ctx, jobType, 'j1');
    waker.requests.length = 0;
    expect(await poll(ctx, [jobType], new RecordingInvoker())).toMatchObject({ claimed: 1 });
    expect(waker.requests).not.toContainEqual({ role: 'sweeper' });
  });

  test('stays while a claim is outstanding, once started', async () => {
    const { ctx, as } = queue();
    const jobType = await defineType(ctx, 'claimed');
    await enqueue(ctx, jobType, 'j1');
    expect(await poll(ctx, [jobType], new RecordingInvoker())).toMatchObject({ claimed: 1 });
    expect(await sweeperStays(as('sweeper'))).toBe(true);
  });

  test('is woken by a bulk operation, and stays while it runs', async () => {
    const { ctx, as } = queue();
    const jobType = await defineType(ctx, 'bulk');
    waker.requests.length = 0;
    await startBulkOperation(as('api'), jobType, { action: 'cancel', status: 'queued' }, 'operator');
    expect(waker.requests).toEqual([{ role: 'sweeper' }]);
    expect(await sweeperStays(as('sweeper'))).toBe(true);
  });
});
