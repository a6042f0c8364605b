/**
 * What bounds the requests a deployed api serves at once, done locally: Lambda
 * runs each request in an instance of its own up to the function's
 * concurrency, and API Gateway refuses what it cannot pass on with 429 before
 * anything reaches the function. Locally every request shares one process and
 * one DynamoDB Local, so without a bound a burst runs everything at once,
 * every DynamoDB call misses its budget, and the SDK's and the client's
 * retries add load just when there is none to spare.
 *
 * So requests run at most `concurrency` at once; up to `maxQueued` more wait
 * their turn in arrival order (the burst Lambda would absorb by starting
 * instances); past that a request is refused at once with 429 and
 * `Retry-After`, having changed nothing.
 */
import type { APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { json } from '../../../functions/shared/http.js';
import type { ApiHandler } from '../http-server.js';

export interface AdmissionLimits {
  /** Requests served at once. */
  concurrency: number;
  /** Requests waiting for a turn; one more is refused. */
  maxQueued: number;
  /** What a refused request is told to wait before trying again. */
  retryAfterS: number;
}

/** Locally, DynamoDB Local serves the whole machine's calls: more at once only queue inside it and miss their budgets. */
export const LOCAL_API_ADMISSION: AdmissionLimits = { concurrency: 16, maxQueued: 512, retryAfterS: 1 };

/** API Gateway's answer when it throttles a request: `{"message": "Too Many Requests"}`, with when to try again. */
export function throttledAnswer(retryAfterS: number): APIGatewayProxyStructuredResultV2 {
  const answer = json(429, { message: 'Too Many Requests' });
  return { ...answer, headers: { ...answer.headers, 'retry-after': String(retryAfterS) } };
}

export interface AdmissionGauge {
  /** Requests being served. */
  running: number;
  /** Requests waiting for a turn. */
  queued: number;
  /** Requests refused with 429 since the start. */
  refused: number;
}

/** `handler`, served at most `limits.concurrency` at once behind a queue of at most `limits.maxQueued`. */
export function admitted(handler: ApiHandler, limits: AdmissionLimits): ApiHandler & { gauge: () => AdmissionGauge } {
  const waiting: (() => void)[] = [];
  let running = 0;
  let refused = 0;
  const release = (): void => {
    const next = waiting.shift();
    if (next) next();
    else running--;
  };
  const serve: ApiHandler = async (event, context) => {
    if (running >= limits.concurrency) {
      if (waiting.length >= limits.maxQueued) {
        refused++;
        return throttledAnswer(limits.retryAfterS);
      }
      // The turn is handed over by `release` without lowering `running`, so no newcomer can slip in between.
      await new Promise<void>((resolve) => waiting.push(resolve));
    } else {
      running++;
    }
    try {
      return await handler(event, context);
    } finally {
      release();
    }
  };
  return Object.assign(serve, { gauge: () => ({ running, queued: waiting.length, refused }) });
}
