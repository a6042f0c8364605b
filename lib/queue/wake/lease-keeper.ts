/**
 * Sleeping pollers and sweepers. A minute tick, a wake or a timer (queue/wake/ensure-awake.ts, timers.ts) starts
 * an invocation; it stays only while work is due soon (timers.ts's dueSoon) or a hold asks it to. Awake, it holds a short
 * lease on its wake item, renewed while it stays: the waker reads it to know whether someone awake will honour its
 * hold, and a tick whether someone is there already. Once nothing has happened for a while it looks again: with
 * nothing due soon and no hold asked for since the look began, it gives the lease up and ends, having armed a
 * timer for the earliest work it left within a tick's reach. The minute tick finds out in a few reads whether
 * anything falls due before the next one.
 */
import { wakeKey, type WakeRole } from '../../store/keys.js';
import { readWakeState, recordWalkedParams, renewLeaseParams, stopLeaseParams, takeLeaseParams, writeWake, type Walked, type WakeState } from '../../store/wake.js';
import type { QueueContext } from '../context.js';
import { wakeRequestFor } from './wake-requests.js';
import { type StartKind } from '../../domain/invocations.js';
import { armTimers, dueSoon } from './timers.js';

/** How long a lease promises work; renewed once less than RENEW_BELOW_MS of it is left, so about every second. */
export const LEASE_MS = 3_000;
export const RENEW_BELOW_MS = 2_000;
/** No work for this long, and the holder looks whether anything is due soon; again this often while something is. */
export const IDLE_BEFORE_LOOK_MS = 500;
/**
 * Between renewals the holder reads its wake item this often (after a round of work, and while its loop waits), so
 * a job type made, or a lane held for work written, while it is awake is polled within about this long.
 */
export const TYPES_CHECK_MS = 250;
/**
 * This long before its invocation ends, a holder with work still due soon wakes its successor, which takes the
 * lease over: the next tick may be seconds away (runs end before the minute does), and jobs due meanwhile would
 * wait for it.
 */
export const HANDOVER_MS = 1_500;
/**
 * How far ahead a look reaches for the earliest work, to arm a timer for it: past the next minute tick (60 s, plus
 * up to 10 s of EventBridge's delay, see ensure-awake.ts's TICK_COVER_MS), so whatever falls due before a later tick
 * sees it is claimed on time.
 */
export const REACH_MS = 90_000;

/** What an invocation of a role looks for before it stays or sleeps. */
export interface AwakeWork {
  /** When the earliest work due by `untilMs` falls due (overdue work: now), or undefined when there is none. */
  earliestDueAtMs(untilMs: number): Promise<number | undefined>;
  /**
   * Where every lane's walk stands, for the next tick to look from, with when types had last changed as the lanes
   * walked were listed (a later change makes it unknown); undefined when not known.
   */
  walkedFromBucket(): Walked | undefined;
}

/** What the wake item last said that changes what a poller polls. */
export interface WakeNews {
  /** When job types last changed. */
  typesChangedAtMs: number;
  /** Until when the waker asked for each type's lanes to be polled (store/wake.ts). */
  laneHoldsUntilMs: ReadonlyMap<string, number>;
}

export interface AwakeRound extends WakeNews {
  /** Until when to keep working: the invocation's end, or now once the holder gave the lease up. */
  untilMs: number;
}

export interface AwakeKeeper {
  /** After each round of work (`busy` when it did some): renews, looks and stops as due. */
  afterRound(busy: boolean): Promise<AwakeRound>;
  /**
   * While the loop waits between rounds: the wake item's news, read again once TYPES_CHECK_MS has passed since the
   * last read, so a type made or a lane held meanwhile is polled without waiting out the poll interval.
   */
  news(): Promise<WakeNews>;
  readonly stopping: boolean;
}

/** Why an invocation did not stay: someone is awake already, nothing is due before the next tick, or a timer will wake it. */
export type SleepReason = 'covered' | 'idle' | 'timer';

export type AwakeStart = { awake: false; reason: SleepReason; state: WakeState } | { awake: true; keeper: AwakeKeeper; state: WakeState };

/**
 * A holder that will honour a hold: a wake's, if it stays past the hold that asked for the wake; a tick's, if it
 * has not given the lease up, since it stays for work due soon and arms a timer for later work when it stops.
 */
function coveredBy(state: WakeState, kind: StartKind, nowMs: number): boolean {
  if (state.ownerId === undefined || state.awakeUntilMs <= nowMs || state.stopping) return false;
  return kind === 'tick' || state.ownerEndsAtMs >= Math.max(state.holdUntilMs, nowMs) + RENEW_BELOW_MS;
}

/**
 * Work keeps an invocation awake when it is due soon (timers.ts's dueSoon); later work, when no timer can wake it
 * for that (nothing to send them with: a context without timers polls as pollers did before timers).
 */
const staysFor = (ctx: QueueContext, role: WakeRole, earliestDueAtMs: number | undefined, nowMs: number): boolean =>
  earliestDueAtMs !== undefined && (dueSoon(role, earliestDueAtMs, nowMs) || !ctx.wakeTimers);

/**
 * Arms the timer for the earliest work an invocation leaves, naming no partition: it wakes whatever it finds, since
 * the work behind the earliest waits on the invocation it starts. One that fails leaves the work to the next tick.
 */
async function armTimerFor(ctx: QueueContext, role: WakeRole, partition: number, dueAtMs: number): Promise<void> {
  if (!ctx.wakeTimers) return;
  await armTimers(ctx, ctx.wakeTimers, [{ role, partition, dueAtMs }]).catch(() => undefined);
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
  /** No work for this long, and the holder looks whether anything is due soon; again this often. @default IDLE_BEFORE_LOOK_MS */
  lookEveryMs?: number;
  /** The first look, this long after the start unless work came first. @default lookEveryMs */
  firstLookAfterMs?: number;
}

/** Decides whether an invocation stays, and takes the lease when it does; one that sleeps arms a timer for what it left. */
export async function startAwake(ctx: QueueContext, options: AwakeOptions): Promise<AwakeStart> {
  const { role, partition, ownerId, endsAtMs, kind, work, state } = options;
  const nowMs = ctx.nowMs();
  if (coveredBy(state, kind, nowMs)) return { awake: false, reason: 'covered', state };
  const key = wakeKey(role, partition);
  if (state.holdUntilMs <= nowMs) {
    const earliestDueAtMs = await work.earliestDueAtMs(nowMs + REACH_MS);
    if (!staysFor(ctx, role, earliestDueAtMs, nowMs)) {
      const walked = work.walkedFromBucket();
      // Read from the cursors this time: the next ticks read it here.
      if (state.walkedFromBucket === undefined && walked !== undefined) await writeWake(ctx, recordWalkedParams(key, walked));
      if (earliestDueAtMs === undefined) return { awake: false, reason: 'idle', state };
      await armTimerFor(ctx, role, partition, earliestDueAtMs);
      return { awake: false, reason: 'timer', state };
    }
  }
  const taken = await writeWake(ctx, takeLeaseParams(key, { ownerId, awakeUntilMs: Math.min(ctx.nowMs() + LEASE_MS, endsAtMs), ownerEndsAtMs: endsAtMs }));
  const held = taken.state ?? state;
  return { awake: true, keeper: createKeeper(ctx, options, held), state: held };
}

/** The news alone, of a wake state or of a round that carries it. */
export const newsOf = (state: WakeNews): WakeNews => ({ typesChangedAtMs: state.typesChangedAtMs, laneHoldsUntilMs: state.laneHoldsUntilMs });

function createKeeper(ctx: QueueContext, options: AwakeOptions, taken: WakeState): AwakeKeeper {
  const { role, partition, ownerId, endsAtMs, work } = options;
  const lookEveryMs = options.lookEveryMs ?? IDLE_BEFORE_LOOK_MS;
  const key = wakeKey(role, partition);
  let leaseUntilMs = taken.awakeUntilMs;
  let news: WakeNews = newsOf(taken);
  let stopping = false;
  let nextLookAtMs = ctx.nowMs() + (options.firstLookAfterMs ?? lookEveryMs);
  let lastReadAtMs = ctx.nowMs();
  let handedOver = false;
  const round = (): AwakeRound => ({ untilMs: stopping ? ctx.nowMs() : endsAtMs, ...news });

  /**
   * Nothing due soon, on a look begun after every hold asked for: gives the lease up, unless a hold came since (its
   * work may have been on its way into the index as the look read it), and arms a timer for the earliest work left.
   */
  async function lookAndMaybeStop(): Promise<void> {
    const lookedAtMs = ctx.nowMs();
    nextLookAtMs = lookedAtMs + lookEveryMs;
    const state = await readWakeState(ctx, role, partition);
    lastReadAtMs = lookedAtMs;
    news = newsOf(state);
    if (state.ownerId !== ownerId) {
      stopping = true;
      return;
    }
    // A hold is kept whatever is due: the next look comes as it ends.
    if (state.holdUntilMs > lookedAtMs) {
      nextLookAtMs = state.holdUntilMs;
      return;
    }
    const earliestDueAtMs = await work.earliestDueAtMs(lookedAtMs + REACH_MS);
    if (staysFor(ctx, role, earliestDueAtMs, lookedAtMs)) return;
    const stopped = await writeWake(ctx, stopLeaseParams(key, ownerId, lookedAtMs, work.walkedFromBucket(), [...state.laneHoldsUntilMs.keys()]));
    // Refused: a hold was asked for since the look began, and the next look comes as it ends.
    if (!stopped.ok) {
      nextLookAtMs = lookedAtMs;
      return;
    }
    stopping = true;
    if (earliestDueAtMs !== undefined) await armTimerFor(ctx, role, partition, earliestDueAtMs);
  }

  async function renew(): Promise<void> {
    const awakeUntilMs = Math.min(ctx.nowMs() + LEASE_MS, endsAtMs);
    const renewed = await writeWake(ctx, renewLeaseParams(key, { ownerId, awakeUntilMs }, work.walkedFromBucket()));
    if (!renewed.ok || !renewed.state) {
      // Another invocation took the lease and works on.
      stopping = true;
      return;
    }
    leaseUntilMs = awakeUntilMs;
    lastReadAtMs = ctx.nowMs();
    news = newsOf(renewed.state);
  }

  /** Still awake at its end, the holder starts its successor; a wake that fails leaves the gap to the next tick. */
  async function handOver(): Promise<void> {
    handedOver = true;
    await ctx.waker?.wake(wakeRequestFor(ctx.settings, role, partition)).catch(() => undefined);
  }

  async function readNews(): Promise<void> {
    lastReadAtMs = ctx.nowMs();
    news = newsOf(await readWakeState(ctx, role, partition));
  }

  return {
    get stopping() {
      return stopping;
    },
    async news(): Promise<WakeNews> {
      if (ctx.nowMs() - lastReadAtMs >= TYPES_CHECK_MS) await readNews();
      return news;
    },
    async afterRound(busy: boolean): Promise<AwakeRound> {
      const nowMs = ctx.nowMs();
      if (busy) nextLookAtMs = Math.max(nextLookAtMs, nowMs + lookEveryMs);
      if (!stopping && nowMs >= nextLookAtMs) await lookAndMaybeStop();
      if (!stopping && !handedOver && endsAtMs - ctx.nowMs() <= HANDOVER_MS) await handOver();
      if (!stopping && leaseUntilMs - ctx.nowMs() < RENEW_BELOW_MS && leaseUntilMs < endsAtMs) await renew();
      else if (!stopping && role === 'poller' && ctx.nowMs() - lastReadAtMs >= TYPES_CHECK_MS) await readNews();
      return round();
    },
  };
}
