/**
 * Sleeping pollers and sweepers. A minute tick (or a wake, queue/wake/ensure-awake.ts) starts an invocation; it stays only
 * when something is in reach: work due before the next tick could see it, or a hold the waker asked for. Awake, it
 * holds a short lease on its wake item, renewed while it stays: the waker reads the lease to know whether someone will find
 * their entry in time. Once nothing has happened for a while it looks again, and when nothing is in reach it
 * says it will not renew (refused if a hold was asked for since the look began), works on until the lease
 * runs out, and ends. The minute tick finds out in a few reads whether anything falls due before the next one.
 */
import { wakeKey, type WakeRole } from '../../store/keys.js';
import { readWakeState, recordWalkedParams, renewLeaseParams, stopLeaseParams, takeLeaseParams, writeWake, type Walked, type WakeState } from '../../store/wake.js';
import type { QueueContext } from '../context.js';
import { wakeRequestFor } from './wake-requests.js';
import { type StartKind } from '../../domain/invocations.js';

/** How long a lease promises work; renewed once less than RENEW_BELOW_MS of it is left, so about every second. */
export const LEASE_MS = 3_000;
export const RENEW_BELOW_MS = 2_000;
/** No work for this long, and the holder looks whether anything is in reach; again this often while something is. */
export const IDLE_BEFORE_LOOK_MS = 2_000;
/**
 * A holder stops only on two looks this far apart that both found nothing in reach: an entry its lease covered
 * gets no hold, and the index may not show it yet when the first look reads it.
 */
export const SETTLE_MS = 2_000;
/**
 * Between renewals the holder reads its wake item this often (after a round of work), so a job type made while it
 * is awake is polled within about a poll interval: a lease covers the new type's first job, so no wake comes for it.
 */
export const TYPES_CHECK_MS = 250;
/**
 * This long before its invocation ends, a holder with work still in reach wakes its successor, which takes the
 * lease over: the next tick may be seconds away (runs end before the minute does), and jobs due meanwhile would
 * wait for it.
 */
export const HANDOVER_MS = 1_500;
/**
 * How far ahead a look reaches: past the next minute tick (60 s, plus up to 10 s of EventBridge's delay, see
 * wake.ts's TICK_COVER_MS) and the lease, so whatever falls due before a later tick sees it is claimed on time.
 */
export const REACH_MS = 90_000;


/** What an invocation of a role looks for: coarsely at a tick (the directory), closely before it sleeps (the index). */
export interface AwakeWork {
  inReach(untilMs: number, how: 'coarse' | 'close'): Promise<boolean>;
  /**
   * Where every lane's walk stands, for the next tick to look from, with when types had last changed as the lanes
   * walked were listed (a later change makes it unknown); undefined when not known.
   */
  walkedFromBucket(): Walked | undefined;
}

export interface AwakeRound {
  /** Until when to keep working: the invocation's end, or the lease's once the holder stops renewing. */
  untilMs: number;
  /** When job types last changed, as the wake item says. */
  typesChangedAtMs: number;
}

export interface AwakeKeeper {
  /** After each round of work (`busy` when it did some): renews, looks and stops as due. */
  afterRound(busy: boolean): Promise<AwakeRound>;
  /**
   * While the loop waits between rounds: when job types last changed, read again once TYPES_CHECK_MS has passed
   * since the last read, so a type made meanwhile is polled without waiting out the poll interval.
   */
  typesChangedAtMs(): Promise<number>;
  readonly stopping: boolean;
}

export type AwakeStart = { awake: false; reason: 'covered' | 'idle'; state: WakeState } | { awake: true; keeper: AwakeKeeper; state: WakeState };

const isLive = (state: WakeState, nowMs: number): boolean => state.ownerId !== undefined && state.awakeUntilMs > nowMs;

/**
 * Another holder will still be working when this invocation could add nothing: a wake's holder stays past the
 * hold that asked for the wake; a tick's, past the next tick, which will look again.
 */
function coveredBy(state: WakeState, kind: StartKind, nowMs: number): boolean {
  if (!isLive(state, nowMs) || state.stopping) return false;
  const neededUntilMs = kind === 'wake' ? Math.max(state.holdUntilMs, nowMs) + RENEW_BELOW_MS : nowMs + REACH_MS;
  return state.ownerEndsAtMs >= neededUntilMs;
}

export interface AwakeOptions {
  role: WakeRole;
  partition: number;
  /** This invocation, unique. */
  ownerId: string;
  /** When the invocation must end: no lease reaches past it. */
  endsAtMs: number;
  kind: StartKind;
  work: AwakeWork;
  /** The wake item as read at the invocation's start (readWakeState). */
  state: WakeState;
  /** No work for this long, and the holder looks whether anything is in reach; again this often. @default IDLE_BEFORE_LOOK_MS */
  lookEveryMs?: number;
  /** The first look, this long after the start unless work came first. @default lookEveryMs */
  firstLookAfterMs?: number;
}

/** Decides whether an invocation stays, and takes the lease when it does. */
export async function startAwake(ctx: QueueContext, options: AwakeOptions): Promise<AwakeStart> {
  const { role, partition, ownerId, endsAtMs, kind, work, state } = options;
  const nowMs = ctx.nowMs();
  if (coveredBy(state, kind, nowMs)) return { awake: false, reason: 'covered', state };
  const wanted = state.holdUntilMs > nowMs || (await work.inReach(nowMs + REACH_MS, 'coarse'));
  const key = wakeKey(role, partition);
  if (!wanted) {
    const walked = work.walkedFromBucket();
    // Read from the cursors this time: the next ticks read it here.
    if (state.walkedFromBucket === undefined && walked !== undefined) await writeWake(ctx, recordWalkedParams(key, walked));
    return { awake: false, reason: 'idle', state };
  }
  const taken = await writeWake(ctx, takeLeaseParams(key, { ownerId, awakeUntilMs: Math.min(ctx.nowMs() + LEASE_MS, endsAtMs), ownerEndsAtMs: endsAtMs }));
  const held = taken.state ?? state;
  return { awake: true, keeper: createKeeper(ctx, options, held), state: held };
}

function createKeeper(ctx: QueueContext, options: AwakeOptions, taken: WakeState): AwakeKeeper {
  const { ownerId, endsAtMs, work } = options;
  const lookEveryMs = options.lookEveryMs ?? IDLE_BEFORE_LOOK_MS;
  const key = wakeKey(options.role, options.partition);
  let leaseUntilMs = taken.awakeUntilMs;
  let typesChangedAtMs = taken.typesChangedAtMs;
  let stopping = false;
  let nextLookAtMs = ctx.nowMs() + (options.firstLookAfterMs ?? lookEveryMs);
  /** When a look first found nothing in reach, since the last work; undefined while work goes on. */
  let quietSinceMs: number | undefined;
  let lastReadAtMs = ctx.nowMs();
  let handedOver = false;
  const round = (): AwakeRound => ({ untilMs: stopping ? leaseUntilMs : endsAtMs, typesChangedAtMs });

  /** Nothing in reach on a look begun after every hold asked for: stops renewing, unless a hold came since. */
  async function lookAndMaybeStop(): Promise<void> {
    const lookedAtMs = ctx.nowMs();
    nextLookAtMs = lookedAtMs + lookEveryMs;
    const state = await readWakeState(ctx, options.role, options.partition);
    lastReadAtMs = lookedAtMs;
    typesChangedAtMs = state.typesChangedAtMs;
    if (state.ownerId !== ownerId) {
      stopping = true;
      return;
    }
    // A hold is kept whatever is in reach: the next look comes as it ends.
    if (state.holdUntilMs > lookedAtMs) {
      nextLookAtMs = state.holdUntilMs;
      return;
    }
    if (await work.inReach(lookedAtMs + REACH_MS, 'close')) {
      quietSinceMs = undefined;
      return;
    }
    if (quietSinceMs === undefined || lookedAtMs - quietSinceMs < SETTLE_MS) {
      quietSinceMs ??= lookedAtMs;
      nextLookAtMs = quietSinceMs + SETTLE_MS;
      return;
    }
    const stopped = await writeWake(ctx, stopLeaseParams(key, ownerId, lookedAtMs, work.walkedFromBucket()));
    if (stopped.ok) stopping = true;
    // Refused: a hold was asked for since the look began, and the next look comes as it ends.
    else nextLookAtMs = lookedAtMs;
  }

  async function renew(): Promise<void> {
    const awakeUntilMs = Math.min(ctx.nowMs() + LEASE_MS, endsAtMs);
    const renewed = await writeWake(ctx, renewLeaseParams(key, { ownerId, awakeUntilMs }, work.walkedFromBucket()));
    if (!renewed.ok || !renewed.state) {
      // Another invocation took the lease: it works on, and this one ends once its own promise is kept.
      stopping = true;
      return;
    }
    leaseUntilMs = awakeUntilMs;
    lastReadAtMs = ctx.nowMs();
    typesChangedAtMs = renewed.state.typesChangedAtMs;
  }

  /** Still awake at its end, the holder starts its successor; a wake that fails leaves the gap to the next tick. */
  async function handOver(): Promise<void> {
    handedOver = true;
    await ctx.waker?.wake(wakeRequestFor(ctx.settings, options.role, options.partition)).catch(() => undefined);
  }

  async function readTypesChanged(): Promise<void> {
    lastReadAtMs = ctx.nowMs();
    typesChangedAtMs = (await readWakeState(ctx, options.role, options.partition)).typesChangedAtMs;
  }

  return {
    get stopping() {
      return stopping;
    },
    async typesChangedAtMs(): Promise<number> {
      if (ctx.nowMs() - lastReadAtMs >= TYPES_CHECK_MS) await readTypesChanged();
      return typesChangedAtMs;
    },
    async afterRound(busy: boolean): Promise<AwakeRound> {
      const nowMs = ctx.nowMs();
      if (busy) {
        nextLookAtMs = Math.max(nextLookAtMs, nowMs + lookEveryMs);
        quietSinceMs = undefined;
      }
      if (!stopping && nowMs >= nextLookAtMs) await lookAndMaybeStop();
      if (!stopping && !handedOver && endsAtMs - ctx.nowMs() <= HANDOVER_MS) await handOver();
      if (!stopping && leaseUntilMs - ctx.nowMs() < RENEW_BELOW_MS && leaseUntilMs < endsAtMs) await renew();
      // Stopping too: the lease may cover the first job of a type made since it stopped renewing.
      else if (options.role === 'poller' && ctx.nowMs() - lastReadAtMs >= TYPES_CHECK_MS) await readTypesChanged();
      return round();
    },
  };
}
