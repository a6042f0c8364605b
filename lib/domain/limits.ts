/**
 * The time limits the queue's work must fit: how long one DynamoDB call may
 * take, retries included, and the Lambda timeouts of the functions that make
 * those calls. The stack sets the timeouts from here, and what has to fit
 * (the cursor's safety margin, job timeouts) is checked against these numbers.
 */

/** What bounds one DynamoDB call: how often the SDK tries it, and how long each try may take. */
export interface DynamoCallLimits {
  maxAttempts: number;
  requestHandler: {
    connectionTimeout: number;
    requestTimeout: number;
    /** Without it the SDK only logs a warning when requestTimeout passes, and the call goes on waiting. */
    throwOnRequestTimeout: true;
  };
}

/**
 * Writes must survive brief throttling and dropped connections, so the SDK
 * retries with backoff; but a write must also never be in flight longer than
 * the cursor's safety margin (60 s by default), or it could land in a bucket a
 * cursor has already passed. These bounds keep one call at most 50 s:
 * 5 tries of at most 2 s to connect and 5 s to answer, plus the SDK's backoff
 * between them (at most 1 + 2 + 4 + 8 s for throttling).
 */
export const DYNAMODB_CALL_LIMITS: DynamoCallLimits = {
  maxAttempts: 5,
  requestHandler: { connectionTimeout: 2_000, requestTimeout: 5_000, throwOnRequestTimeout: true },
};

/**
 * Lambda's asynchronous invokes (a worker batch from the poller, a wake from any writer) and EventBridge's
 * PutEvents: AWS queues the event and answers in tens of milliseconds. The SDK's own default waits for an
 * answer as long as the socket lives, and a writer can wait on a wake: a claim renewal held that long lapses
 * (the worker renews at half the visibility timeout, 15 s by default) and the sweeper runs the job again. 2
 * tries of at most 1 s to connect and 2 s to answer, with one backoff (at most 1 s), keep a call at most 7 s,
 * within half the default visibility timeout.
 */
export const ASYNC_DELIVERY_CALL_LIMITS: DynamoCallLimits = {
  maxAttempts: 2,
  requestHandler: { connectionTimeout: 1_000, requestTimeout: 2_000, throwOnRequestTimeout: true },
};

/**
 * The api and the authorizer must answer within their Lambda timeouts
 * (below), and a request makes a few calls one after
 * another: 2 tries of at most 0.5 s to connect and 1 s to answer, with one
 * backoff (at most 1 s), keep a call at most 4 s, so the authorizer's two calls
 * fit its 10 s and five of the api's fit its 29 s. A write from a request is
 * then in flight for far less than the cursor's safety margin too.
 */
export const REQUEST_PATH_DYNAMODB_CALL_LIMITS: DynamoCallLimits = {
  maxAttempts: 2,
  requestHandler: { connectionTimeout: 500, requestTimeout: 1_000, throwOnRequestTimeout: true },
};

/**
 * Parameter Store's GetParameter: the callback token parameter, read at a cold start and again every
 * SECRET_CACHE_MS (lib/aws/secrets.ts), its latest version and then, when that changed, the one before. The
 * authorizer reads it to admit a callback, its only call for one, and must answer within AUTHORIZER_TIMEOUT_S; the
 * worker reads it to sign an http target's callback URL, before the request and within the attempt. Parameter
 * Store answers in tens of milliseconds: 2 tries of at most 0.5 s to connect and 1 s to answer, with one backoff
 * (at most 1 s), keep a call at most 4 s and the two of a read at most 8 s. A refresh that fails keeps serving the
 * value read before.
 */
export const SECRET_READ_CALL_LIMITS: DynamoCallLimits = {
  maxAttempts: 2,
  requestHandler: { connectionTimeout: 500, requestTimeout: 1_000, throwOnRequestTimeout: true },
};

/**
 * The same request paths on DynamoDB Local (`npm start`): it answers in milliseconds when idle, but runs every
 * write on one thread, so under load a call waits its turn for a second or more. A try abandoned at 1 s is
 * still carried out there, and its retry only lengthens the queue; so each try may take as long as the
 * background calls' (5 s), and a call stays within 15 s, under the api's timeout. What the client sees of a
 * call that still misses it is a 503 with Retry-After, as on AWS.
 */
export const LOCAL_REQUEST_PATH_DYNAMODB_CALL_LIMITS: DynamoCallLimits = {
  maxAttempts: 2,
  requestHandler: { connectionTimeout: 2_000, requestTimeout: 5_000, throwOnRequestTimeout: true },
};

/**
 * The SDK's longest wait before retry `n` (from 0): its standard strategy waits a random share of
 * min(base × 2^n, 20 s), the base being 1 s after throttling and far less after other errors.
 */
export const SDK_THROTTLING_BACKOFF_BASE_MS = 1_000;
const SDK_MAX_BACKOFF_MS = 20_000;

/** The longest one call may take under `limits`, every try and every backoff between them included. */
export function maxDynamoCallMs({ maxAttempts, requestHandler }: DynamoCallLimits): number {
  let backoffMs = 0;
  for (let retry = 0; retry < maxAttempts - 1; retry++) backoffMs += Math.min(SDK_THROTTLING_BACKOFF_BASE_MS * 2 ** retry, SDK_MAX_BACKOFF_MS);
  return maxAttempts * (requestHandler.connectionTimeout + requestHandler.requestTimeout) + backoffMs;
}

/** The longest one DynamoDB call may take, retries included; the cursor's safety margin must exceed it. */
export const MAX_DYNAMODB_CALL_MS = maxDynamoCallMs(DYNAMODB_CALL_LIMITS);


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

/**
 * `lambda` targets: a synchronous invoke, answered only once the function has run, which may take the job's whole
 * `timeout_s`. The attempt's timeout aborts the call (its signal), as it ends any attempt, within
 * MAX_WORKER_ATTEMPT_S, which leaves the worker's Lambda timeout room to record the outcome. A request timeout
 * shorter than that would cut a long run short, so it is the longest attempt: a backstop for a call no abort
 * reaches. One try: the SDK retries a dropped connection or a server error, after which the function may have
 * run, and would run it again within the same attempt, unseen by the queue (twice, for an at_most_once job). A
 * failed invoke, a throttled one too, fails the attempt, and the type's retry policy decides, counted. 1 s to
 * connect, as for asynchronous invokes.
 */
export const TARGET_LAMBDA_CALL_LIMITS: DynamoCallLimits = {
  maxAttempts: 1,
  requestHandler: { connectionTimeout: 1_000, requestTimeout: MAX_WORKER_ATTEMPT_S * 1000, throwOnRequestTimeout: true },
};
