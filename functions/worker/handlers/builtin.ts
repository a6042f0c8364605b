/** The built-in handlers of DESIGN §6, for demos and tests. */
import { NonRetryableError } from '../../../lib/domain/errors.js';
import { ownEntry } from '../../../lib/domain/own.js';
import { AWAIT_CALLBACK, type JobHandler } from '../../../lib/queue/worker.js';

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
