/**
 * Writers and type changes racing a holder of the wake item (lib/queue/wake/ensure-awake.ts, lib/queue/wake/lease-keeper.ts): a writer
 * whose hold's answer went missing decides from the wake item as its hold left it, never from an older read; a
 * writer left to another's ask within the window is held for; a lease its holder will not renew covers nothing;
 * a resumed type is held for whatever the lease; a holder that renews with a view of the types from before a
 * change leaves no walk the next tick trusts.
 */
import type { FinalizeHandler, FinalizeHandlerArguments, MetadataBearer } from '@smithy/types';
import { describe, expect, test } from 'vitest';
import { LEASE_MS, startAwake } from '../../../../../lib/queue/wake/lease-keeper.js';
import { setJobTypePaused } from '../../../../../lib/queue/catalog/job-types.js';
import { pollerWork, startPollerAwake, type PollerView } from '../../../../../lib/queue/wake/poller-stays.js';
import { HOLD_MS, ensureAwake } from '../../../../../lib/queue/wake/ensure-awake.js';
import { bucketOf, wakeKey } from '../../../../../lib/store/keys.js';
import { holdParams, readWakeState, stopLeaseParams, takeLeaseParams, writeWake } from '../../../../../lib/store/wake.js';
import { faultError } from '../../../../support/faults.js';
import { recordGetKeys } from '../../../../support/sdk-calls.js';
import { T0, defineType, enqueue, freshQueuePerTest, RecordingWaker } from '../../../../support/lib-fixtures.js';

const waker = new RecordingWaker();
const queue = freshQueuePerTest({ waker });

describe('a writer whose hold landed but whose answer was lost', () => {
  test('wakes a poller when the holder stopped between its read and its hold', async () => {
    const { ctx, as, clientsOf } = queue();
    const key = wakeKey('poller', 0);
    await writeWake(ctx, takeLeaseParams(key, { ownerId: 'holder', awakeUntilMs: T0 + LEASE_MS, ownerEndsAtMs: T0 + 50_000 }));
    const jobType = await defineType(ctx, 'raced');
    let lost = 0;
    clientsOf('api').base.middlewareStack.addRelativeTo(
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
    await enqueue(as('api'), jobType, 'j1', { runAfterMs: T0 + 20_000 });
    expect(lost).toBe(1);
    expect(waker.requests).toEqual([{ role: 'poller', shards: [0, 1, 2, 3] }]);
  });
});

describe('a writer within the wake window of one the lease covered', () => {
  const leaseTo = async (ctx: Parameters<typeof writeWake>[0]) =>
    writeWake(ctx, takeLeaseParams(wakeKey('poller', 0), { ownerId: 'holder', awakeUntilMs: T0 + LEASE_MS, ownerEndsAtMs: T0 + 50_000 }));

  test('asks for a hold for its entry due past the lease, after a writer whose entry the lease covered', async () => {
    const { ctx, as } = queue();
    await leaseTo(ctx);
    const api = as('api');
    await ensureAwake(api, 'poller', 0, T0);
    await ensureAwake(api, 'poller', 0, T0 + 20_000);
    expect((await readWakeState(ctx, 'poller', 0)).holdUntilMs).toBe(T0 + HOLD_MS);
  });

  test('has its entry due past the lease held for by the writer it left the window to, while that one was reading', async () => {
    const { ctx, as } = queue();
    await leaseTo(ctx);
    const api = as('api');
    await Promise.all([ensureAwake(api, 'poller', 0, T0), ensureAwake(api, 'poller', 0, T0 + 20_000)]);
    expect((await readWakeState(ctx, 'poller', 0)).holdUntilMs).toBe(T0 + HOLD_MS);
  });
});

describe('a writer of a job due now while the holder will not renew its lease', () => {
  test('wakes a poller, though the lease outlasts the job: the lease ends at its last poll, and the job may land after it', async () => {
    const { ctx, as } = queue();
    const key = wakeKey('poller', 0);
    await writeWake(ctx, takeLeaseParams(key, { ownerId: 'holder', awakeUntilMs: T0 + LEASE_MS, ownerEndsAtMs: T0 + 50_000 }));
    await writeWake(ctx, stopLeaseParams(key, 'holder', T0, undefined));
    const jobType = await defineType(ctx, 'due-now');
    waker.requests.length = 0;
    await enqueue(as('api'), jobType, 'j1');
    expect(waker.requests).toEqual([{ role: 'poller', shards: [0, 1, 2, 3] }]);
  });
});

describe('a writer whose entry a renewing lease covered when it checked', () => {
  const slowWrite = (clientsOf: ReturnType<typeof queue>['clientsOf'], whileWriting: () => Promise<void>) =>
    clientsOf('api').base.middlewareStack.addRelativeTo(
      (next: FinalizeHandler<object, MetadataBearer>) => async (args: FinalizeHandlerArguments<object>) => {
        if (!('Item' in args.input) || !JSON.stringify(args.input).includes('JOB#')) return next(args);
        await whileWriting();
        return next(args);
      },
      { relation: 'after', toMiddleware: 'retryMiddleware', name: 'slowJobWrite' },
    );

  test('wakes a poller when its write landed after the lease it relied on ended: the holder stopped meanwhile', async () => {
    const { ctx, clock, as, clientsOf } = queue();
    const key = wakeKey('poller', 0);
    await writeWake(ctx, takeLeaseParams(key, { ownerId: 'holder', awakeUntilMs: T0 + LEASE_MS, ownerEndsAtMs: T0 + 50_000 }));
    const jobType = await defineType(ctx, 'slow-write');
    slowWrite(clientsOf, async () => {
      // The holder's last looks found nothing, it stopped renewing, and its lease ran out before the write landed.
      await writeWake(ctx, stopLeaseParams(key, 'holder', clock.nowMs(), undefined));
      clock.advance(LEASE_MS);
    });
    waker.requests.length = 0;
    await enqueue(as('api'), jobType, 'j1');
    expect(waker.requests).toEqual([{ role: 'poller', shards: [0, 1, 2, 3] }]);
    expect((await readWakeState(ctx, 'poller', 0)).holdUntilMs).toBe(T0 + LEASE_MS + HOLD_MS);
  });

  test('asks nothing when its write landed while the lease still outlasts the entry', async () => {
    const { ctx, clock, as, clientsOf } = queue();
    await writeWake(ctx, takeLeaseParams(wakeKey('poller', 0), { ownerId: 'holder', awakeUntilMs: T0 + LEASE_MS, ownerEndsAtMs: T0 + 50_000 }));
    const jobType = await defineType(ctx, 'quick-write');
    slowWrite(clientsOf, async () => clock.advance(100));
    waker.requests.length = 0;
    await enqueue(as('api'), jobType, 'j1');
    expect(waker.requests).toEqual([]);
    expect((await readWakeState(ctx, 'poller', 0)).holdUntilMs).toBe(0);
  });
});

describe('writers of a burst in one process', () => {
  const BURST = 12;
  const wakeReads = (keys: string[]) => keys.filter((key) => key.includes('WAKE#')).length;

  test('after an idle spell, read the wake item and wake a poller once: those within the window wait for the ask under way', async () => {
    const { ctx, as, clientsOf } = queue();
    const jobType = await defineType(ctx, 'burst');
    const reads = recordGetKeys(clientsOf('api').base);
    waker.requests.length = 0;
    await Promise.all(Array.from({ length: BURST }, (_, at) => enqueue(as('api'), jobType, `j${at}`)));
    expect(wakeReads(reads)).toBe(1);
    expect(waker.requests).toHaveLength(1);
  });

  test('whose writes all outlasted the lease they relied on, ask again about once between them', async () => {
    const { ctx, clock, as, clientsOf } = queue();
    const key = wakeKey('poller', 0);
    await writeWake(ctx, takeLeaseParams(key, { ownerId: 'holder', awakeUntilMs: T0 + LEASE_MS, ownerEndsAtMs: T0 + 50_000 }));
    const jobType = await defineType(ctx, 'brownout');
    let landed: Promise<void> | undefined;
    clientsOf('api').base.middlewareStack.addRelativeTo(
      (next: FinalizeHandler<object, MetadataBearer>) => async (args: FinalizeHandlerArguments<object>) => {
        if (!('Item' in args.input) || !JSON.stringify(args.input).includes('JOB#')) return next(args);
        // Every write waits out the same brownout, in which the holder stops and its lease runs out.
        landed ??= (async () => {
          await writeWake(ctx, stopLeaseParams(key, 'holder', clock.nowMs(), undefined));
          clock.advance(LEASE_MS);
        })();
        await landed;
        return next(args);
      },
      { relation: 'after', toMiddleware: 'retryMiddleware', name: 'brownout' },
    );
    const reads = recordGetKeys(clientsOf('api').base);
    waker.requests.length = 0;
    await Promise.all(Array.from({ length: BURST }, (_, at) => enqueue(as('api'), jobType, `j${at}`)));
    expect(wakeReads(reads)).toBe(2);
    expect(waker.requests).toHaveLength(1);
  });
});

describe('a type resumed while a holder renews its lease', () => {
  test('asks for a hold though the lease outlasts the jobs due now: the holder must not stop on a look at the types it listed before', async () => {
    const { ctx, as } = queue();
    await defineType(ctx, 'resumed');
    await setJobTypePaused(ctx, 'resumed', true);
    await writeWake(ctx, takeLeaseParams(wakeKey('poller', 0), { ownerId: 'holder', awakeUntilMs: T0 + LEASE_MS, ownerEndsAtMs: T0 + 50_000 }));
    waker.requests.length = 0;
    await setJobTypePaused(as('api'), 'resumed', false);
    expect((await readWakeState(ctx, 'poller', 0)).holdUntilMs).toBe(T0 + HOLD_MS);
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
    await writeWake(ctx, holdParams(wakeKey('poller', 0), clock.nowMs() + HOLD_MS));
    const state = await readWakeState(ctx, 'poller', 0);
    const view: PollerView = { jobTypes: [active], cursors: new Map(SHARDS.map((shard) => [`active#${shard}`, walkedBucket])), typesChangedAtMs: state.typesChangedAtMs };
    const work = pollerWork(pollerCtx, { shards: SHARDS, firesSchedules: true, state, view: () => view });
    const endsAtMs = clock.nowMs() + LEASE_MS + 500;
    const start = await startAwake(pollerCtx, { role: 'poller', partition: 0, ownerId: 'holder', endsAtMs, kind: 'tick', work, state });
    if (!start.awake) throw new Error('expected to stay');
    // The type is resumed while the holder works; its lease covers the resume's wake.
    await setJobTypePaused(as('api'), 'resumed', false);
    // The holder renews before its loop lists the types again, and its invocation ends right after.
    clock.advance(LEASE_MS - 1_500);
    await start.keeper.afterRound(true);
    clock.advance(endsAtMs - clock.nowMs() + HOLD_MS);
    const tick = await startPollerAwake(as('poller'), { shards: SHARDS, endsAtMs: clock.nowMs() + 55_000, kind: 'tick' });
    expect(tick.stays).toBe(true);
  });
});
