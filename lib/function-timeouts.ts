/**
 * The Lambda timeouts of the functions whose work must fit inside them. The
 * stack sets them from here, and what has to fit (DynamoDB retry budgets, job
 * timeouts) is checked against these same numbers.
 */

/** API Gateway's HTTP API waits at most 30 s for the api to answer. */
export const API_TIMEOUT_S = 29;

export const AUTHORIZER_TIMEOUT_S = 10;
