/**
 * What a sweeper invocation looks for before it stays or sleeps (queue/awake.ts): a bulk operation running, or a
 * claim lapsing within reach (a recorded bucket of the claim lane, from where its walks stand; closely, an entry
 * in one). Its lease is kept from a timer of its own, since a sweep comes only every SWEEP_INTERVAL_MS.
 */
import { randomUUID } from 'node:crypto';
import { abortableSleep } from '../domain/sleep.js';
import { readLaneCursor } from '../store/due-index.js';
import type { Lane } from '../store/keys.js';
import { runningOperationIds } from '../store/operations.js';
import { readWakeState, type Walked, type WakeState } from '../store/wake.js';
import { RENEW_BELOW_MS, startAwake, type AwakeKeeper, type AwakeWork, type StartKind } from './awake.js';
import type { QueueContext } from './context.js';
import { anyEntryDueBy, anyLaneRecordedBy, type LaneInReach } from './reach.js';

const CLAIMS: Lane = { kind: 'claims' };

function sweeperWork(ctx: QueueContext, state: WakeState): AwakeWork {
  const shards = Array.from({ length: ctx.settings.shards }, (_, shard) => shard);
  let walked: Walked | undefined;

  /** The claim lane from its cursors as they stand now; the first bucket of each never walked is `0`. */
  async function claimLane(fromRecorded: number | undefined): Promise<LaneInReach> {
    const cursors = new Map<number, number>();
    if (fromRecorded === undefined) {
      for (const shard of shards) cursors.set(shard, (await readLaneCursor(ctx, CLAIMS, shard)).bucket ?? 0);
      walked = { bucket: Math.min(...cursors.values()), typesChangedAtMs: state.typesChangedAtMs };
    }
    return { lane: CLAIMS, shards, fromBucketOf: (shard) => cursors.get(shard) ?? fromRecorded ?? 0 };
  }

  return {
    async inReach(untilMs, how) {
      if ((await runningOperationIds(ctx)).length > 0) return true;
      if (how === 'coarse') return anyLaneRecordedBy(ctx, [await claimLane(state.walkedFromBucket)], untilMs);
      return anyEntryDueBy(ctx, [await claimLane(undefined)], untilMs);
    },
    walkedFromBucket: () => walked,
  };
}

export type SweeperAwake =
  | { stays: false; reason: 'covered' | 'idle' }
  | {
      stays: true;
      /** Until when to go on sweeping: the invocation's end, or the lease's once nothing is in reach. */
      untilMs: () => number;
      /** The last sweep or bulk page did some work. */
      markBusy: () => void;
      /** Ends the lease's timer. */
      stop: () => Promise<void>;
    };

/** Renews and looks from a timer, about as often as a lease is renewed, until stopped or the lease ends. */
function keepFromTimer(keeper: AwakeKeeper, endsAtMs: number, nowMs: () => number): Extract<SweeperAwake, { stays: true }> {
  let untilMs = endsAtMs;
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
        // A failed renewal is tried again; the lease may lapse meanwhile, and writers then wake another sweeper.
      }
    }
  })();
  return {
    stays: true,
    untilMs: () => untilMs,
    markBusy: () => void (busy = true),
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
  const always: SweeperAwake = { stays: true, untilMs: () => endsAtMs, markBusy: () => undefined, stop: async () => undefined };
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
    });
    return start.awake ? keepFromTimer(start.keeper, endsAtMs, ctx.nowMs) : { stays: false, reason: start.reason };
  } catch {
    return always;
  }
}
