/**
 * The waker: what wakes a sleeping poller or sweeper once a lane entry is written. It reads the table's stream, so
 * it judges each entry after its write committed, and no writer reads, holds or invokes anything on its way: an
 * entry falling due within WAKE_NOW_WITHIN_MS is made sure of at once (ensureAwake: the lease, a hold, a wake); one
 * due later, within a tick's reach, gets a timer (a delayed message) that comes back to the waker shortly before,
 * one per function and second whatever the number of entries. Later still, a minute tick finds it.
 */
import type { WakeTimer, WakeTimers } from '../../domain/invocations.js';
import type { Lane } from '../../store/keys.js';
import type { QueueContext } from '../context.js';
import { ensureAwake, pollerPartitionOfShard, TICK_COVER_MS } from './ensure-awake.js';

/** Entries due this soon are made sure of at once: a timer's second of precision, and its trip, would make them late. */
export const WAKE_NOW_WITHIN_MS = 2_000;
/** A timer comes back this long before its entry falls due, for the woken function's start. */
export const TIMER_LEAD_MS = 1_000;
/** SQS delays a message at most 15 minutes. */
export const MAX_TIMER_DELAY_S = 900;

export interface WrittenLaneEntry {
  lane: Lane;
  shard: number;
  dueAtMs: number;
}

const targetOf = (ctx: QueueContext, entry: WrittenLaneEntry): Pick<WakeTimer, 'role' | 'partition'> =>
  entry.lane.kind === 'queued' ? { role: 'poller', partition: pollerPartitionOfShard(ctx, entry.shard) } : { role: 'sweeper', partition: 0 };

const targetKey = ({ role, partition }: Pick<WakeTimer, 'role' | 'partition'>): string => `${role}#${partition}`;

/** The second a timer for `dueAtMs` comes back in: entries whose timers share it share one timer. */
const timerSecondOf = (dueAtMs: number): number => Math.floor((dueAtMs - TIMER_LEAD_MS) / 1000);

/**
 * Timers this process sent, by table, function and second, until that second passes: a stream batch delivered
 * again, or the next entry due in the same second, sends none. Another process may send the same timer once more;
 * the wake it brings finds the function awake and costs a read.
 */
const armed = new Map<string, number>();
const MAX_ARMED = 10_000;

function forgetPassed(nowMs: number): void {
  for (const [key, untilMs] of armed) if (untilMs <= nowMs) armed.delete(key);
  if (armed.size >= MAX_ARMED) armed.clear();
}

/** One wake per function, for the latest due time of those given: what is awake must outlast them all. */
function latestPerTarget(wakes: Iterable<WakeTimer>): WakeTimer[] {
  const latest = new Map<string, WakeTimer>();
  for (const wake of wakes) {
    const key = targetKey(wake);
    if (wake.dueAtMs > (latest.get(key)?.dueAtMs ?? -Infinity)) latest.set(key, wake);
  }
  return [...latest.values()];
}

/** Wakes whoever must find the written entries: now for those due soon, by a timer for those due within a tick's reach. */
export async function wakeForWrittenEntries(ctx: QueueContext, entries: readonly WrittenLaneEntry[], timers: WakeTimers): Promise<void> {
  const nowMs = ctx.nowMs();
  const dueSoon: WakeTimer[] = [];
  const toArm = new Map<string, { timer: WakeTimer; delayS: number }>();
  forgetPassed(nowMs);
  for (const entry of entries) {
    const target = targetOf(ctx, entry);
    // Past a tick's cover, the next minute tick finds it and stays for it (queue/wake/lease-keeper.ts).
    if (entry.dueAtMs >= nowMs + TICK_COVER_MS) continue;
    if (entry.dueAtMs <= nowMs + WAKE_NOW_WITHIN_MS) {
      dueSoon.push({ ...target, dueAtMs: entry.dueAtMs });
      continue;
    }
    const second = timerSecondOf(entry.dueAtMs);
    const key = `${ctx.settings.tableName}\u0000${targetKey(target)}\u0000${second}`;
    if (armed.has(key) || toArm.has(key)) continue;
    const delayS = Math.min(MAX_TIMER_DELAY_S, Math.max(0, Math.floor((second * 1000 - nowMs) / 1000)));
    toArm.set(key, { timer: { ...target, dueAtMs: (second + 1) * 1000 + TIMER_LEAD_MS }, delayS });
  }
  await Promise.all(latestPerTarget(dueSoon).map((wake) => ensureAwake(ctx, wake.role, wake.partition, wake.dueAtMs)));
  if (toArm.size === 0) return;
  await timers.arm([...toArm.values()]);
  for (const [key, { timer }] of toArm) armed.set(key, timer.dueAtMs);
}

/** Timers that came back: whoever they name is made sure of now, once per function. */
export async function wakeForTimers(ctx: QueueContext, fired: readonly WakeTimer[]): Promise<void> {
  await Promise.all(latestPerTarget(fired).map((timer) => ensureAwake(ctx, timer.role, timer.partition, Math.max(timer.dueAtMs, ctx.nowMs()))));
}
