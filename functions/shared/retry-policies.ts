/**
 * Custom retry policies, which a job type's `retry: {kind: "custom", name}` can name. Add your own here.
 * Not only the worker runs them: the api ends attempts on status callbacks and the sweeper ends lapsed
 * claims, so this module stays apart from the handlers, whose code those two functions do not bundle.
 */
import type { CustomRetryPolicies, CustomRetryPolicy } from '../../lib/domain/retry.js';

/** Retries only timeouts and 5xx-like failures, waiting 5 s more on each attempt. */
const linearOnTransient: CustomRetryPolicy = ({ attempt, failure }) => {
  const transient = failure.error.class === 'TimeoutError' || (failure.httpStatus ?? 0) >= 500;
  return transient ? { retry: true, delayMs: attempt * 5_000 } : { retry: false };
};

export const retryPolicies: CustomRetryPolicies = { linear_on_transient: linearOnTransient };
