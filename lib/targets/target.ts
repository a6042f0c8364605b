/** What every target shares: how one attempt is handed to it and what it reports back. */
import type { Job } from '../domain/job.js';
import type { JobTypeWithoutSecrets } from '../domain/job-type.js';
import type { AttemptFailure } from '../domain/retry.js';
import type { ProgressReport } from '../domain/progress.js';

/** How an attempt ended, as the target saw it; the worker records it under the claim's guard. */
export type TargetOutcome =
  | { kind: 'succeeded'; result?: unknown }
  | { kind: 'failed'; failure: AttemptFailure }
  /** The target accepted the job and will report its outcome through the status callback. */
  | { kind: 'awaiting_callback' };

export interface TargetRun {
  readonly job: Readonly<Job>;
  readonly jobType: JobTypeWithoutSecrets;
  /** Aborted when the attempt reaches the type's `timeout_s` or loses its claim. */
  readonly signal: AbortSignal;
  /** Extends the claim to `extendS` (default: the visibility timeout) from now; throws ClaimLostError once it is lost. */
  heartbeat(extendS?: number): Promise<void>;
  /** Records how far the attempt got (see JobContext.progress). */
  progress(report: ProgressReport): Promise<void>;
  nowMs(): number;
  /** This attempt's span in the job's trace (a child of the enqueue's); absent for a job enqueued without one. */
  readonly traceparent?: string | undefined;
}

export const failed = (errorClass: string, message: string, extra: Omit<AttemptFailure, 'error' | 'retryable'> & { retryable?: boolean } = {}): TargetOutcome => {
  const { retryable = true, ...rest } = extra;
  return { kind: 'failed', failure: { error: { class: errorClass, message }, retryable, ...rest } };
};

/**
 * What a target sends as the job: the same envelope for http, lambda and eventbridge. Lambda and EventBridge
 * carry no headers, so the attempt's `traceparent` travels in it; an http target gets it as its header too.
 */
export function jobEnvelope(job: Readonly<Job>, traceparent?: string): { id: string; type: string; attempt: number; data: unknown; traceparent?: string } {
  return { id: job.id, type: job.type, attempt: job.attempt, data: job.data, ...(traceparent !== undefined ? { traceparent } : {}) };
}

/** A type's signing secret as its item holds it; undefined when the type or its secret is gone. */
export interface SigningSecrets {
  get(type: string): Promise<string | undefined>;
}
