/** What every queue operation is handed: the table, the settings, the clock, and the ports to other functions. */
import type { Db } from '../store/send.js';
import { discardLifecycleEvents, type LifecyclePublisher } from '../domain/lifecycle-events.js';
import type { Job } from '../domain/job.js';
import type { WakeInvoker, WakeTimers } from '../domain/invocations.js';
import { type QueueSettings } from './settings.js';

/** Collects the slots of attempts ending close together into one write per counter (queue/limits/slot-returns.ts). */
export interface SlotReturnQueue {
  add(job: Pick<Job, 'type' | 'heldSlots'>): Promise<void>;
}

/**
 * Everything the queue needs to act: the client, the settings, where lifecycle events go, and the clock and
 * randomness, injected so tests control them.
 */
export interface QueueContext {
  db: Db;
  settings: QueueSettings;
  events: LifecyclePublisher;
  nowMs: () => number;
  random: () => number;
  /** Where ended attempts give their slots back; without one, each gives them back on its own. */
  slotReturns?: SlotReturnQueue;
  /** Starts a sleeping poller or sweeper (queue/wake/ensure-awake.ts); without one, nothing is woken and the minute ticks alone start them. */
  waker?: WakeInvoker;
  /**
   * Where a poller or sweeper about to sleep arms a timer for the earliest work it leaves (queue/wake/timers.ts);
   * without them, it stays awake for that work instead.
   */
  wakeTimers?: WakeTimers;
}

export function createQueueContext(
  db: Db,
  settings: QueueSettings,
  overrides: Partial<Pick<QueueContext, 'nowMs' | 'random' | 'events' | 'waker' | 'wakeTimers'>> = {},
): QueueContext {
  return {
    db,
    settings,
    events: overrides.events ?? discardLifecycleEvents,
    nowMs: overrides.nowMs ?? Date.now,
    random: overrides.random ?? Math.random,
    ...(overrides.waker ? { waker: overrides.waker } : {}),
    ...(overrides.wakeTimers ? { wakeTimers: overrides.wakeTimers } : {}),
  };
}
