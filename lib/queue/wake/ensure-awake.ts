/**
 * Writers' side of sleeping pollers and sweepers (queue/wake/lease-keeper.ts): before a write puts an entry someone must
 * find soon (a job due, a claim that will lapse), the writer makes sure someone will. A minute tick finds what
 * falls due past TICK_COVER_MS from now; a lease still renewed that outlasts the entry by COVER_MARGIN_MS finds
 * it too. Else the writer asks for a hold (someone awake, and looking only after it) and, unless the lease's
 * holder will still be there then, wakes the function: at most once per WAKE_WINDOW_MS per process, since the
 * hold asked for covers every entry written within the window.
 */
import { shardOf, wakeKey, type WakeRole } from '../../store/keys.js';
import { updateItem } from '../../store/send.js';
import { holdParams, readWakeState, typesChangedParams, writeWake, type WakeState } from '../../store/wake.js';
import type { QueueContext } from '../context.js';
import { RENEW_BELOW_MS } from './lease-keeper.js';
import { wakeRequestFor } from './wake-requests.js';
import { type WakeInvoker } from '../../domain/invocations.js';

/** EventBridge's minute, plus the few seconds its rules may start late: a tick comes within this of any time. */
export const TICK_COVER_MS = 70_000;
/** Past a poll interval and the index's usual lag: a lease ending later than this after an entry finds it. */
export const COVER_MARGIN_MS = 1_500;
export const WAKE_WINDOW_MS = 1_000;
/** A window, the write that follows the wake, and the index's lag, with room to spare. */
export const HOLD_MS = 5_000;

interface Seen {
  state: WakeState | undefined;
  askedAtMs: number;
  /** The latest due time of the entries written within this ask's window: its hold must cover them all. */
  latestDueAtMs: number;
  /**
   * The ask under way (read, hold, wake), until it ends. A writer asking again waits for it and judges its written
   * entry by what it found: the joiners of a burst, whose entries the state from before the ask does not cover, and
   * the slow writes of a brownout would otherwise each read, hold and wake.
   */
  asking?: Promise<void>;
}

/**
 * What each process last saw of each wake item and when it last asked, by table, role and partition: per waker,
 * since each function has its own (one per process deployed; the local runtime runs them all in one).
 */
const seenByWaker = new WeakMap<WakeInvoker, Map<string, Seen>>();
const MAX_SEEN = 1_000;

const memoKey = (ctx: QueueContext, role: WakeRole, partition: number): string => `${ctx.settings.tableName}\u0000${role}\u0000${partition}`;

function seenOf(waker: WakeInvoker): Map<string, Seen> {
  let seen = seenByWaker.get(waker);
  if (!seen) {
    seen = new Map();
    seenByWaker.set(waker, seen);
  }
  return seen;
}

/** The lease, renewed or not, ends later than the entry's due time (or now) plus a poll and the index's lag. */
const leaseEndsPast = (state: WakeState, dueAtMs: number, nowMs: number): boolean => Math.max(dueAtMs, nowMs) + COVER_MARGIN_MS < state.awakeUntilMs;

/**
 * A lease still renewed outlasts the entry: its holder looks again before it stops. Not one its holder will not
 * renew: the margin covers a poll and the index's lag, not the write that follows this check, which may land
 * after the lease's last poll.
 */
const leaseOutlasts = (state: WakeState | undefined, dueAtMs: number, nowMs: number): boolean =>
  state !== undefined && !state.stopping && leaseEndsPast(state, dueAtMs, nowMs);

/** The holder will still be working past the hold, and will honour it: waking another adds nothing. */
const holderStaysFor = (state: WakeState | undefined, holdUntilMs: number, nowMs: number): boolean =>
  state !== undefined && state.ownerId !== undefined && state.awakeUntilMs > nowMs && !state.stopping && state.ownerEndsAtMs >= holdUntilMs + RENEW_BELOW_MS;

/**
 * Called once the entry is written, whether or not the write succeeded. What covered the entry when it was judged
 * (a tick, a lease, a hold) must still cover it as written: a write slower than the margin may land after a
 * stopping holder's last poll, after its hold, or too close to its due time for a tick. Then the writer asks again,
 * skipping the window's shortcut; it reads the item only when the cover it knows of ran out during its write.
 */
export type AfterEntryWritten = () => Promise<void>;

const nothingToCheck: AfterEntryWritten = async () => undefined;

/**
 * The written entry is found in time: by a tick; by the lease's holder, which polls until its lease ends whether
 * or not it renews (it is written, so no later write can miss its last poll); or by whoever looks after the hold.
 */
function coversWritten(state: WakeState | undefined, dueAtMs: number, nowMs: number, typesChanged: boolean): boolean {
  if (dueAtMs >= nowMs + TICK_COVER_MS) return true;
  if (!typesChanged && state?.ownerId !== undefined && leaseEndsPast(state, dueAtMs, nowMs)) return true;
  return state !== undefined && state.holdUntilMs > nowMs + COVER_MARGIN_MS;
}

interface EnsureAwakeOptions {
  /** The work is a type's that no holder polled (see ensureAwake). */
  typesChanged?: boolean;
  /** Asking again after a slow write: read the item now, whatever this process saw or asked within the window. */
  again?: boolean;
}

/**
 * Makes sure someone of `role` (the poller of `partition`, or the sweeper) works at `dueAtMs`; call what it answers
 * once the entry is written. Never throws: a wake that fails leaves the entry to the next minute tick, late but never
 * lost. `typesChanged`: the work is a type's that no holder polled, and a lease alone does not cover it, since a
 * holder that will not renew never lists the types again; a hold makes one that renews list them.
 */
export async function ensureAwake(ctx: QueueContext, role: WakeRole, partition: number, dueAtMs: number, options: EnsureAwakeOptions = {}): Promise<AfterEntryWritten> {
  const { waker } = ctx;
  if (!waker) return nothingToCheck;
  const typesChanged = options.typesChanged === true;
  const seen = seenOf(waker);
  const memo = memoKey(ctx, role, partition);
  const afterWritten: AfterEntryWritten = options.again
    ? nothingToCheck
    : async () => {
        if (!coversWritten(seen.get(memo)?.state, dueAtMs, ctx.nowMs(), typesChanged)) await ensureAwake(ctx, role, partition, dueAtMs, { typesChanged, again: true });
      };
  if (dueAtMs >= ctx.nowMs() + TICK_COVER_MS) return afterWritten;
  // Asking again, first wait for any ask under way: its hold, or the lease it found, may cover this entry.
  for (let inFlight = seen.get(memo)?.asking; options.again && inFlight; inFlight = seen.get(memo)?.asking) {
    await inFlight;
    if (coversWritten(seen.get(memo)?.state, dueAtMs, ctx.nowMs(), typesChanged)) return nothingToCheck;
  }
  const nowMs = ctx.nowMs();
  const cached = seen.get(memo);
  const last = options.again ? undefined : cached;
  const coveredByLease = (state: WakeState | undefined, untilMs: number, atMs: number): boolean => !typesChanged && leaseOutlasts(state, untilMs, atMs);
  if (coveredByLease(last?.state, dueAtMs, nowMs)) return afterWritten;
  if (last && nowMs - last.askedAtMs < WAKE_WINDOW_MS) {
    last.latestDueAtMs = Math.max(last.latestDueAtMs, dueAtMs);
    return afterWritten;
  }
  if (seen.size >= MAX_SEEN) seen.clear();
  // What this process knew stays until the ask's read replaces it.
  const entry: Seen = { state: cached?.state, askedAtMs: nowMs, latestDueAtMs: dueAtMs };
  seen.set(memo, entry);
  const asking = askFor(ctx, waker, entry, { role, partition, coveredByLease }).finally(() => {
    if (entry.asking === asking) delete entry.asking;
  });
  entry.asking = asking;
  await asking;
  return afterWritten;
}

/** Reads the wake item and, unless its lease covers every entry of the window, asks for a hold and wakes `role`. */
async function askFor(
  ctx: QueueContext,
  waker: WakeInvoker,
  entry: Seen,
  ask: { role: WakeRole; partition: number; coveredByLease: (state: WakeState | undefined, untilMs: number, atMs: number) => boolean },
): Promise<void> {
  try {
    entry.state = await readWakeState(ctx, ask.role, ask.partition);
    if (ask.coveredByLease(entry.state, entry.latestDueAtMs, ctx.nowMs())) {
      // Nothing asked: a writer within the window asks for its own entry, which the lease may not cover.
      entry.askedAtMs = -Infinity;
      return;
    }
    const holdUntilMs = ctx.nowMs() + HOLD_MS;
    const held = await writeWake(ctx, holdParams(wakeKey(ask.role, ask.partition), holdUntilMs));
    // Written or refused, the item as the hold met it: the holder may have stopped since the read above.
    if (held.state) entry.state = held.state;
    if (!holderStaysFor(entry.state, holdUntilMs, ctx.nowMs())) await waker.wake(wakeRequestFor(ctx.settings, ask.role, ask.partition));
  } catch {
    // The next minute tick finds the entry: its bucket was recorded before it was written.
  }
}

/** The poller partition owning the shard of job `id`. */
export function pollerPartitionOf(ctx: QueueContext, id: string): number {
  return pollerPartitionOfShard(ctx, shardOf(id, ctx.settings.shards));
}

/** The poller partition owning `shard` (store/keys.ts's shardsOfPartition). */
export function pollerPartitionOfShard(ctx: QueueContext, shard: number): number {
  return shard % ctx.settings.pollerPartitions;
}

/** Wakes every poller partition for work due now, whatever the leases say: a type resumed, whose lanes no walk reached. */
export async function wakeEveryPoller(ctx: QueueContext): Promise<void> {
  const partitions = Array.from({ length: ctx.settings.pollerPartitions }, (_, partition) => partition);
  if (!ctx.waker) return;
  const seen = seenOf(ctx.waker);
  for (const partition of partitions) seen.delete(memoKey(ctx, 'poller', partition));
  await Promise.all(partitions.map((partition) => ensureAwake(ctx, 'poller', partition, ctx.nowMs(), { typesChanged: true })));
}

/**
 * Before a job type is made or changed: awake pollers list types again at their next round, and the next minute
 * tick looks at every lane from its cursor, since a type resumed (or given room again) may have work far behind
 * where the others' walks stand. Written first, as a lane's bucket is recorded before its entry: if this fails,
 * the change is not made. A resumed type wakes every poller at once.
 */
export async function beforeJobTypesChange(ctx: QueueContext): Promise<void> {
  if (!ctx.waker) return;
  const partitions = Array.from({ length: ctx.settings.pollerPartitions }, (_, partition) => partition);
  await Promise.all(partitions.map((partition) => updateItem(ctx, typesChangedParams(wakeKey('poller', partition), ctx.nowMs()))));
}
