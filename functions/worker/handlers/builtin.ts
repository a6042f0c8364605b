/**
 * This repository's handler module: the built-in handlers, for demos and tests, and one custom retry policy.
 * A deployment that names no handler module of its own runs these (package.json maps `#handler-module` here).
 */
import { NonRetryableError } from '../../../lib/domain/errors.js';
import { ownEntry } from '../../../lib/domain/own.js';
import type { CustomRetryPolicies, CustomRetryPolicy } from '../../../lib/domain/retry.js';
import { AWAIT_CALLBACK, type JobHandler } from '../../../lib/queue/attempt/run-batch.js';

const field = (data: unknown, name: string): unknown =>
  typeof data === 'object' && data !== null ? ownEntry(data as Record<string, unknown>, name) : undefined;

/** Succeeds with its data as the result. */
export const echo: JobHandler = (data) => data;

/** Waits `data.ms` milliseconds, or until the attempt is aborted (timeout or lost claim). */
export const sleep: JobHandler = async (data, context) => {
  const ms = Number(field(data, 'ms') ?? 0);
  await new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    context.signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
  });
  return { slept_ms: ms };
};

/** Throws `data.message`; `data.retryable: false` makes the failure final. */
export const fail: JobHandler = (data) => {
  const message = String(field(data, 'message') ?? 'failed on purpose');
  if (field(data, 'retryable') === false) throw new NonRetryableError(message);
  throw new Error(message);
};

/** Leaves the job awaiting a status callback. */
export const awaitCallback: JobHandler = () => AWAIT_CALLBACK;

export const handlers: Readonly<Record<string, JobHandler>> = { echo, sleep, fail, await_callback: awaitCallback };

/** Retries only timeouts and 5xx-like failures, waiting 5 s more on each attempt. */
const linearOnTransient: CustomRetryPolicy = ({ attempt, failure }) => {
  const transient = failure.error.class === 'TimeoutError' || (failure.httpStatus ?? 0) >= 500;
  return transient ? { retry: true, delayMs: attempt * 5_000 } : { retry: false };
};

export const retryPolicies: CustomRetryPolicies = { linear_on_transient: linearOnTransient };
