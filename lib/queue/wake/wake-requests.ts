/**
 * Waking a sleeping function: the poller of a partition of shards, or the sweeper. An idle queue runs neither
 * (queue/wake/ensure-awake.ts); a write that needs one awake sooner than its next minute tick starts it through this, as
 * Lambda's asynchronous invoke does deployed and the local runtime's invocations do locally.
 */

import { shardsOfPartition, type WakeRole } from '../../store/keys.js';

/** What a wake starts: the poller of the partition owning `shards`, or the sweeper. */
export type WakeRequest = { role: 'poller'; shards: number[] } | { role: 'sweeper' };

/** The event a woken function receives: its minute tick's, marked as a wake. */
export type WakeEvent = { wake: true; shards?: number[] };

export interface WakeInvoker {
  /** Starts the function asynchronously; resolves once the start was accepted, throws when it was refused. */
  wake(request: WakeRequest): Promise<void>;
}

export function wakeEventOf(request: WakeRequest): WakeEvent {
  return request.role === 'poller' ? { wake: true, shards: request.shards } : { wake: true };
}

/** The wake of `role`'s function: for a poller, of its partition's shards. */
export function wakeRequestFor(settings: { pollerPartitions: number; shards: number }, role: WakeRole, partition: number): WakeRequest {
  return role === 'poller' ? { role, shards: shardsOfPartition(partition, settings.pollerPartitions, settings.shards) } : { role };
}

/** What started an invocation: its minute tick, or a wake. */
export type StartKind = 'tick' | 'wake';

/** A minute tick's event (`{ shards }` or `{}`), or a wake's (wakeEventOf). */
export function startKindOf(event: unknown): StartKind {
  return typeof event === 'object' && event !== null && (event as { wake?: unknown }).wake === true ? 'wake' : 'tick';
}
