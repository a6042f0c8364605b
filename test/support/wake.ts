/** Sleeping pollers and sweepers (lib/queue/wake/lease-keeper.ts) in tests that need one to stay whatever is due. */
import type { QueueContext } from '../../lib/queue/context.js';
import { wakeKey, type WakeRole } from '../../lib/store/keys.js';
import { holdParams, writeWake } from '../../lib/store/wake.js';

/**
 * Asks, as a writer would, for someone of `role` awake for the next hour (every poller partition): an invocation
 * then stays whether or not anything is due, as every one did before pollers slept.
 */
export async function holdAwake(ctx: QueueContext, role: WakeRole = 'poller'): Promise<void> {
  const partitions = role === 'poller' ? ctx.settings.pollerPartitions : 1;
  for (let partition = 0; partition < partitions; partition++) await writeWake(ctx, holdParams(wakeKey(role, partition), ctx.nowMs() + 3_600_000));
}
