/**
 * Lambda's timeout, done locally. On AWS an invocation still running at its function's timeout is frozen and
 * ended: nothing it would do afterwards reaches any service, and the invocation is reported as failed. Locally
 * a handler's promise cannot be killed, so each invocation runs in an AsyncLocalStorage store holding its
 * deadline, and every AWS call the local IAM layer hands a function (./iam/local-iam.ts) is refused once the
 * invocation that makes it is past that deadline. Promises and timers the invocation leaves behind inherit its
 * store, so their calls are refused too, as a frozen function's would never be made.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { onLogLine } from '../../../functions/shared/log.js';
import type { InvocationReporter } from './invocation-report.js';
import type { SdkClient } from './iam/iam-check.js';

interface Invocation {
  fn: string;
  timeoutMs: number;
  deadlineAtMs: number;
  report: InvocationReporter | undefined;
}

/** The invocation code runs in; undefined inside `outsideInvocation`. */
const invocations = new AsyncLocalStorage<Invocation | undefined>();

// One listener for the process: a line goes to the reporter of the invocation that wrote it, whichever runtime runs it.
onLogLine((line) => {
  const invocation = invocations.getStore();
  invocation?.report?.logged?.(invocation.fn, line);
});

/**
 * Runs `run` as no invocation: what the local runtime writes in an invocation's stead (its report lines, the
 * lifecycle events a bus would carry deployed) is not that function's log.
 */
export function outsideInvocation<T>(run: () => T): T {
  return invocations.run(undefined, run);
}

/** The invocation's failure as Lambda reports it, with the line Lambda logs for it as the message. */
export class LambdaTimeoutError extends Error {
  override readonly name = 'Sandbox.Timedout';
  constructor(
    readonly fn: string,
    readonly timeoutMs: number,
  ) {
    super(`Task timed out after ${(timeoutMs / 1000).toFixed(2)} seconds: the ${fn} function's Lambda timeout, after which nothing it does reaches AWS`);
  }
}

/** The part of Lambda's context the queue's handlers read. */
export interface InvocationContext {
  getRemainingTimeInMillis(): number;
}

/**
 * Runs `handler` as one invocation of function `fn` with a Lambda timeout of `timeoutMs`: the result is the
 * handler's, or LambdaTimeoutError once the timeout passes. The handler's own promise may go on after that;
 * `running` holds it until it settles, so whoever stops the process can wait for it. `report` hears of the
 * invocation's end as Lambda's REPORT line gives it: when the result is had, or at the timeout.
 */
export function invokeWithTimeout<T>(
  fn: string,
  timeoutMs: number,
  handler: (context: InvocationContext) => Promise<T>,
  options: { running?: Set<Promise<unknown>>; report?: InvocationReporter; requestId?: string } = {},
): Promise<T> {
  const startedAtMs = performance.now();
  const invocation: Invocation = { fn, timeoutMs, deadlineAtMs: Date.now() + timeoutMs, report: options.report };
  const context: InvocationContext = { getRemainingTimeInMillis: () => Math.max(0, invocation.deadlineAtMs - Date.now()) };
  return invocations.run(invocation, () => {
    const handled = Promise.resolve().then(() => handler(context));
    const { running } = options;
    if (running) {
      running.add(handled);
      const settled = (): boolean => running.delete(handled);
      void handled.then(settled, settled);
    }
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new LambdaTimeoutError(fn, timeoutMs)), timeoutMs);
    });
    const ended = (timedOut: boolean): void =>
      outsideInvocation(() => options.report?.ended({ fn, requestId: options.requestId ?? randomUUID(), durationMs: performance.now() - startedAtMs, timedOut }));
    return Promise.race([handled, timedOut]).then(
      (result) => {
        clearTimeout(timer);
        ended(false);
        return result;
      },
      (error: unknown) => {
        clearTimeout(timer);
        ended(error instanceof LambdaTimeoutError);
        throw error;
      },
    );
  });
}

/** Throws LambdaTimeoutError when the invocation this runs in (if any) is past its timeout. */
export function assertWithinTimeout(): void {
  const invocation = invocations.getStore();
  if (invocation && Date.now() >= invocation.deadlineAtMs) throw new LambdaTimeoutError(invocation.fn, invocation.timeoutMs);
}

/**
 * Refuses every attempt `client` makes for an invocation past its timeout, retries included, and fails a call
 * whose answer comes after it: a frozen function neither sends nor hears anything. Placed after the SDK's retry
 * middleware, so each attempt is checked; the error is no AWS error, so it is never retried.
 */
export function cutAtLambdaTimeout<Client extends SdkClient>(client: Client): Client {
  client.middlewareStack.add(
    (next) => async (args) => {
      assertWithinTimeout();
      const output = await next(args);
      assertWithinTimeout();
      return output;
    },
    { step: 'finalizeRequest', priority: 'low', name: 'localLambdaTimeout', override: true },
  );
  return client;
}
