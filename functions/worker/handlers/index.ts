/**
 * The worker's code: handlers a job type's `target: {kind: "handler", name}`
 * can name, and custom retry policies `retry: {kind: "custom", name}` can name.
 * Add your own here.
 */
import type { CustomRetryPolicy } from '../../../lib/domain/retry.js';
import type { WorkerRegistry } from '../../../lib/queue/worker.js';
import { awaitCallback, echo, fail, sleep } from './builtin.js';

/** Retries only timeouts and 5xx-like failures, waiting 5 s more on each attempt. */
const linearOnTransient: CustomRetryPolicy = ({ attempt, failure }) => {
  const transient = failure.error.class === 'TimeoutError' || (failure.httpStatus ?? 0) >= 500;
  return transient ? { retry: true, delayMs: attempt * 5_000 } : { retry: false };
};

export const registry: WorkerRegistry = {
  handlers: { echo, sleep, fail, await_callback: awaitCallback },
  retryPolicies: { linear_on_transient: linearOnTransient },
};
