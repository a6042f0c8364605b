/**
 * The waker (lib/queue/wake/wake-on-write.ts), as the stream hands it lane entries once written: due soon, the poller
 * of the entry's shard (or the sweeper, for a claim) is made sure of at once; due within a tick's reach, a timer is
 * armed, one per function and second; later, nothing. Timers that come back are made sure of at once.
 */
import { describe, expect, test } from 'vitest';
import type { WakeTimer, WakeTimers } from '../../../../../lib/domain/invocations.js';
import { TICK_COVER_MS } from '../../../../../lib/queue/wake/ensure-awake.js';
import { TIMER_LEAD_MS, WAKE_NOW_WITHIN_MS, wakeForTimers, wakeForWrittenEntries, type WrittenLaneEntry } from '../../../../../lib/queue/wake/wake-on-write.js';
import { readWakeState } from '../../../../../lib/store/wake.js';
import { T0, freshQueuePerTest, RecordingWaker } from '../../../../support/lib-fixtures.js';

class RecordingTimers implements WakeTimers {
  readonly armed: { timer: WakeTimer; delayS: number }[] = [];
  failNext = false;
  async arm(timers: readonly { timer: WakeTimer; delayS: number }[]): Promise<void> {
    if (this.failNext) {
      this.failNext = false;
      throw new Error('SQS refused the batch');
    }
    this.armed.push(...timers);
  }
}

const waker = new RecordingWaker();
const queue = freshQueuePerTest({ waker, settings: { shards: 4, pollerPartitions: 2 } });

const queued = (shard: number, dueAtMs: number): WrittenLaneEntry => ({ lane: { kind: 'queued', type: 'a' }, shard, dueAtMs });
const claim = (dueAtMs: number): WrittenLaneEntry => ({ lane: { kind: 'claims' }, shard: 0, dueAtMs });

function setUp(): { timers: RecordingTimers; waker: RecordingWaker } {
  waker.requests.length = 0;
  return { timers: new RecordingTimers(), waker };
}

describe('an entry due within WAKE_NOW_WITHIN_MS', () => {
  test('wakes the poller partition owning its shard, and arms no timer', async () => {
    const { timers } = setUp();
    await wakeForWrittenEntries(queue().as('waker'), [queued(3, T0 + WAKE_NOW_WITHIN_MS)], timers);
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

  test('of a claim wakes the sweeper', async () => {
    const { timers } = setUp();
    await wakeForWrittenEntries(queue().as('waker'), [claim(T0)], timers);
    expect(waker.requests).toEqual([{ role: 'sweeper' }]);
  });
});

describe('an entry due later, within a tick\'s reach', () => {
  test('arms a timer that comes back TIMER_LEAD_MS or a little more before it falls due, and wakes no one now', async () => {
    const { timers } = setUp();
    await wakeForWrittenEntries(queue().as('waker'), [claim(T0 + 30_000)], timers);
    expect(waker.requests).toEqual([]);
    expect(timers.armed).toHaveLength(1);
    const [{ timer, delayS }] = timers.armed as [{ timer: WakeTimer; delayS: number }];
    expect(timer).toMatchObject({ role: 'sweeper', partition: 0 });
    expect(timer.dueAtMs).toBeGreaterThanOrEqual(T0 + 30_000);
    expect(T0 + delayS * 1000).toBeLessThanOrEqual(T0 + 30_000 - TIMER_LEAD_MS);
    expect(T0 + delayS * 1000).toBeGreaterThan(T0 + 30_000 - TIMER_LEAD_MS - 2_000);
  });

  test('shares one timer with the entries of its function due in the same second, in this batch and the next', async () => {
    const { timers } = setUp();
    const ctx = queue().as('waker');
    await wakeForWrittenEntries(ctx, [queued(0, T0 + 20_100), queued(2, T0 + 20_900), queued(1, T0 + 20_500)], timers);
    await wakeForWrittenEntries(ctx, [queued(0, T0 + 20_200)], timers);
    expect(timers.armed.map(({ timer }) => [timer.role, timer.partition])).toEqual([
      ['poller', 0],
      ['poller', 1],
    ]);
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

test('timers that come back wake each function they name once', async () => {
  setUp();
  await wakeForTimers(queue().as('waker'), [
    { role: 'sweeper', partition: 0, dueAtMs: T0 },
    { role: 'sweeper', partition: 0, dueAtMs: T0 + 500 },
    { role: 'poller', partition: 1, dueAtMs: T0 },
  ]);
  expect(waker.requests).toEqual(expect.arrayContaining([{ role: 'sweeper' }, { role: 'poller', shards: [1, 3] }]));
  expect(waker.requests).toHaveLength(2);
});
