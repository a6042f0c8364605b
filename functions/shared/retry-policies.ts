/**
 * The custom retry policies of the handler module, which a job type's `retry: {kind: "custom", name}` can
 * name. Not only the worker runs them: the api ends attempts on status callbacks and the sweeper ends lapsed
 * claims, so both load the handler module for them.
 */
import { registry } from '../worker/handlers/index.js';

export const retryPolicies = registry.retryPolicies;
