/**
 * The Lambda timeouts of the functions whose work must fit inside them. The
 * stack sets them from here, and what has to fit (DynamoDB retry budgets, job
 * timeouts) is checked against these same numbers.
 */
import { MAX_DYNAMODB_CALL_MS } from '../store/client.js';

/** API Gateway's HTTP API waits at most 30 s for the api to answer. */
export const API_TIMEOUT_S = 29;

export const AUTHORIZER_TIMEOUT_S = 10;

/** Lambda's longest: one worker invocation runs a whole batch. */
export const WORKER_TIMEOUT_S = 900;

/** Publishing an attempt's lifecycle events to EventBridge, its own retries included. */
const LIFECYCLE_EVENTS_ALLOWANCE_MS = 30_000;

/**
 * The longest `timeout_s` of a job whose attempt runs inside the worker
 * function (`handler` and `lambda` targets; for `http`, `request_timeout_s`).
 * The jobs of a batch run side by side (up to WORKER_CONCURRENCY at once), so
 * each has the whole invocation but for what the worker does around its
 * attempt: renewing a claim that reached it late and recording an at_most_once
 * start before it, recording the outcome after it (a DynamoDB call each, up to
 * MAX_DYNAMODB_CALL_MS), and publishing the outcome's lifecycle events:
 * 900 s - 3 × 50 s - 30 s = 720 s. (With WORKER_BATCH_SIZE above
 * WORKER_CONCURRENCY, a batch's later jobs start only as earlier ones end, and
 * long ones can run out of the invocation's time.)
 */
export const MAX_WORKER_ATTEMPT_S = Math.floor(WORKER_TIMEOUT_S - (3 * MAX_DYNAMODB_CALL_MS + LIFECYCLE_EVENTS_ALLOWANCE_MS) / 1000);
