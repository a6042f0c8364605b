/** The `handler` target: a function in the worker's own code, looked up by name. */
import { NonRetryableError, RetryAfterError } from '../domain/errors.js';
import type { Job } from '../domain/job.js';
import type { AttemptFailure } from '../domain/retry.js';
import type { ProgressReport } from '../domain/progress.js';
import type { TargetOutcome, TargetRun } from './target.js';

/** Returned by a handler to leave the job `awaiting_callback` until a status callback or `timeout_s`. */
export const AWAIT_CALLBACK: unique symbol = Symbol.for('delayed-job-queue.await-callback');

export interface JobContext {
  readonly job: Readonly<Job>;
  /**
   * Extends the claim to `extendS` (default: the type's visibility timeout) from now. The worker already
   * renews the claim while the handler runs; call this to hold it longer than that, e.g. before a long pause.
   * Throws ClaimLostError when the attempt no longer holds the claim.
   */
  heartbeat(extendS?: number): Promise<void>;
  /**
   * Records how far the attempt got, `{percent?, message?, data?}`, on the job (GET and the dashboard show
   * the latest). Throws ValidationError for a percent outside 0–100 or a message over 1 000 characters,
   * PayloadTooLargeError over 8 KiB, ClaimLostError when the attempt no longer holds the claim.
   */
  progress(report: ProgressReport): Promise<void>;
  /** Aborted when the attempt reaches the type's `timeout_s` or loses its claim. */
  readonly signal: AbortSignal;
  /**
   * This attempt's W3C `traceparent`: a span of the trace the job was enqueued in, whose parent is the enqueue's.
   * Parent the handler's own spans and requests on it. Undefined when the job was enqueued without one.
   */
  readonly traceparent?: string | undefined;
}

export type JobHandler = (data: unknown, context: JobContext) => unknown;

export function failureFromError(error: unknown): AttemptFailure {
  if (!(error instanceof Error)) return { error: { class: 'NonError', message: String(error) }, retryable: true };
  return {
    error: { class: error.name, message: error.message, ...(error.stack ? { trace: error.stack } : {}) },
    retryable: !(error instanceof NonRetryableError),
    ...(error instanceof RetryAfterError ? { retryAfterMs: error.retryAfterMs } : {}),
  };
}

export async function runHandlerTarget(handler: JobHandler, run: TargetRun): Promise<TargetOutcome> {
  try {
    const value = await handler(run.job.data, { job: run.job, signal: run.signal, heartbeat: run.heartbeat, progress: run.progress, traceparent: run.traceparent });
    return value === AWAIT_CALLBACK ? { kind: 'awaiting_callback' } : { kind: 'succeeded', result: value };
  } catch (error) {
    return { kind: 'failed', failure: failureFromError(error) };
  }
}
