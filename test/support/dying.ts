/**
 * A process killed at a chosen call, for one context only: the calls it picks fail as a dead process never makes
 * them, and the rest go through. Wraps the context's `db`, not the SDK client, so a live actor sharing that
 * client (a second poller firing the same schedule at once) is left untouched.
 */
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import type { QueueContext } from '../../lib/queue/context.js';
import { PARTITION_PREFIX } from '../../lib/store/keys.js';

/** `ctx`, with every call `killed` picks refused as `who` having been killed; `killed` sees each command in turn. */
export function dyingAt(ctx: QueueContext, killed: (command: unknown) => boolean, who: string): QueueContext {
  const send = (command: unknown) => (killed(command) ? Promise.reject(new Error(`${who} was killed`)) : ctx.db.send(command as PutCommand));
  return { ...ctx, db: { send } as unknown as QueueContext['db'] };
}

/** The poller's context, killed as it writes a schedule: after the jobs of its fires were enqueued, before the schedule moved on. */
export function dyingBeforeAdvance(ctx: QueueContext): QueueContext {
  return dyingAt(ctx, (command) => command instanceof PutCommand && String(command.input.Item?.pk).startsWith(PARTITION_PREFIX.schedule), 'the poller');
}
