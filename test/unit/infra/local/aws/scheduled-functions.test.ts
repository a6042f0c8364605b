/** How the local runtime starts the poller and the sweeper: minute ticks as the stack's rules, and wakes (infra/local/aws/scheduled-functions.ts). */
import { afterEach, beforeEach, describe, expect, test, vi } from 'vitest';
import { createScheduledFunctions, startMinuteTicks, tickEventsOf, TICK_PERIOD_MS, type ScheduledFunction } from '../../../../../infra/local/aws/scheduled-functions.js';
import type { LocalIam } from '../../../../../infra/local/aws/iam/local-iam.js';
import { ConfigError } from '../../../../../lib/domain/errors.js';

describe('the events of a tick', () => {
  test("one poller event per partition with the shards its rule passes, and one sweeper event, as the stack's rules send", () => {
    expect(tickEventsOf({ pollerPartitions: 3, shards: 8 })).toEqual({ poller: [{ shards: [0, 3, 6] }, { shards: [1, 4, 7] }, { shards: [2, 5] }], sweeper: [{}] });
  });

  test('with one partition the poller polls every shard', () => {
    expect(tickEventsOf({ pollerPartitions: 1, shards: 4 }).poller).toEqual([{ shards: [0, 1, 2, 3] }]);
  });

  test('more partitions than shards are refused, naming both settings, as the stack refuses them', () => {
    expect(() => tickEventsOf({ pollerPartitions: 5, shards: 4 })).toThrow(ConfigError);
    expect(() => tickEventsOf({ pollerPartitions: 5, shards: 4 })).toThrow(/POLLER_PARTITIONS must be at most SHARDS \(4\).*got "5"/);
  });
});

describe('minute ticks', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  test("the period is EventBridge's rate(1 minute)", () => {
    expect(TICK_PERIOD_MS).toBe(60_000);
  });

  test('the first tick comes at start, the next a minute later, and none after stop', async () => {
    const tick = vi.fn();
    const ticks = startMinuteTicks(tick);
    expect(tick).toHaveBeenCalledTimes(1);
    await vi.advanceTimersByTimeAsync(59_999);
    expect(tick).toHaveBeenCalledTimes(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(tick).toHaveBeenCalledTimes(2);
    ticks.stop();
    await vi.advanceTimersByTimeAsync(10 * 60_000);
    expect(tick).toHaveBeenCalledTimes(2);
  });
});

describe('the poller and the sweeper, ticked and woken', () => {
  /** Invocations that run until the test ends them, each recorded with its function and event. */
  function scheduledWith(settings = { pollerPartitions: 2, shards: 4 }, reservedConcurrency: Partial<Record<ScheduledFunction, number>> = {}) {
    const invocations: { fn: ScheduledFunction; event: unknown; end: () => void }[] = [];
    const inFlight = new Set<Promise<unknown>>();
    const stop = new AbortController();
    const passThroughIam: Pick<LocalIam, 'wakerFor'> = { wakerFor: (_fn, waker) => waker };
    const scheduled = createScheduledFunctions({ settings, iam: passThroughIam, inFlight, signal: stop.signal, reservedConcurrency }, (fn, event) =>
      new Promise<void>((resolve) => invocations.push({ fn, event, end: resolve })),
    );
    return { scheduled, invocations, inFlight, stop };
  }

  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  test('a tick starts a poller invocation per partition with its shards, and a sweeper invocation', async () => {
    const { scheduled, invocations } = scheduledWith();
    scheduled.startTicks();
    await vi.advanceTimersByTimeAsync(0);
    expect(invocations.map(({ fn, event }) => ({ fn, event }))).toEqual([
      { fn: 'poller', event: { shards: [0, 2] } },
      { fn: 'poller', event: { shards: [1, 3] } },
      { fn: 'sweeper', event: {} },
    ]);
  });

  test("the next minute's tick starts its invocations while the last minute's still run, as EventBridge does", async () => {
    const { scheduled, invocations } = scheduledWith();
    scheduled.startTicks();
    await vi.advanceTimersByTimeAsync(TICK_PERIOD_MS);
    expect(invocations.map(({ fn }) => fn)).toEqual(['poller', 'poller', 'sweeper', 'poller', 'poller', 'sweeper']);
  });

  test('a wake starts an invocation at once with the wake event, and resolves while that invocation still runs', async () => {
    const { scheduled, invocations } = scheduledWith();
    // The invocations here never end unless the test ends them: a wake waiting for its invocation would never resolve.
    await scheduled.wakerFor('api').wake({ role: 'poller', shards: [1, 3] });
    await vi.advanceTimersByTimeAsync(0);
    expect(invocations.map(({ fn, event }) => ({ fn, event }))).toEqual([{ fn: 'poller', event: { wake: true, shards: [1, 3] } }]);
    await scheduled.wakerFor('waker').wake({ role: 'sweeper' });
    await vi.advanceTimersByTimeAsync(0);
    expect(invocations.map(({ fn, event }) => ({ fn, event }))[1]).toEqual({ fn: 'sweeper', event: { wake: true } });
  });

  test('beyond the executions the stack reserves a start waits, and runs once one ends', async () => {
    const { scheduled, invocations } = scheduledWith({ pollerPartitions: 1, shards: 4 }, { poller: 2, sweeper: 2 });
    const waker = scheduled.wakerFor('sweeper');
    for (let i = 0; i < 3; i++) await waker.wake({ role: 'sweeper' });
    await vi.advanceTimersByTimeAsync(5_000);
    expect(invocations).toHaveLength(2);
    invocations[0]!.end();
    await vi.advanceTimersByTimeAsync(5_000);
    expect(invocations).toHaveLength(3);
  });

  test('a function the stack reserves no executions for runs every start at once, as Lambda does within the account', async () => {
    const { scheduled, invocations } = scheduledWith({ pollerPartitions: 1, shards: 4 }, { poller: 2 });
    const waker = scheduled.wakerFor('sweeper');
    for (let i = 0; i < 3; i++) await waker.wake({ role: 'sweeper' });
    await vi.advanceTimersByTimeAsync(0);
    expect(invocations).toHaveLength(3);
  });

  test('each wake is checked against the role of the function that wakes', async () => {
    const { inFlight, stop } = scheduledWith();
    const checked: string[] = [];
    const recordingIam: Pick<LocalIam, 'wakerFor'> = {
      wakerFor: (fn, waker) => ({ wake: async (request) => (checked.push(`${fn} wakes the ${request.role}`), waker.wake(request)) }),
    };
    const scheduled = createScheduledFunctions({ settings: { pollerPartitions: 1, shards: 1 }, iam: recordingIam, inFlight, signal: stop.signal, reservedConcurrency: {} }, async () => undefined);
    await scheduled.wakerFor('waker').wake({ role: 'poller', shards: [0] });
    expect(checked).toEqual(['waker wakes the poller']);
  });
});
