/**
 * Making sure someone finds work written (queue/wake/lease-keeper.ts keeps the other side): a minute tick finds
 * what falls due past TICK_COVER_MS from now; anything sooner gets a hold on the wake item, which keeps whoever is
 * awake from stopping before it ends (or on a look begun before it was asked), and, unless the lease's holder
 * will still be there when it ends, a wake. Its caller is the waker, judging work already written (read from the
 * table's stream, or named by a timer), so the holder's polls after the hold find it.
 */
import { shardOf, wakeKey, type WakeRole } from '../../store/keys.js';
import { updateItem } from '../../store/send.js';
import { holdParams, typesChangedParams, writeWake, type WakeState } from '../../store/wake.js';
import type { QueueContext } from '../context.js';
import { RENEW_BELOW_MS } from './lease-keeper.js';
import { wakeRequestFor } from './wake-requests.js';
import { type WakeInvoker } from '../../domain/invocations.js';

/** EventBridge's minute, plus the few seconds its rules may start late: a tick comes within this of any time. */
export const TICK_COVER_MS = 70_000;
/**
 * How long after its write the index may still not show an entry, usually: a hold for work just written lasts at
 * least this past the write. An entry the index shows later still is found by the next tick.
 */
export const INDEX_LAG_MS = 2_000;
/** A hold lasts this far past its work's due time (a poller's: beyond a poll interval, for a poll begun after it). */
const AFTER_DUE_MARGIN_MS = 250;

/**
 * When a hold for work due at `dueAtMs` (written at `writtenAtMs`, when just now) may end. The sweeper's are asked
 * once the work is due (timers.ts's dueSoon), and a woken sweeper sweeps as it starts.
 */
function holdUntilFor(ctx: QueueContext, role: WakeRole, work: { dueAtMs: number; writtenAtMs?: number }): number {
  const roundMs = role === 'poller' ? ctx.settings.pollIntervalMs : 0;
  return Math.max(work.dueAtMs + roundMs + AFTER_DUE_MARGIN_MS, (work.writtenAtMs ?? -Infinity) + INDEX_LAG_MS);
}

interface Seen {
  /** The wake item as this process's last hold found it. */
  state: WakeState | undefined;
  /**
   * The ask under way (hold, wake), until it ends. Another entry waits for it and is judged by what it found:
   * a burst's entries, which one hold covers, would otherwise each hold and wake.
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
 * Makes sure someone of `role` (the poller of `partition`, or the sweeper) finds work that falls due at `dueAtMs`:
 * a hold already asked for that lasts long enough covers it. Never throws: a wake that fails leaves the work to the
 * next minute tick, late but never lost.
 */
export async function ensureAwake(ctx: QueueContext, role: WakeRole, partition: number, work: { dueAtMs: number; writtenAtMs?: number }): Promise<void> {
  const { waker } = ctx;
  if (!waker || work.dueAtMs >= ctx.nowMs() + TICK_COVER_MS) return;
  const holdUntilMs = holdUntilFor(ctx, role, work);
  const seen = seenOf(waker);
  const memo = memoKey(ctx, role, partition);
  for (let inFlight = seen.get(memo)?.asking; inFlight; inFlight = seen.get(memo)?.asking) await inFlight;
  if ((seen.get(memo)?.state?.holdUntilMs ?? 0) >= holdUntilMs) return;
  if (seen.size >= MAX_SEEN) seen.clear();
  const entry: Seen = { state: seen.get(memo)?.state };
  seen.set(memo, entry);
  const asking = askFor(ctx, waker, entry, { role, partition, holdUntilMs }).finally(() => delete entry.asking);
  entry.asking = asking;
  await asking;
}

/** Asks for a hold and wakes `role` unless its lease's holder stays past it. */
async function askFor(ctx: QueueContext, waker: WakeInvoker, entry: Seen, ask: { role: WakeRole; partition: number; holdUntilMs: number }): Promise<void> {
  try {
    const held = await writeWake(ctx, holdParams(wakeKey(ask.role, ask.partition), ask.holdUntilMs));
    // Written or refused (a later hold stands), the item as the hold met it.
    entry.state = held.state;
    if (!holderStaysFor(entry.state, ask.holdUntilMs, ctx.nowMs())) await waker.wake(wakeRequestFor(ctx.settings, ask.role, ask.partition));
  } catch {
    // The next minute tick finds the work: its bucket was recorded before it was written. Forgotten, the hold covers
    // nothing more from this process, and the next work judged asks again.
    entry.state = undefined;
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

/** Asks every poller partition for a hold, waking it unless its holder stays: a type resumed, whose lanes no walk reached. */
export async function wakeEveryPoller(ctx: QueueContext): Promise<void> {
  const partitions = Array.from({ length: ctx.settings.pollerPartitions }, (_, partition) => partition);
  if (!ctx.waker) return;
  const seen = seenOf(ctx.waker);
  for (const partition of partitions) seen.delete(memoKey(ctx, 'poller', partition));
  await Promise.all(partitions.map((partition) => ensureAwake(ctx, 'poller', partition, { dueAtMs: ctx.nowMs(), writtenAtMs: ctx.nowMs() })));
}

/**
 * Before a job type is made or changed: awake pollers list types again at their next round, and the next minute
 * tick looks at every lane from its cursor, since a type resumed (or given room again) may have work far behind
 * where the others' walks stand. Written first, as a lane's bucket is recorded before its entry: if this fails,
 * the change is not made. The waker reads the type written on the table's stream and wakes every poller.
 */
export async function beforeJobTypesChange(ctx: QueueContext): Promise<void> {
  const partitions = Array.from({ length: ctx.settings.pollerPartitions }, (_, partition) => partition);
  await Promise.all(partitions.map((partition) => updateItem(ctx, typesChangedParams(wakeKey('poller', partition), ctx.nowMs()))));
}
