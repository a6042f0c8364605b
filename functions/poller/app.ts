/** The poller function: one invocation loops for about a minute, so an every-minute schedule gives sub-second lag. */
import type { Context } from 'aws-lambda';
import type { QueueContext } from '../../lib/config.js';
import { runPollerLoop, type PollResult, type WorkerInvoker } from '../../lib/poller.js';
import { log } from '../shared/log.js';

/** Time left unused at the end of an invocation, so the loop never runs into the Lambda timeout. */
const INVOCATION_HEADROOM_MS = 5_000;

export interface PollerDeps {
  ctx: QueueContext;
  invoker: WorkerInvoker;
  /** Ends the loop early (the local runtime's shutdown). */
  signal?: AbortSignal;
}

export function createPollerHandler(deps: PollerDeps) {
  return async (_event: unknown, context: Pick<Context, 'getRemainingTimeInMillis'>): Promise<PollResult> => {
    const runForMs = Math.min(deps.ctx.settings.pollerRunMs, context.getRemainingTimeInMillis() - INVOCATION_HEADROOM_MS);
    const totals = await runPollerLoop(deps.ctx, {
      invoker: deps.invoker,
      runForMs,
      ...(deps.signal ? { signal: deps.signal } : {}),
      onError: (error) => log('error', 'poll failed', { error }),
    });
    log('info', 'poller run done', { ...totals });
    return totals;
  };
}
