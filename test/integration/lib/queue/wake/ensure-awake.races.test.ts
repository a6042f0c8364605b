/**
 * The waker's holds and type changes racing a holder of the wake item (lib/queue/wake/ensure-awake.ts,
 * lib/queue/wake/lease-keeper.ts): a hold whose answer went missing is judged from the wake item as the hold left it;
 * work due past a hold asked for gets a longer one, judged one after the other or side by side; a burst asks once;
 * a resumed type is held for whatever the lease; a holder that renews with a view of the types from before a
 * change leaves no walk the next tick trusts.
 */
import type { FinalizeHandler, FinalizeHandlerArguments, MetadataBearer } from '@smithy/types';
import { describe, expect, test } from 'vitest';
import { LEASE_MS, startAwake } from '../../../../../lib/queue/wake/lease-keeper.js';
import { setJobTypePaused } from '../../../../../lib/queue/catalog/job-types.js';
import { pollerWork, startPollerAwake, type PollerView } from '../../../../../lib/queue/wake/poller-stays.js';
import { INDEX_LAG_MS, ensureAwake } from '../../../../../lib/queue/wake/ensure-awake.js';
import { wakeForWrittenEntries } from '../../../../../lib/queue/wake/wake-on-write.js';
import { bucketOf, wakeKey } from '../../../../../lib/store/keys.js';
import { holdParams, readWakeState, stopLeaseParams, takeLeaseParams, writeWake } from '../../../../../lib/store/wake.js';
import { faultError } from '../../../../support/faults.js';
import { recordGetKeys } from '../../../../support/sdk-calls.js';
import { T0, defineType, enqueue, freshQueuePerTest, RecordingWaker } from '../../../../support/lib-fixtures.js';

const waker = new RecordingWaker();
const queue = freshQueuePerTest({ waker });

describe('a hold whose answer was lost', () => {
  test('wakes a poller when the holder stopped just before the hold landed', async () => {
    const { ctx, as, clientsOf } = queue();
    const key = wakeKey('poller', 0);
    await writeWake(ctx, takeLeaseParams(key, { ownerId: 'holder', awakeUntilMs: T0 + LEASE_MS, ownerEndsAtMs: T0 + 50_000 }));
    let lost = 0;
    clientsOf('waker').base.middlewareStack.addRelativeTo(
      (next: FinalizeHandler<object, MetadataBearer>) => async (args: FinalizeHandlerArguments<object>) => {
        if (lost > 0 || !JSON.stringify(args.input).includes('holdUntilMs = :hold')) return next(args);
        lost++;
        // The holder's look found nothing and it stopped just before the hold landed; the hold's answer is lost,
        // and the SDK's second try finds the hold already there.
        await writeWake(ctx, stopLeaseParams(key, 'holder', T0, undefined));
        await next(args);
        throw faultError('ConnectionResetAfterApply');
      },
      { relation: 'after', toMiddleware: 'retryMiddleware', name: 'stopThenLoseHoldAnswer' },
    );
    waker.requests.length = 0;
    await ensureAwake(as('waker'), 'poller', 0, { dueAtMs: T0 + 20_000 });
    expect(lost).toBe(1);
    expect(waker.requests).toEqual([{ role: 'poller', shards: [0, 1, 2, 3] }]);
  });
});

describe('work due past a hold already asked for', () => {
  /** The hold asked for work due at `dueAtMs`, judged by a timer. */
  const holdFor = (ctx: { settings: { pollIntervalMs: number } }, dueAtMs: number): number => dueAtMs + ctx.settings.pollIntervalMs + 250;

  test('gets a hold of its own, judged after the first', async () => {
    const { ctx, as } = queue();
    const wakerCtx = as('waker');
    await ensureAwake(wakerCtx, 'poller', 0, { dueAtMs: T0 });
    await ensureAwake(wakerCtx, 'poller', 0, { dueAtMs: T0 + 20_000 });
    expect((await readWakeState(ctx, 'poller', 0)).holdUntilMs).toBe(holdFor(ctx, T0 + 20_000));
  });

  test('gets a hold of its own, judged while the first was being asked', async () => {
    const { ctx, as } = queue();
    const wakerCtx = as('waker');
    await Promise.all([ensureAwake(wakerCtx, 'poller', 0, { dueAtMs: T0 }), ensureAwake(wakerCtx, 'poller', 0, { dueAtMs: T0 + 20_000 })]);
    expect((await readWakeState(ctx, 'poller', 0)).holdUntilMs).toBe(holdFor(ctx, T0 + 20_000));
  });
});

describe('a burst handed to the waker at once, after an idle spell', () => {
  test('asks one hold and wakes a poller once: the rest wait for the ask under way and find its hold', async () => {
    const { as, clientsOf } = queue();
    const writes = recordGetKeys(clientsOf('waker').base, 'UpdateItemCommand');
    waker.requests.length = 0;
    const wakerCtx = as('waker');
    await Promise.all(Array.from({ length: 12 }, () => ensureAwake(wakerCtx, 'poller', 0, { dueAtMs: T0, writtenAtMs: T0 })));
    expect(writes.filter((key) => key.includes('WAKE#'))).toHaveLength(1);
    expect(waker.requests).toHaveLength(1);
  });
});

describe('a wake that failed', () => {
  test('leaves no hold behind in the memo: the next work judged asks, and wakes, again', async () => {
    const { as } = queue();
    const wakes: string[] = [];
    const failingOnce = {
      wake: async () => {
        wakes.push(wakes.length === 0 ? 'refused' : 'started');
        if (wakes.length === 1) throw new Error('injected: TooManyRequestsException');
      },
    };
    const wakerCtx = { ...as('waker'), waker: failingOnce };
    await ensureAwake(wakerCtx, 'poller', 0, { dueAtMs: T0, writtenAtMs: T0 });
    await ensureAwake(wakerCtx, 'poller', 0, { dueAtMs: T0, writtenAtMs: T0 });
    expect(wakes).toEqual(['refused', 'started']);
  });
});

describe('a type resumed while a holder renews its lease', () => {
  test('gets a hold from the waker that reads it: the holder must not stop on a look at the types it listed before', async () => {
    const { ctx, as } = queue();
    await writeWake(ctx, takeLeaseParams(wakeKey('poller', 0), { ownerId: 'holder', awakeUntilMs: T0 + LEASE_MS, ownerEndsAtMs: T0 + 50_000 }));
    waker.requests.length = 0;
    await wakeForWrittenEntries(as('waker'), [{ kind: 'jobType' }], { arm: async () => undefined });
    expect((await readWakeState(ctx, 'poller', 0)).holdUntilMs).toBe(T0 + INDEX_LAG_MS);
    // The holder will outlast the hold: it lists the types again at its next renewal, and no other is woken.
    expect(waker.requests).toEqual([]);
  });
});

describe('a holder that renews with a view of the types from before one was resumed', () => {
  test('leaves the next tick looking from the cursors, so it finds the resumed type\'s jobs due behind the other walks', async () => {
    const { ctx, clock, as } = queue();
    const SHARDS = [0, 1, 2, 3];
    const active = await defineType(ctx, 'active');
    const resumed = await defineType(ctx, 'resumed');
    await enqueue(ctx, resumed, 'waiting');
    await setJobTypePaused(ctx, 'resumed', true);
    // Minutes later, the active type's walks stand far past the paused type's job.
    clock.advance(5 * 60_000);
    const pollerCtx = as('poller');
    const walkedBucket = bucketOf(clock.nowMs(), ctx.settings.bucketMs);
    await writeWake(ctx, holdParams(wakeKey('poller', 0), clock.nowMs() + INDEX_LAG_MS));
    const state = await readWakeState(ctx, 'poller', 0);
    const view: PollerView = { jobTypes: [active], cursors: new Map(SHARDS.map((shard) => [`active#${shard}`, walkedBucket])), typesChangedAtMs: state.typesChangedAtMs };
    const work = pollerWork(pollerCtx, { shards: SHARDS, firesSchedules: true, state, view: () => view });
    const endsAtMs = clock.nowMs() + LEASE_MS + 500;
    const start = await startAwake(pollerCtx, { role: 'poller', partition: 0, ownerId: 'holder', endsAtMs, kind: 'tick', work, state });
    if (!start.awake) throw new Error('expected to stay');
    // The type is resumed while the holder works, which outlasts the resume's hold: no other is woken.
    await setJobTypePaused(as('api'), 'resumed', false);
    // The holder renews before its loop lists the types again, and its invocation ends right after.
    clock.advance(LEASE_MS - 1_500);
    await start.keeper.afterRound(true);
    clock.advance(endsAtMs - clock.nowMs() + INDEX_LAG_MS);
    const tick = await startPollerAwake(as('poller'), { shards: SHARDS, endsAtMs: clock.nowMs() + 55_000, kind: 'tick' });
    expect(tick.stays).toBe(true);
  });
});
