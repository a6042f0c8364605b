/**
 * Retry decisions as pure functions of (policy, attempt, failure, random), so
 * every branch is tested without storage or clocks.
 */
import type { AttemptError, Job } from './job.js';
import type { RetryPolicy } from './job-type.js';
import { ownEntry } from './own.js';

/** What went wrong in one attempt, as the retry policy sees it. */
export interface AttemptFailure {
  error: AttemptError;
  /** false: fail now, whatever attempts remain (a NonRetryableError, a callback saying so). */
  retryable: boolean;
  /** The handler asked for the next attempt after this delay. */
  retryAfterMs?: number;
  /** The downstream's HTTP status, for `retry_on` lists of statuses. */
  httpStatus?: number;
}

export type RetryDecision = { retry: false } | { retry: true; delayMs: number };

/** A named policy from the worker's code: sees the job, the attempt that failed and the failure. */
export type CustomRetryPolicy = (input: {
  job: Job;
  attempt: number;
  failure: AttemptFailure;
}) => { retry: boolean; delayMs?: number };

export type CustomRetryPolicies = Readonly<Record<string, CustomRetryPolicy>>;

/** Backoff before the attempt after `failedAttempt` (1-based). */
export function backoffDelayMs(
  policy: Extract<RetryPolicy, { kind: 'fixed' | 'exponential' }>,
  failedAttempt: number,
  random: () => number,
): number {
  if (policy.kind === 'fixed') return policy.delayS * 1000;
  const uncappedS = policy.baseS * policy.factor ** Math.max(0, failedAttempt - 1);
  const delayMs = Math.min(policy.maxS, uncappedS) * 1000;
  return Math.round(delayMs * (1 - policy.jitter) + delayMs * policy.jitter * random());
}

function matchesRetryOn(retryOn: (string | number)[] | undefined, failure: AttemptFailure): boolean {
  if (retryOn === undefined) return true;
  return retryOn.some((entry) =>
    typeof entry === 'number' ? entry === failure.httpStatus : entry === failure.error.class,
  );
}

export function decideRetry(input: {
  policy: RetryPolicy;
  job: Job;
  failure: AttemptFailure;
  random: () => number;
  customPolicies: CustomRetryPolicies;
}): RetryDecision {
  const { policy, job, failure } = input;
  if (job.attempt >= job.maxAttempts || !failure.retryable) return { retry: false };
  switch (policy.kind) {
    case 'none':
      return { retry: false };
    case 'custom': {
      const custom = ownEntry(input.customPolicies, policy.name);
      if (custom === undefined) return { retry: false };
      const decision = custom({ job, attempt: job.attempt, failure });
      return decision.retry ? { retry: true, delayMs: Math.max(0, decision.delayMs ?? 0) } : { retry: false };
    }
    case 'fixed':
    case 'exponential':
      if (!matchesRetryOn(policy.retryOn, failure)) return { retry: false };
      if (failure.retryAfterMs !== undefined) return { retry: true, delayMs: Math.max(0, failure.retryAfterMs) };
      return { retry: true, delayMs: backoffDelayMs(policy, job.attempt, input.random) };
  }
}
