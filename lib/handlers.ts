/**
 * What a handler module imports (the package's `handlers` export): the types of a handler and of a custom
 * retry policy, the errors that steer retries, and AWAIT_CALLBACK.
 */
import type { CustomRetryPolicies } from './domain/retry.js';
import type { JobHandler } from './targets/handler.js';

export { AWAIT_CALLBACK, type JobContext, type JobHandler } from './targets/handler.js';
export { ClaimLostError, NonRetryableError, RetryAfterError } from './domain/errors.js';
export type { AttemptFailure, CustomRetryPolicies, CustomRetryPolicy } from './domain/retry.js';
export type { Job } from './domain/job.js';
export type { ProgressReport } from './domain/progress.js';

/**
 * A handler module's exports: `handlers`, which a job type's `target: {kind: "handler", name}` names, and
 * optionally `retryPolicies`, which its `retry: {kind: "custom", name}` names. The worker runs the handlers;
 * the api and the sweeper load the module too, for the names and the retry policies.
 */
export interface HandlerModule {
  handlers: Readonly<Record<string, JobHandler>>;
  retryPolicies?: CustomRetryPolicies;
}
