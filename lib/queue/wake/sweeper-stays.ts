/**
 * What a sweeper invocation looks for before it stays or sleeps (queue/wake/lease-keeper.ts): a backstop sweep owed,
 * a bulk operation running, or the earliest claim to lapse, from where the claim lane's walks stand. Its lease is
 * kept from a timer of its own, since a sweep comes only every SWEEP_INTERVAL_MS.
 */
import { randomUUID } from 'node:crypto';
import { abortableSleep } from '../../domain/sleep.js';
import { readLaneCursor } from '../../store/due-index.js';
import { laneShards, wakeKey, type Lane } from '../../store/keys.js';
import { runningOperationIds } from '../../store/operations.js';
import { updateItem } from '../../store/send.js';
import { readWakeState, recordSweptParams, type Walked, type WakeState } from '../../store/wake.js';
import { RENEW_BELOW_MS, startAwake, type AwakeKeeper, type AwakeWork, type SleepReason } from './lease-keeper.js';
import type { StartKind } from '../../domain/invocations.js';
import type { QueueContext } from '../context.js';
import { earliestEntryDueAtMs, type LaneInReach } from './work-in-reach.js';

const CLAIMS: Lane = { kind: 'claims' };

/**
 * A sweeper wakes at least this often, idle or not, for one whole sweep: the backstop behind every cursor (an
 * entry a write left behind one, which no poller finds) and the concurrency counters (a slot a crash leaked),
 * neither of which waits for a claim or a bulk operation to wake it.
 */
export const BACKSTOP_SWEEP_EVERY_MS = 15 * 60_000;
/** While awake, a sweeper records its sweeps no more often than this. */
const SWEPT_RECORD_EVERY_MS = 60_000;

function sweeperWork(ctx: QueueContext, state: WakeState): AwakeWork {
  const shards = laneShards(ctx.settings, CLAIMS);
  let walked: Walked | undefined;
  /** Owed at the start only: the sweep the invocation then runs first pays it. */
  let backstopOwed = state.sweptAtMs + BACKSTOP_SWEEP_EVERY_MS <= ctx.nowMs();
  /** Where the last holder left the walks, for the first look; the cursors as they stand after. */
  let fromRecorded = state.walkedFromBucket;

  /** The claim lane from its cursors as they stand now; the first bucket of each never walked is `0`. */
  async function claimLane(): Promise<LaneInReach> {
    const recorded = fromRecorded;
    fromRecorded = undefined;
    const cursors = new Map<number, number>();
    if (recorded === undefined) {
      for (const shard of shards) cursors.set(shard, (await readLaneCursor(ctx, CLAIMS, shard)).bucket ?? 0);
      walked = { bucket: Math.min(...cursors.values()), typesChangedAtMs: state.typesChangedAtMs };
    }
    return { lane: CLAIMS, shards, fromBucketOf: (shard) => cursors.get(shard) ?? recorded ?? 0 };
  }

  return {
    async earliestDueAtMs(untilMs) {
      if (backstopOwed) {
        backstopOwed = false;
        return ctx.nowMs();
      }
      if ((await runningOperationIds(ctx)).length > 0) return ctx.nowMs();
      return earliestEntryDueAtMs(ctx, [await claimLane()], untilMs);
    },
    walkedFromBucket: () => walked,
  };
}

export type SweeperAwake =
  | { stays: false; reason: SleepReason }
  | {
      stays: true;
      /** Until when to go on sweeping: the invocation's end, or now once it gave its lease up. */
      untilMs: () => number;
      /** The last sweep or bulk page did some work. */
      markBusy: () => void;
      /** A whole sweep ended: the next backstop is due BACKSTOP_SWEEP_EVERY_MS from now. */
      swept: () => Promise<void>;
      /** Ends the lease's timer. */
      stop: () => Promise<void>;
      /** Why the wake item could not be read or written, when the invocation sweeps its whole run for that. */
      wakeItemError?: unknown;
    };

/** Renews and looks from a timer, about as often as a lease is renewed, until stopped or the lease ends. */
function keepFromTimer(ctx: QueueContext, keeper: AwakeKeeper, endsAtMs: number, sweptAtMs: number): Extract<SweeperAwake, { stays: true }> {
  const { nowMs } = ctx;
  let untilMs = endsAtMs;
  let recordedSweptAtMs = sweptAtMs;
  let busy = false;
  const stopped = new AbortController();
  const timer = (async () => {
    while (!stopped.signal.aborted && nowMs() < untilMs) {
      await abortableSleep(LEASE_RENEW_EVERY_MS, stopped.signal);
      if (stopped.signal.aborted) break;
      const wasBusy = busy;
      busy = false;
      try {
        untilMs = Math.min(untilMs, (await keeper.afterRound(wasBusy)).untilMs);
      } catch {
        // A failed renewal is tried again; the lease may lapse meanwhile, and the waker then wakes another sweeper.
      }
    }
  })();
  return {
    stays: true,
    untilMs: () => untilMs,
    markBusy: () => void (busy = true),
    swept: async () => {
      if (nowMs() - recordedSweptAtMs < SWEPT_RECORD_EVERY_MS) return;
      recordedSweptAtMs = nowMs();
      await updateItem(ctx, recordSweptParams(wakeKey('sweeper', 0), recordedSweptAtMs));
    },
    stop: async () => {
      stopped.abort();
      await timer;
    },
  };
}

const LEASE_RENEW_EVERY_MS = RENEW_BELOW_MS / 2;

/**
 * Whether a sweeper invocation stays, and its lease's timer when it does. When the wake item cannot be read or
 * written, the invocation sweeps its whole run, as every one did before sweepers slept.
 */
export async function startSweeperAwake(ctx: QueueContext, options: { endsAtMs: number; kind: StartKind }): Promise<SweeperAwake> {
  const { endsAtMs } = options;
  try {
    const state = await readWakeState(ctx, 'sweeper', 0);
    const work = sweeperWork(ctx, state);
    const start = await startAwake(ctx, {
      role: 'sweeper',
      partition: 0,
      ownerId: randomUUID(),
      endsAtMs,
      kind: options.kind,
      work,
      state,
      lookEveryMs: ctx.settings.sweepIntervalMs,
      // A sweep takes well under this: one woken for a backstop, with nothing else to do, ends soon after it.
      firstLookAfterMs: LEASE_RENEW_EVERY_MS,
    });
    return start.awake ? keepFromTimer(ctx, start.keeper, endsAtMs, state.sweptAtMs) : { stays: false, reason: start.reason };
  } catch (error) {
    return { stays: true, untilMs: () => endsAtMs, markBusy: () => undefined, swept: async () => undefined, stop: async () => undefined, wakeItemError: error };
  }
}
