/**
 * Making sure someone finds an entry written (queue/wake/lease-keeper.ts keeps the other side): a minute tick finds
 * what falls due past TICK_COVER_MS from now; a lease that outlasts the entry by COVER_MARGIN_MS finds it, since its
 * holder polls until the lease ends whether or not it renews; so does whoever is awake through a hold. Otherwise a
 * hold is asked for (someone awake, and looking only after it) and, unless the lease's holder will still be there
 * then, the function is woken. Every caller judges an entry already written (the waker, from the table's stream;
 * a schedule or a bulk operation once recorded), so what it finds covers the entry as it stands.
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
/** A hold: the wake it may come with, and the index's lag, with room to spare. */
export const HOLD_MS = 5_000;

interface Seen {
  /** The wake item as this process last found it, by a read or by its own hold. */
  state: WakeState | undefined;
  /**
   * The ask under way (read, hold, wake), until it ends. Another entry waits for it and is judged by what it found:
   * a burst's entries, which one hold covers, would otherwise each read, hold and wake.
   */
  asking?: Promise<void>;
}

/**
 * What each process last found of each wake item, by table, role and partition: per waker, since each function
 * has its own (one per process deployed; the local runtime runs them all in one).
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

/** The holder will still be working past the hold, and will honour it: waking another adds nothing. */
const holderStaysFor = (state: WakeState | undefined, holdUntilMs: number, nowMs: number): boolean =>
  state !== undefined && state.ownerId !== undefined && state.awakeUntilMs > nowMs && !state.stopping && state.ownerEndsAtMs >= holdUntilMs + RENEW_BELOW_MS;

/**
 * Which leases cover the work: `any` for an entry written, which the holder's polls find until its lease ends
 * whether or not it renews; `renewing` for a bulk operation, which a holder that will not renew starts no more;
 * `none` for a type no holder polled, since one that will not renew never lists the types again (a hold makes one
 * that renews list them).
 */
export type LeaseCover = 'any' | 'renewing' | 'none';

/** The written entry is found in time: by a tick; by the lease's holder, as `lease` says; or by whoever looks after the hold. */
function covers(state: WakeState | undefined, dueAtMs: number, nowMs: number, lease: LeaseCover): boolean {
  if (dueAtMs >= nowMs + TICK_COVER_MS) return true;
  const leaseCounts = lease === 'any' || (lease === 'renewing' && state?.stopping === false);
  if (leaseCounts && state?.ownerId !== undefined && Math.max(dueAtMs, nowMs) + COVER_MARGIN_MS < state.awakeUntilMs) return true;
  return state !== undefined && state.holdUntilMs > nowMs + COVER_MARGIN_MS;
}

/**
 * Makes sure someone of `role` (the poller of `partition`, or the sweeper) finds work written that falls due at
 * `dueAtMs`. Never throws: a wake that fails leaves the work to the next minute tick, late but never lost.
 */
export async function ensureAwake(ctx: QueueContext, role: WakeRole, partition: number, dueAtMs: number, options: { lease?: LeaseCover } = {}): Promise<void> {
  const { waker } = ctx;
  if (!waker || dueAtMs >= ctx.nowMs() + TICK_COVER_MS) return;
  const lease = options.lease ?? 'any';
  const seen = seenOf(waker);
  const memo = memoKey(ctx, role, partition);
  for (let inFlight = seen.get(memo)?.asking; inFlight; inFlight = seen.get(memo)?.asking) await inFlight;
  if (covers(seen.get(memo)?.state, dueAtMs, ctx.nowMs(), lease)) return;
  if (seen.size >= MAX_SEEN) seen.clear();
  const entry: Seen = { state: seen.get(memo)?.state };
  seen.set(memo, entry);
  const asking = askFor(ctx, waker, entry, { role, partition, dueAtMs, lease }).finally(() => delete entry.asking);
  entry.asking = asking;
  await asking;
}

/** Reads the wake item and, unless it covers the entry, asks for a hold and wakes `role` unless its holder stays. */
async function askFor(ctx: QueueContext, waker: WakeInvoker, entry: Seen, ask: { role: WakeRole; partition: number; dueAtMs: number; lease: LeaseCover }): Promise<void> {
  try {
    entry.state = await readWakeState(ctx, ask.role, ask.partition);
    if (covers(entry.state, ask.dueAtMs, ctx.nowMs(), ask.lease)) return;
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
  await Promise.all(partitions.map((partition) => ensureAwake(ctx, 'poller', partition, ctx.nowMs(), { lease: 'none' })));
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
