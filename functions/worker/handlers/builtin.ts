/** The built-in handlers of DESIGN §6, for demos and tests. */
import { NonRetryableError } from '../../../lib/errors.js';
import { AWAIT_CALLBACK, type JobHandler } from '../../../lib/worker.js';

const field = (data: unknown, name: string): unknown =>
  typeof data === 'object' && data !== null ? (data as Record<string, unknown>)[name] : undefined;

/** Succeeds with its data as the result. */
export const echo: JobHandler = (data) => data;

/** Waits `data.ms` milliseconds, heart-beating as it goes when `data.heartbeat_ms` is set; stops when the attempt times out. */
export const sleep: JobHandler = async (data, context) => {
  const ms = Number(field(data, 'ms') ?? 0);
  const heartbeatMs = Number(field(data, 'heartbeat_ms') ?? 0);
  const until = Date.now() + ms;
  while (Date.now() < until && !context.signal.aborted) {
    const step = Math.min(until - Date.now(), heartbeatMs > 0 ? heartbeatMs : until - Date.now());
    await new Promise((resolve) => setTimeout(resolve, step));
    if (heartbeatMs > 0 && Date.now() < until) await context.heartbeat();
  }
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
