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
 * Work due this soon is not left to a timer: a timer's second of precision, and its trip through the queue and the
 * waker, would make it late. The waker makes sure of it at once; an awake poller or sweeper stays for it.
 */
export const DUE_SOON_MS = 2_000;
/** A timer comes back at least this long before its work falls due: the waker's reads and the wake's start. */
export const TIMER_LEAD_MS = 200;
/** SQS delays a message at most 15 minutes. */
export const MAX_TIMER_DELAY_S = 900;

/** Work for a function, due at a time, in the lane partitions named (none: not in a lane, such as a schedule). */
export interface DueWork {
  role: WakeRole;
  partition: number;
  dueAtMs: number;
  lanePartitions?: readonly string[];
}

const targetKey = ({ role, partition }: Pick<WakeTimer, 'role' | 'partition'>): string => `${role}#${partition}`;

/**
 * Timers this process sent, by table, function and second, until that second passes: a stream batch delivered
 * again, or the next entry due in the same second, sends none. Another process may send the same timer once more;
 * the wake it brings finds the function awake, or its work gone, and costs a read.
 */
const armed = new Map<string, number>();
const MAX_ARMED = 10_000;

function forgetPassed(nowMs: number): void {
  for (const [key, untilMs] of armed) if (untilMs <= nowMs) armed.delete(key);
  if (armed.size >= MAX_ARMED) armed.clear();
}

/**
 * Arms a timer for each work's function and due second not armed yet from this process. SQS counts delays in whole
 * seconds: the message comes back within the second before its due second begins (less TIMER_LEAD_MS), so before
 * every entry due in that second, and on average about a second before.
 */
export async function armTimers(ctx: QueueContext, timers: WakeTimers, works: readonly DueWork[]): Promise<void> {
  const nowMs = ctx.nowMs();
  forgetPassed(nowMs);
  const toArm = new Map<string, { timer: WakeTimer; delayS: number; lanePartitions: Set<string> | undefined }>();
  for (const work of works) {
    const second = Math.floor(work.dueAtMs / 1000);
    const key = `${ctx.settings.tableName}\u0000${targetKey(work)}\u0000${second}`;
    if (armed.has(key)) continue;
    const pending = toArm.get(key);
    if (pending) {
      // One timer checks every partition whose entries it stands for; one that would name too many names none.
      if (!work.lanePartitions) pending.lanePartitions = undefined;
      else for (const name of work.lanePartitions) pending.lanePartitions?.add(name);
      if (pending.lanePartitions && pending.lanePartitions.size > MAX_TIMER_LANE_PARTITIONS) pending.lanePartitions = undefined;
      pending.timer.dueAtMs = Math.max(pending.timer.dueAtMs, work.dueAtMs);
      continue;
    }
    const delayS = Math.min(MAX_TIMER_DELAY_S, Math.max(0, Math.floor((second * 1000 - TIMER_LEAD_MS - nowMs) / 1000)));
    const lanePartitions = work.lanePartitions && work.lanePartitions.length <= MAX_TIMER_LANE_PARTITIONS ? new Set(work.lanePartitions) : undefined;
    toArm.set(key, { timer: { role: work.role, partition: work.partition, dueAtMs: work.dueAtMs }, delayS, lanePartitions });
  }
  if (toArm.size === 0) return;
  await timers.arm(
    [...toArm.values()].map(({ timer, delayS, lanePartitions }) => ({ timer: lanePartitions ? { ...timer, lanePartitions: [...lanePartitions] } : timer, delayS })),
  );
  for (const [key, { timer }] of toArm) armed.set(key, timer.dueAtMs);
}
