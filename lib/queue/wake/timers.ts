/**
 * Timers: delayed messages that come back to the waker shortly before work falls due, so nobody stays awake to
 * wait for it. The waker arms them for entries it reads on the table's stream; a poller or sweeper about to sleep
 * arms one for the earliest work it leaves within a tick's reach. One per function and second, whatever the number
 * of entries due in it.
 */
import { MAX_TIMER_LANE_PARTITIONS, type WakeTimer, type WakeTimers } from '../../domain/invocations.js';
import type { WakeRole } from '../../store/keys.js';
import type { QueueContext } from '../context.js';

/**
 * Work due this soon is not left to a poller's timer: a timer's second of precision, and its trip through the queue
 * and the waker, would make it late. The waker makes sure of it at once; an awake poller stays for it.
 */
export const DUE_SOON_MS = 2_000;
/**
 * A poller's timer comes back at least this long before its work falls due: the waker's reads and the wake's start.
 * An awake poller reads the lane hold the timer asks for within lease-keeper.ts's TYPES_CHECK_MS, so work due at the
 * start of a second may start that much late; 600 ms here measured a second more of a sleeping poller's billed time
 * for each job spaced a minute apart (wake-outcomes, one run each), for work that is rarely due while one is awake.
 */
export const TIMER_LEAD_MS = 200;
/** SQS delays a message at most 15 minutes. */
export const MAX_TIMER_DELAY_S = 900;

/** Work for a function, due at a time, in the lane partitions named (none: the timer wakes whatever it finds). */
export interface DueWork {
  role: WakeRole;
  partition: number;
  dueAtMs: number;
  lanePartitions?: readonly string[];
}

/**
 * How many whole seconds (SQS's unit) a timer for work due at `dueAtMs` waits: a poller's comes back before its
 * due second begins (less TIMER_LEAD_MS), so before every entry due in that second, up to about two seconds before;
 * the sweeper's comes back after the second its claim lapses in, so the sweep it starts finds the claim lapsed.
 */
function timerDelayS(role: WakeRole, dueAtMs: number, nowMs: number): number {
  const second = Math.floor(dueAtMs / 1000);
  const delayS = role === 'poller' ? Math.floor((second * 1000 - TIMER_LEAD_MS - nowMs) / 1000) : Math.ceil(((second + 1) * 1000 - nowMs) / 1000);
  return Math.min(MAX_TIMER_DELAY_S, Math.max(0, delayS));
}

/**
 * Work no timer waits for: the sweeper's once due (a claim lapsed, an operation running); a poller's due within
 * DUE_SOON_MS, or so soon that its timer would come back at once, before the index may show the entry it checks.
 */
export function dueSoon(role: WakeRole, dueAtMs: number, nowMs: number): boolean {
  if (role === 'sweeper') return dueAtMs <= nowMs;
  return dueAtMs <= nowMs + DUE_SOON_MS || timerDelayS(role, dueAtMs, nowMs) === 0;
}

/** A function's key: a poller partition's, or the sweeper's. */
export const targetKey = ({ role, partition }: Pick<WakeTimer, 'role' | 'partition'>): string => `${role}#${partition}`;

/** The latest time a timer for work due at `dueAtMs` stands for: the end of its due second. */
export const timerCoversUntilMs = (dueAtMs: number): number => Math.floor(dueAtMs / 1000) * 1000 + 999;

interface Armed {
  /** The lane partitions the timers sent for this second name; undefined once one names none (it wakes whatever it finds). */
  lanePartitions: Set<string> | undefined;
  untilMs: number;
}

/**
 * Timers this process sent, by table, function and second, until that second passes: a stream batch delivered
 * again, or the next entry due in the same second and partition, sends none. Work in a partition no timer of that
 * second names gets one of its own: the timer sent checks only the partitions it names. Another process may send
 * the same timer once more; the wake it brings finds the function awake, or its work gone, and costs a read.
 */
const armed = new Map<string, Armed>();
const MAX_ARMED = 10_000;

function forgetPassed(nowMs: number): void {
  for (const [key, { untilMs }] of armed) if (untilMs <= nowMs) armed.delete(key);
  if (armed.size >= MAX_ARMED) armed.clear();
}

/** Whether the timers sent stand for `work`: one that names no partition, or every partition `work` lies in. */
const covered = (sent: Armed | undefined, work: DueWork): boolean =>
  sent !== undefined && (sent.lanePartitions === undefined || (work.lanePartitions !== undefined && work.lanePartitions.every((name) => sent.lanePartitions?.has(name))));

/** Adds `names` (undefined: the timer wakes whatever it finds) to what a timer names, none once that is too many. */
function nameAlso(named: Set<string> | undefined, names: readonly string[] | undefined): Set<string> | undefined {
  if (named === undefined || names === undefined) return undefined;
  for (const name of names) named.add(name);
  return named.size > MAX_TIMER_LANE_PARTITIONS ? undefined : named;
}

/** Arms a timer for each work's function and due second, unless one sent from this process stands for it already. */
export async function armTimers(ctx: QueueContext, timers: WakeTimers, works: readonly DueWork[]): Promise<void> {
  const nowMs = ctx.nowMs();
  forgetPassed(nowMs);
  const toArm = new Map<string, { timer: WakeTimer; delayS: number; lanePartitions: Set<string> | undefined }>();
  for (const work of works) {
    const key = `${ctx.settings.tableName}\u0000${targetKey(work)}\u0000${Math.floor(work.dueAtMs / 1000)}`;
    if (covered(armed.get(key), work)) continue;
    const pending = toArm.get(key);
    if (pending) {
      pending.lanePartitions = nameAlso(pending.lanePartitions, work.lanePartitions);
      pending.timer.dueAtMs = Math.max(pending.timer.dueAtMs, work.dueAtMs);
      continue;
    }
    const timer: WakeTimer = { role: work.role, partition: work.partition, dueAtMs: work.dueAtMs };
    toArm.set(key, { timer, delayS: timerDelayS(work.role, work.dueAtMs, nowMs), lanePartitions: nameAlso(new Set(), work.lanePartitions) });
  }
  if (toArm.size === 0) return;
  await timers.arm(
    [...toArm.values()].map(({ timer, delayS, lanePartitions }) => ({ timer: lanePartitions ? { ...timer, lanePartitions: [...lanePartitions] } : timer, delayS })),
  );
  for (const [key, { timer, lanePartitions }] of toArm) {
    const sent = armed.get(key);
    armed.set(key, { lanePartitions: sent ? nameAlso(sent.lanePartitions, lanePartitions && [...lanePartitions]) : lanePartitions, untilMs: timerCoversUntilMs(timer.dueAtMs) });
  }
}
