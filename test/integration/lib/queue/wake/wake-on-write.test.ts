/**
 * The waker (lib/queue/wake/wake-on-write.ts), as the stream hands it due-index entries once written: due soon, the
 * poller of the entry's shard (or the sweeper, for a claim or a bulk operation) is made sure of at once; due within
 * a tick's reach, a timer is armed, one per function and second, naming the lane partitions it stands for; later,
 * nothing. A timer that comes back wakes its function only while an entry it names is still due there.
 */
import { describe, expect, test } from 'vitest';
import type { WakeTimer } from '../../../../../lib/domain/invocations.js';
import { TICK_COVER_MS } from '../../../../../lib/queue/wake/ensure-awake.js';
import { DUE_SOON_MS, TIMER_LEAD_MS } from '../../../../../lib/queue/wake/timers.js';
import { wakeForTimers, wakeForWrittenEntries } from '../../../../../lib/queue/wake/wake-on-write.js';
import { lanePartition, SCHEDULES_PARTITION, shardOf, type WakingEntry } from '../../../../../lib/store/keys.js';
import { EVERY_LANE, readWakeState } from '../../../../../lib/store/wake.js';
import { T0, defineType, enqueue, freshQueuePerTest, RecordingTimers, RecordingWaker } from '../../../../support/lib-fixtures.js';

const waker = new RecordingWaker();
const queue = freshQueuePerTest({ waker, settings: { shards: 4, pollerPartitions: 2 } });

const queued = (shard: number, dueAtMs: number): WakingEntry & { partition: string } => ({
  kind: 'lane',
  lane: { kind: 'queued', type: 'a' },
  shard,
  dueAtMs,
  partition: lanePartition({ kind: 'queued', type: 'a' }, Math.floor(dueAtMs / 60_000), shard),
});
const claim = (dueAtMs: number): WakingEntry & { partition: string } => ({
  kind: 'lane',
  lane: { kind: 'claims' },
  shard: 0,
  dueAtMs,
  partition: lanePartition({ kind: 'claims' }, Math.floor(dueAtMs / 60_000), 0),
});

function setUp(): { timers: RecordingTimers; waker: RecordingWaker } {
  waker.requests.length = 0;
  return { timers: new RecordingTimers(), waker };
}

describe(`a lane entry due within DUE_SOON_MS (${DUE_SOON_MS} ms)`, () => {
  test('wakes the poller partition owning its shard, and arms no timer', async () => {
    const { timers } = setUp();
    await wakeForWrittenEntries(queue().as('waker'), [queued(3, T0 + DUE_SOON_MS)], timers);
    expect(waker.requests).toEqual([{ role: 'poller', shards: [1, 3] }]);
    expect(timers.armed).toEqual([]);
  });

  test('asks its poller partition for a hold that outlasts the latest of the batch', async () => {
    const { timers } = setUp();
    const { as, ctx } = queue();
    await wakeForWrittenEntries(as('waker'), [queued(0, T0), queued(2, T0 + 1_500)], timers);
    expect(waker.requests).toEqual([{ role: 'poller', shards: [0, 2] }]);
    expect((await readWakeState(ctx, 'poller', 0)).holdUntilMs).toBeGreaterThan(T0 + 1_500);
  });

  test('of a claim lapsed already wakes the sweeper', async () => {
    const { timers } = setUp();
    await wakeForWrittenEntries(queue().as('waker'), [claim(T0)], timers);
    expect(waker.requests).toEqual([{ role: 'sweeper' }]);
  });
});

test('a lane entry due a little later, whose timer would come back at once, is made sure of at once: a timer would check the index before it may show the entry', async () => {
  const { timers } = setUp();
  const { as, clock } = queue();
  clock.advance(900);
  await wakeForWrittenEntries(as('waker'), [queued(0, T0 + 2_950)], timers);
  expect(waker.requests).toEqual([{ role: 'poller', shards: [0, 2] }]);
  expect(timers.armed).toEqual([]);
});

test('a bulk operation written wakes the sweeper at once', async () => {
  const { timers } = setUp();
  await wakeForWrittenEntries(queue().as('waker'), [{ kind: 'operation' }], timers);
  expect(waker.requests).toEqual([{ role: 'sweeper' }]);
});

test('a job type written (one resumed may have jobs due behind every walk) wakes every poller partition', async () => {
  const { timers } = setUp();
  await wakeForWrittenEntries(queue().as('waker'), [{ kind: 'jobType' }], timers);
  expect(waker.requests).toHaveLength(2);
  expect(waker.requests).toEqual(
    expect.arrayContaining([
      { role: 'poller', shards: [0, 2] },
      { role: 'poller', shards: [1, 3] },
    ]),
  );
});

test('a schedule\'s next firing within a tick\'s reach arms a timer for the poller that fires schedules', async () => {
  const { timers } = setUp();
  await wakeForWrittenEntries(queue().as('waker'), [{ kind: 'schedule', dueAtMs: T0 + 40_000, partition: SCHEDULES_PARTITION }], timers);
  expect(timers.armed.map(({ timer }) => timer)).toEqual([{ role: 'poller', partition: 0, dueAtMs: T0 + 40_000, lanePartitions: [SCHEDULES_PARTITION] }]);
});

describe('an entry due later, within a tick\'s reach', () => {
  test('for a poller, arms a timer that comes back at least TIMER_LEAD_MS, and less than two seconds more, before it falls due, and wakes no one now', async () => {
    const { timers } = setUp();
    await wakeForWrittenEntries(queue().as('waker'), [queued(0, T0 + 30_500)], timers);
    expect(waker.requests).toEqual([]);
    expect(timers.armed).toHaveLength(1);
    const [{ timer, delayS }] = timers.armed as [{ timer: WakeTimer; delayS: number }];
    expect(timer).toEqual({ role: 'poller', partition: 0, dueAtMs: T0 + 30_500, lanePartitions: [queued(0, T0 + 30_500).partition] });
    expect(T0 + delayS * 1000).toBeLessThanOrEqual(T0 + 30_500 - TIMER_LEAD_MS);
    expect(T0 + delayS * 1000).toBeGreaterThan(T0 + 30_500 - TIMER_LEAD_MS - 2_000);
  });

  test('for the sweeper (a claim), arms a timer that comes back after the second the claim lapses in: the sweep it starts finds it lapsed', async () => {
    const { timers } = setUp();
    await wakeForWrittenEntries(queue().as('waker'), [claim(T0 + 1_500)], timers);
    expect(waker.requests).toEqual([]);
    const [{ timer, delayS }] = timers.armed as [{ timer: WakeTimer; delayS: number }];
    expect(timer).toMatchObject({ role: 'sweeper', dueAtMs: T0 + 1_500 });
    expect(T0 + delayS * 1000).toBeGreaterThanOrEqual(T0 + 2_000);
  });

  test('shares one timer with the entries of its function due in the same second, in this batch and the next, naming each partition', async () => {
    const { timers } = setUp();
    const ctx = queue().as('waker');
    await wakeForWrittenEntries(ctx, [queued(0, T0 + 20_100), queued(2, T0 + 20_900), queued(1, T0 + 20_500)], timers);
    await wakeForWrittenEntries(ctx, [queued(0, T0 + 20_200)], timers);
    expect(timers.armed.map(({ timer }) => [timer.role, timer.partition, timer.dueAtMs, timer.lanePartitions])).toEqual([
      ['poller', 0, T0 + 20_900, [queued(0, T0 + 20_100).partition, queued(2, T0 + 20_900).partition]],
      ['poller', 1, T0 + 20_500, [queued(1, T0 + 20_500).partition]],
    ]);
  });

  test('gets a timer of its own when due in a second already armed but in a partition that timer does not name: it checks only those it names', async () => {
    const { timers } = setUp();
    const ctx = queue().as('waker');
    await wakeForWrittenEntries(ctx, [queued(0, T0 + 40_100)], timers);
    await wakeForWrittenEntries(ctx, [queued(2, T0 + 40_700)], timers);
    expect(timers.armed.map(({ timer }) => timer.lanePartitions)).toEqual([[queued(0, T0 + 40_100).partition], [queued(2, T0 + 40_700).partition]]);
  });

  test('arms its timer again when the batch is delivered again after the send failed', async () => {
    const { timers } = setUp();
    const ctx = queue().as('waker');
    timers.failNext = true;
    await expect(wakeForWrittenEntries(ctx, [claim(T0 + 30_000)], timers)).rejects.toThrow('SQS refused');
    await wakeForWrittenEntries(ctx, [claim(T0 + 30_000)], timers);
    expect(timers.armed).toHaveLength(1);
  });
});

test('an entry due past a tick\'s cover wakes no one and arms nothing: the minute tick finds it', async () => {
  const { timers } = setUp();
  await wakeForWrittenEntries(queue().as('waker'), [queued(0, T0 + TICK_COVER_MS)], timers);
  expect(waker.requests).toEqual([]);
  expect(timers.armed).toEqual([]);
});

test('timers that come back without naming partitions wake each function they name once', async () => {
  setUp();
  await wakeForTimers(queue().as('waker'), [
    { role: 'sweeper', partition: 0, dueAtMs: T0 },
    { role: 'sweeper', partition: 0, dueAtMs: T0 + 500 },
    { role: 'poller', partition: 1, dueAtMs: T0 },
  ]);
  expect(waker.requests).toEqual(expect.arrayContaining([{ role: 'sweeper' }, { role: 'poller', shards: [1, 3] }]));
  expect(waker.requests).toHaveLength(2);
});

/** A job of type `a` due in a second, and its timer come back naming its lane partition; answers its poller partition. */
async function timerForJobDueIn1s(): Promise<number> {
  const { ctx, as } = queue();
  await enqueue(ctx, await defineType(ctx, 'a'), 'j1', { runAfterMs: T0 + 1_000 });
  const shard = shardOf('j1', ctx.settings.shards);
  const partition = lanePartition({ kind: 'queued', type: 'a' }, Math.floor((T0 + 1_000) / 60_000), shard);
  await wakeForTimers(as('waker'), [{ role: 'poller', partition: shard % 2, dueAtMs: T0 + 1_000, lanePartitions: [partition] }]);
  return shard % 2;
}

describe('a timer that comes back naming lane partitions', () => {
  test('wakes its poller while a job it names is still due there', async () => {
    setUp();
    await timerForJobDueIn1s();
    expect(waker.requests).toHaveLength(1);
  });

  test('wakes its poller for a job due later in the same second and partition than the one it was armed for', async () => {
    setUp();
    const { ctx, as } = queue();
    await enqueue(ctx, await defineType(ctx, 'a'), 'j1', { runAfterMs: T0 + 1_800 });
    const shard = shardOf('j1', ctx.settings.shards);
    const partition = lanePartition({ kind: 'queued', type: 'a' }, Math.floor((T0 + 1_800) / 60_000), shard);
    await wakeForTimers(as('waker'), [{ role: 'poller', partition: shard % 2, dueAtMs: T0 + 1_200, lanePartitions: [partition] }]);
    expect(waker.requests).toHaveLength(1);
  });

  test('wakes no one once what it names has left (claimed, ended, moved)', async () => {
    setUp();
    await wakeForTimers(queue().as('waker'), [{ role: 'sweeper', partition: 0, dueAtMs: T0, lanePartitions: [claim(T0).partition] }]);
    expect(waker.requests).toEqual([]);
  });

  test('reads nothing but the due index\'s partitions of due work: a name that is none is passed over', async () => {
    setUp();
    await wakeForTimers(queue().as('waker'), [{ role: 'sweeper', partition: 0, dueAtMs: T0, lanePartitions: ['KEYS'] }]);
    expect(waker.requests).toEqual([{ role: 'sweeper' }]);
  });
});

describe('lane holds: which types an awake poller polls between its polls of every lane', () => {
  const ofType = (type: string, shard: number, dueAtMs: number): WakingEntry => ({
    kind: 'lane',
    lane: { kind: 'queued', type },
    shard,
    dueAtMs,
    partition: lanePartition({ kind: 'queued', type }, Math.floor(dueAtMs / 60_000), shard),
  });

  test('an entry due soon holds its type\'s lanes on its poller partition as long as the hold itself', async () => {
    const { timers } = setUp();
    const { as, ctx } = queue();
    await wakeForWrittenEntries(as('waker'), [ofType('a', 0, T0), ofType('b', 2, T0 + 1_000)], timers);
    const state = await readWakeState(ctx, 'poller', 0);
    expect([...state.laneHoldsUntilMs.keys()].sort()).toEqual(['a', 'b']);
    expect(state.laneHoldsUntilMs.get('a')).toBe(state.holdUntilMs);
    expect((await readWakeState(ctx, 'poller', 1)).laneHoldsUntilMs.size).toBe(0);
  });

  test('a later entry of another type, due before the hold standing ends, still holds its own type\'s lanes', async () => {
    const { timers } = setUp();
    const { as, ctx } = queue();
    await wakeForWrittenEntries(as('waker'), [ofType('a', 0, T0 + 1_900)], timers);
    const before = await readWakeState(ctx, 'poller', 0);
    await wakeForWrittenEntries(as('waker'), [ofType('b', 0, T0)], timers);
    const after = await readWakeState(ctx, 'poller', 0);
    expect(after.holdUntilMs).toBe(before.holdUntilMs);
    expect(after.laneHoldsUntilMs.get('a')).toBe(before.holdUntilMs);
    expect(after.laneHoldsUntilMs.get('b')).toBeGreaterThanOrEqual(T0 + 2_000);
    expect(after.laneHoldsUntilMs.get('b')).toBeLessThan(before.holdUntilMs);
  });

  test('a type\'s lane hold is never lowered by an entry due before it', async () => {
    const { timers } = setUp();
    const { as, ctx } = queue();
    await wakeForWrittenEntries(as('waker'), [ofType('a', 0, T0 + 1_900)], timers);
    const held = (await readWakeState(ctx, 'poller', 0)).laneHoldsUntilMs.get('a');
    await wakeForWrittenEntries(as('waker'), [ofType('a', 2, T0)], timers);
    expect((await readWakeState(ctx, 'poller', 0)).laneHoldsUntilMs.get('a')).toBe(held);
  });

  test('a timer naming a type\'s lane partition holds that type\'s lanes when it wakes its poller', async () => {
    setUp();
    const pollerPartition = await timerForJobDueIn1s();
    expect([...(await readWakeState(queue().ctx, 'poller', pollerPartition)).laneHoldsUntilMs.keys()]).toEqual(['a']);
  });

  test('a timer naming no partition, and a job type written, hold every lane: the work they stand for may lie in any', async () => {
    setUp();
    const { ctx, as } = queue();
    await wakeForTimers(as('waker'), [{ role: 'poller', partition: 1, dueAtMs: T0 }]);
    await wakeForWrittenEntries(as('waker'), [{ kind: 'jobType' }], new RecordingTimers());
    expect([...(await readWakeState(ctx, 'poller', 1)).laneHoldsUntilMs.keys()]).toEqual([EVERY_LANE]);
    expect([...(await readWakeState(ctx, 'poller', 0)).laneHoldsUntilMs.keys()]).toEqual([EVERY_LANE]);
  });

  test('a schedule due soon holds no lane: the poller that fires schedules looks for them every second whatever it polls', async () => {
    const { timers } = setUp();
    const { as, ctx } = queue();
    await wakeForWrittenEntries(as('waker'), [{ kind: 'schedule', dueAtMs: T0, partition: SCHEDULES_PARTITION }], timers);
    const state = await readWakeState(ctx, 'poller', 0);
    expect(state.holdUntilMs).toBeGreaterThan(T0);
    expect(state.laneHoldsUntilMs.size).toBe(0);
  });
});
