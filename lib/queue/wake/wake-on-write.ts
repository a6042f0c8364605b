/**
 * The waker: what wakes a sleeping poller or sweeper once work is written for it (a lane entry, a schedule's next
 * firing, a bulk operation). It reads the table's stream, so it judges each entry after its write committed, and no
 * writer reads, holds or invokes anything on its way: an entry due soon (timers.ts's dueSoon) is made sure of at
 * once (ensureAwake: a hold, and a wake unless someone awake will honour it); one due later, within a tick's reach,
 * gets a timer (queue/wake/timers.ts) that comes back to the waker about when it falls due, and wakes its function
 * then if the entry is still there. Later still, a minute tick finds it and arms a timer for the earliest work.
 */
import type { WakeTimer, WakeTimers } from '../../domain/invocations.js';
import { laneBucketOf, SCHEDULES_PARTITION, type WakingEntry } from '../../store/keys.js';
import { queryDue } from '../../store/due-index.js';
import { EVERY_LANE } from '../../store/wake.js';
import type { QueueContext } from '../context.js';
import { ensureAwake, pollerPartitionOfShard, TICK_COVER_MS, wakeEveryPoller } from './ensure-awake.js';
import { armTimers, dueSoon, targetKey, timerCoversUntilMs, type DueWork } from './timers.js';

/** Who acts on a written entry, and when: a lane's poller or the sweeper, the poller that fires schedules, the sweeper for a bulk operation. */
function workOf(ctx: QueueContext, entry: Exclude<WakingEntry, { kind: 'jobType' }>, nowMs: number): DueWork {
  switch (entry.kind) {
    case 'operation':
      return { role: 'sweeper', partition: 0, dueAtMs: nowMs };
    case 'schedule':
      return { role: 'poller', partition: 0, dueAtMs: entry.dueAtMs, lanePartitions: [entry.partition] };
    case 'lane':
      return {
        ...(entry.lane.kind === 'queued' ? { role: 'poller', partition: pollerPartitionOfShard(ctx, entry.shard) } : { role: 'sweeper', partition: 0 }),
        dueAtMs: entry.dueAtMs,
        lanePartitions: [entry.partition],
      };
  }
}

/**
 * The types whose lanes a poller's work lies in, from the partitions it names: every lane when it names none (the
 * timer of an invocation that left work behind its earliest), none for a schedule's.
 */
function lanesOf(lanePartitions: readonly string[] | undefined): string[] {
  if (lanePartitions === undefined) return [EVERY_LANE];
  return lanePartitions.flatMap((name) => {
    const lane = laneBucketOf(name)?.lane;
    return lane?.kind === 'queued' ? [lane.type] : [];
  });
}

/** A function to make sure of, for work due by `dueAtMs` in the lanes of the types named. */
type TargetWork = Omit<DueWork, 'lanePartitions'> & { lanes: Set<string> };

/** One wake per function, for the latest due time of those given (a hold must outlast them all) and every lane they lie in. */
function latestPerTarget(wakes: Iterable<DueWork>): TargetWork[] {
  const latest = new Map<string, TargetWork>();
  for (const wake of wakes) {
    const key = targetKey(wake);
    const found = latest.get(key) ?? { role: wake.role, partition: wake.partition, dueAtMs: wake.dueAtMs, lanes: new Set<string>() };
    found.dueAtMs = Math.max(found.dueAtMs, wake.dueAtMs);
    for (const lane of lanesOf(wake.lanePartitions)) found.lanes.add(lane);
    latest.set(key, found);
  }
  return [...latest.values()];
}

/** Wakes whoever must act on the written entries: now for those due soon, by a timer for those due within a tick's reach. */
export async function wakeForWrittenEntries(ctx: QueueContext, entries: readonly WakingEntry[], timers: WakeTimers): Promise<void> {
  const nowMs = ctx.nowMs();
  const soon: DueWork[] = [];
  const later: DueWork[] = [];
  // A type that claims jobs, written: one resumed (or given room again) has its queued jobs due at once, wherever
  // the walks stand, and every poller partition must look.
  const typeWritten = entries.some((entry) => entry.kind === 'jobType');
  for (const work of entries.flatMap((entry) => (entry.kind === 'jobType' ? [] : [workOf(ctx, entry, nowMs)]))) {
    // Past a tick's cover, a minute tick finds it (queue/wake/lease-keeper.ts).
    if (work.dueAtMs >= nowMs + TICK_COVER_MS) continue;
    (dueSoon(work.role, work.dueAtMs, nowMs) ? soon : later).push(work);
  }
  // First: its holds are what the work due soon in the same batch then finds, where it would otherwise ask again.
  if (typeWritten) await wakeEveryPoller(ctx);
  await Promise.all(latestPerTarget(soon).map((work) => ensureAwake(ctx, work.role, work.partition, { dueAtMs: work.dueAtMs, writtenAtMs: nowMs, lanes: [...work.lanes] })));
  await armTimers(ctx, timers, later);
}

/**
 * Whether a timer's work is still there: an entry due by the end of its second in a lane partition it names. A claim
 * renewed, a job claimed, ended or moved since leaves none, and the timer wakes no one: the entry's new place armed
 * its own. A timer that names no partition (a poller's or sweeper's, for the earliest work it left) always wakes:
 * the work behind that earliest is found only by the invocation it starts.
 */
async function stillDue(ctx: QueueContext, timer: WakeTimer): Promise<boolean> {
  // Only the index's partitions of due work are read: a message names nothing else.
  const lanePartitions = timer.lanePartitions?.filter((name) => name === SCHEDULES_PARTITION || laneBucketOf(name) !== undefined);
  if (!lanePartitions || lanePartitions.length === 0) return true;
  const found = await Promise.all(lanePartitions.map((lanePartition) => queryDue(ctx, lanePartition, timerCoversUntilMs(timer.dueAtMs), 1)));
  return found.some((entries) => entries.length > 0);
}

/** Timers that came back: whoever they name is made sure of now, once per function, where their work is still there. */
export async function wakeForTimers(ctx: QueueContext, fired: readonly WakeTimer[]): Promise<void> {
  const checked = await Promise.all(fired.map(async (timer) => ((await stillDue(ctx, timer)) ? [timer] : [])));
  await Promise.all(
    latestPerTarget(checked.flat()).map((timer) => ensureAwake(ctx, timer.role, timer.partition, { dueAtMs: Math.max(timer.dueAtMs, ctx.nowMs()), lanes: [...timer.lanes] })),
  );
}
