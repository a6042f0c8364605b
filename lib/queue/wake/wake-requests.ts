/**
 * Waking a sleeping function: the poller of a partition of shards, or the sweeper. An idle queue runs neither
 * (queue/wake/ensure-awake.ts); a write that needs one awake sooner than its next minute tick starts it through this, as
 * Lambda's asynchronous invoke does deployed and the local runtime's invocations do locally.
 */

import type { WakeRequest } from '../../domain/invocations.js';
import { shardsOfPartition, type WakeRole } from '../../store/keys.js';

/** The wake of `role`'s function: for a poller, of its partition's shards. */
export function wakeRequestFor(settings: { pollerPartitions: number; shards: number }, role: WakeRole, partition: number): WakeRequest {
  return role === 'poller' ? { role, shards: shardsOfPartition(partition, settings.pollerPartitions, settings.shards) } : { role };
}

