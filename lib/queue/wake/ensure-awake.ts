/**
 * Making sure someone finds work written (queue/wake/lease-keeper.ts keeps the other side): a minute tick finds
 * what falls due past TICK_COVER_MS from now; anything sooner gets a hold on the wake item, which keeps whoever is
 * awake from stopping before it ends (or on a look begun before it was asked), and, unless the lease's holder
 * will still be there when it ends, a wake. Its caller is the waker, judging work already written (read from the
 * table's stream, or named by a timer), so the holder's polls after the hold find it.
 */
import { shardOf, wakeKey, type WakeRole } from '../../store/keys.js';
import { updateItem } from '../../store/send.js';
import { EVERY_LANE, holdParams, laneHoldParams, typesChangedParams, writeWake, type WakeState } from '../../store/wake.js';
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

/** Work a poller must find, and where: a hold for it names the types whose lanes it lies in (store/wake.ts's lane holds). */
export interface WorkToFind {
  dueAtMs: number;
  /** When it was written, when just now: the index may not show it for INDEX_LAG_MS. */
  writtenAtMs?: number;
  /** The types whose lanes the work lies in (EVERY_LANE: any); none for work in no lane (a schedule, a sweep). */
  lanes?: readonly string[];
}

/**
 * When a hold for work due at `dueAtMs` (written at `writtenAtMs`, when just now) may end. The sweeper's are asked
 * once the work is due (timers.ts's dueSoon), and a woken sweeper sweeps as it starts.
 */
function holdUntilFor(ctx: QueueContext, role: WakeRole, work: WorkToFind): number {
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

/** Whether the wake item, as last found, asks for someone awake until `holdUntilMs`, and polls of `lanes` as long. */
const holdStands = (state: WakeState | undefined, holdUntilMs: number, lanes: readonly string[]): boolean =>
  state !== undefined && state.holdUntilMs >= holdUntilMs && lanes.every((lane) => (state.laneHoldsUntilMs.get(lane) ?? 0) >= holdUntilMs);

/** Lane holds another waker raises meanwhile refuse a raise; it is tried again for the rest this often at most. */
const LANE_HOLD_TRIES = 3;

/** The holder will still be working past the hold, and will honour it: waking another adds nothing. */
const holderStaysFor = (state: WakeState | undefined, holdUntilMs: number, nowMs: number): boolean =>
  state !== undefined && state.ownerId !== undefined && state.awakeUntilMs > nowMs && !state.stopping && state.ownerEndsAtMs >= holdUntilMs + RENEW_BELOW_MS;

/**
 * Makes sure someone of `role` (the poller of `partition`, or the sweeper) finds work that falls due at `dueAtMs`:
 * a hold already asked for that lasts long enough covers it. Never throws: a wake that fails leaves the work to the
 * next minute tick, late but never lost.
 */
export async function ensureAwake(ctx: QueueContext, role: WakeRole, partition: number, work: WorkToFind): Promise<void> {
  const { waker } = ctx;
  if (!waker || work.dueAtMs >= ctx.nowMs() + TICK_COVER_MS) return;
  const holdUntilMs = holdUntilFor(ctx, role, work);
  const lanes = role === 'poller' ? [...new Set(work.lanes ?? [])] : [];
  const seen = seenOf(waker);
  const memo = memoKey(ctx, role, partition);
  for (let inFlight = seen.get(memo)?.asking; inFlight; inFlight = seen.get(memo)?.asking) await inFlight;
  if (holdStands(seen.get(memo)?.state, holdUntilMs, lanes)) return;
  if (seen.size >= MAX_SEEN) seen.clear();
  const entry: Seen = { state: seen.get(memo)?.state };
  seen.set(memo, entry);
  const asking = askFor(ctx, waker, entry, { role, partition, holdUntilMs, lanes }).finally(() => delete entry.asking);
  entry.asking = asking;
  await asking;
}

/** Asks for a hold (and for polls of its lanes as long), and wakes `role` unless its lease's holder stays past it. */
async function askFor(ctx: QueueContext, waker: WakeInvoker, entry: Seen, ask: { role: WakeRole; partition: number; holdUntilMs: number; lanes: readonly string[] }): Promise<void> {
  try {
    const key = wakeKey(ask.role, ask.partition);
    let held = await writeWake(ctx, holdParams(key, ask.holdUntilMs, ask.lanes));
    // Written or refused (a later hold stands), the item as the hold met it.
    entry.state = held.state;
    for (let tries = 0; !held.ok && tries < LANE_HOLD_TRIES; tries++) {
      const lower = ask.lanes.filter((lane) => (held.state?.laneHoldsUntilMs.get(lane) ?? 0) < ask.holdUntilMs);
      if (lower.length === 0) break;
      held = await writeWake(ctx, laneHoldParams(key, ask.holdUntilMs, lower));
      entry.state = held.state;
    }
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
  await Promise.all(partitions.map((partition) => ensureAwake(ctx, 'poller', partition, { dueAtMs: ctx.nowMs(), writtenAtMs: ctx.nowMs(), lanes: [EVERY_LANE] })));
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
