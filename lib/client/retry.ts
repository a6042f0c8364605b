/**
 * When the client sends a request again: any request refused with 429 (the
 * gateway throttled it before anything ran, so even a request that is not safe
 * to repeat was never carried out); otherwise only a request that is safe to
 * repeat (one that names what it changes, so a second copy changes nothing
 * more), and only after a failure that says nothing about the request itself
 * (a 5xx or no answer at all). Any other 4xx is the same on every try, so never.
 * A `Retry-After` the answer gave is waited out first.
 */

export interface RetryPolicy {
  /** Tries after the first. @default 3 */
  retries: number;
  /** The ceiling of the first retry's delay; it doubles with each retry. @default 200 */
  baseDelayMs: number;
  /** No delay is longer than this. @default 5000 */
  maxDelayMs: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = { retries: 3, baseDelayMs: 200, maxDelayMs: 5_000 };

/** A policy from the client's `retries` option: a number of retries, or a partial policy. */
export function retryPolicyOf(option: number | Partial<RetryPolicy> | undefined): RetryPolicy {
  if (option === undefined) return DEFAULT_RETRY_POLICY;
  const policy = typeof option === 'number' ? { ...DEFAULT_RETRY_POLICY, retries: option } : { ...DEFAULT_RETRY_POLICY, ...option };
  for (const [name, value] of Object.entries(policy)) {
    if (!Number.isFinite(value) || value < 0) throw new RangeError(`retries.${name} must be a number of at least 0, got ${value}`);
  }
  return policy;
}

/**
 * The delay before retry number `retry` (0 for the first): "full jitter", a uniformly random delay up to an
 * exponentially growing, capped ceiling, so clients that failed together do not come back together.
 */
export function retryDelayMs(retry: number, policy: RetryPolicy, random: () => number = Math.random): number {
  const ceilingMs = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** retry);
  return Math.floor(random() * ceilingMs);
}

/** What a try ended with, as far as retrying is concerned: an HTTP status and its Retry-After, or none when no answer came. */
export type TryFailure = { status: number; retryAfterMs?: number } | { status: undefined };

/** The gateway's throttle: the request was refused before anything ran. */
const THROTTLED = 429;

export function isTransient(failure: TryFailure): boolean {
  return failure.status === undefined || failure.status === THROTTLED || failure.status >= 500;
}

/** Whether to send the request again after `triesSoFar` tries ended in `failure`. */
export function shouldRetry(options: { idempotent: boolean; failure: TryFailure; triesSoFar: number; policy: RetryPolicy }): boolean {
  const safe = options.idempotent || options.failure.status === THROTTLED;
  return safe && isTransient(options.failure) && options.triesSoFar <= options.policy.retries;
}

/** The longest Retry-After waited out; a longer one is the server's mistake, and the caller's timeouts would pass first. */
const MAX_RETRY_AFTER_MS = 60_000;

/** A `Retry-After` header in milliseconds: delay-seconds, or an HTTP date; undefined when absent or unreadable. */
export function retryAfterMsOf(header: string | null, nowMs: number = Date.now()): number | undefined {
  if (header === null || header.trim() === '') return undefined;
  const ms = /^\s*\d+\s*$/.test(header) ? Number(header) * 1000 : Date.parse(header) - nowMs;
  return Number.isFinite(ms) ? Math.min(MAX_RETRY_AFTER_MS, Math.max(0, ms)) : undefined;
}

/**
 * The wait before retry number `retry` after `failure`: its Retry-After, if any, plus the policy's jittered
 * delay, so that clients refused together do not all come back at the second they were given.
 */
export function retryWaitMs(retry: number, failure: TryFailure, policy: RetryPolicy, random: () => number = Math.random): number {
  const retryAfterMs = failure.status === undefined ? 0 : (failure.retryAfterMs ?? 0);
  return retryAfterMs + retryDelayMs(retry, policy, random);
}
