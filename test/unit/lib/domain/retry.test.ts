import { describe, expect, test, vi } from 'vitest';
import type { Job } from '../../../../lib/domain/job.js';
import type { RetryPolicy } from '../../../../lib/domain/job-type.js';
import { runningJob } from '../../../support/jobs.js';
import { backoffDelayMs, decideRetry, type AttemptFailure, type CustomRetryPolicies } from '../../../../lib/domain/retry.js';

function jobAt(attempt: number, maxAttempts = 5): Job {
  return runningJob({ attempt, maxAttempts });
}

const failure = (overrides: Partial<AttemptFailure> = {}): AttemptFailure => ({
  error: { class: 'Error', message: 'boom' },
  retryable: true,
  ...overrides,
});

const fixed = (delayS: number, retryOn?: (string | number)[]): RetryPolicy => ({
  kind: 'fixed',
  delayS,
  ...(retryOn ? { retryOn } : {}),
});

const exponential = (
  overrides: Partial<Extract<RetryPolicy, { kind: 'exponential' }>> = {},
): Extract<RetryPolicy, { kind: 'exponential' }> => ({
  kind: 'exponential',
  baseS: 1,
  factor: 2,
  maxS: 300,
  jitter: 0,
  ...overrides,
});

const noRandom = (): number => {
  throw new Error('random must not be used here');
};

function decide(
  policy: RetryPolicy,
  options: { job?: Job; failure?: AttemptFailure; random?: () => number; customPolicies?: CustomRetryPolicies } = {},
) {
  return decideRetry({
    policy,
    job: options.job ?? jobAt(1),
    failure: options.failure ?? failure(),
    random: options.random ?? (() => 0.5),
    customPolicies: options.customPolicies ?? {},
  });
}

describe('backoffDelayMs', () => {
  test('fixed: the same delay after every attempt', () => {
    const policy = { kind: 'fixed', delayS: 7 } as const;
    expect([1, 2, 3, 10].map((attempt) => backoffDelayMs(policy, attempt, noRandom))).toEqual([7_000, 7_000, 7_000, 7_000]);
  });

  test('exponential: base * factor^(attempt - 1)', () => {
    const policy = exponential({ baseS: 2, factor: 3 });
    expect([1, 2, 3, 4].map((attempt) => backoffDelayMs(policy, attempt, () => 0))).toEqual([2_000, 6_000, 18_000, 54_000]);
  });

  test('exponential: capped at max_s', () => {
    const policy = exponential({ baseS: 1, factor: 2, maxS: 10 });
    expect([4, 5, 6, 50].map((attempt) => backoffDelayMs(policy, attempt, () => 0))).toEqual([8_000, 10_000, 10_000, 10_000]);
  });

  test('exponential: jitter spans [delay * (1 - jitter), delay]: random 0 gives the low end, random 1 the full delay', () => {
    const policy = exponential({ baseS: 10, factor: 2, jitter: 0.5 });
    expect(backoffDelayMs(policy, 1, () => 0)).toBe(5_000);
    expect(backoffDelayMs(policy, 1, () => 1)).toBe(10_000);
    expect(backoffDelayMs(policy, 1, () => 0.5)).toBe(7_500);
  });

  test('exponential: jitter applies after the cap, so it never exceeds max_s', () => {
    const policy = exponential({ baseS: 100, factor: 10, maxS: 60, jitter: 1 });
    expect(backoffDelayMs(policy, 5, () => 1)).toBe(60_000);
    expect(backoffDelayMs(policy, 5, () => 0)).toBe(0);
  });

  test('exponential without jitter ignores the random source', () => {
    expect(backoffDelayMs(exponential({ jitter: 0 }), 3, () => 0.123)).toBe(4_000);
  });
});

describe('decideRetry', () => {
  test('fixed: retries after delay_s', () => {
    expect(decide(fixed(15))).toEqual({ retry: true, delayMs: 15_000 });
  });

  test('exponential: the delay grows with the attempt that failed', () => {
    const policy = exponential({ baseS: 1, factor: 2 });
    expect(decide(policy, { job: jobAt(1) })).toEqual({ retry: true, delayMs: 1_000 });
    expect(decide(policy, { job: jobAt(3) })).toEqual({ retry: true, delayMs: 4_000 });
  });

  test('exponential: the seeded random drives the jitter', () => {
    const policy = exponential({ baseS: 8, jitter: 1 });
    expect(decide(policy, { random: () => 0.25 })).toEqual({ retry: true, delayMs: 2_000 });
  });

  test('none never retries, even with attempts left', () => {
    expect(decide({ kind: 'none' }, { job: jobAt(1, 100) })).toEqual({ retry: false });
  });

  test('no retry once the failed attempt was the last one', () => {
    expect(decide(fixed(1), { job: jobAt(4, 5) })).toEqual({ retry: true, delayMs: 1_000 });
    expect(decide(fixed(1), { job: jobAt(5, 5) })).toEqual({ retry: false });
  });

  test('a non-retryable failure is not retried whatever attempts remain', () => {
    expect(decide(fixed(1), { job: jobAt(1, 100), failure: failure({ retryable: false }) })).toEqual({ retry: false });
    expect(decide(exponential(), { failure: failure({ retryable: false }) })).toEqual({ retry: false });
  });

  test('retry_on: an error class in the list is retried', () => {
    const decision = decide(fixed(2, ['TimeoutError', 'ThrottledError']), {
      failure: failure({ error: { class: 'ThrottledError', message: 'slow down' } }),
    });
    expect(decision).toEqual({ retry: true, delayMs: 2_000 });
  });

  test('retry_on: an HTTP status in the list is retried', () => {
    const decision = decide(exponential({ retryOn: [429, 503] }), {
      failure: failure({ error: { class: 'HttpError', message: 'unavailable' }, httpStatus: 503 }),
    });
    expect(decision).toEqual({ retry: true, delayMs: 1_000 });
  });

  test('retry_on: an error class or status not in the list is not retried', () => {
    const policy = fixed(2, ['TimeoutError', 503]);
    expect(decide(policy, { failure: failure({ error: { class: 'TypeError', message: 'x' } }) })).toEqual({ retry: false });
    expect(
      decide(policy, { failure: failure({ error: { class: 'HttpError', message: 'x' }, httpStatus: 500 }) }),
    ).toEqual({ retry: false });
  });

  test('retry_on: a status number does not match an error class that spells the same digits', () => {
    const policy = fixed(2, [503]);
    expect(decide(policy, { failure: failure({ error: { class: '503', message: 'x' } }) })).toEqual({ retry: false });
  });

  test('retryAfterMs from the failure replaces the policy delay', () => {
    expect(decide(fixed(60), { failure: failure({ retryAfterMs: 2_500 }) })).toEqual({ retry: true, delayMs: 2_500 });
    expect(decide(exponential(), { failure: failure({ retryAfterMs: 90_000 }) })).toEqual({ retry: true, delayMs: 90_000 });
  });

  test('retryAfterMs does not override the attempts limit or a non-retryable failure', () => {
    expect(decide(fixed(1), { job: jobAt(5, 5), failure: failure({ retryAfterMs: 1 }) })).toEqual({ retry: false });
    expect(decide(fixed(1), { failure: failure({ retryAfterMs: 1, retryable: false }) })).toEqual({ retry: false });
  });

  test('a custom policy sees the job, the failed attempt and the failure, and its decision is used', () => {
    const custom = vi.fn(() => ({ retry: true, delayMs: 4_321 }));
    const job = jobAt(2);
    const theFailure = failure({ error: { class: 'RateLimited', message: 'later' }, httpStatus: 429 });
    const decision = decide({ kind: 'custom', name: 'by-status' }, { job, failure: theFailure, customPolicies: { 'by-status': custom } });
    expect(decision).toEqual({ retry: true, delayMs: 4_321 });
    expect(custom).toHaveBeenCalledTimes(1);
    expect(custom).toHaveBeenCalledWith({ job, attempt: 2, failure: theFailure });
  });

  test('a custom policy that declines means no retry', () => {
    const decision = decide(
      { kind: 'custom', name: 'never' },
      { customPolicies: { never: () => ({ retry: false, delayMs: 1_000 }) } },
    );
    expect(decision).toEqual({ retry: false });
  });

  test('a custom policy without a delay retries at once, and a negative delay is clamped to 0', () => {
    expect(decide({ kind: 'custom', name: 'now' }, { customPolicies: { now: () => ({ retry: true }) } })).toEqual({
      retry: true,
      delayMs: 0,
    });
    expect(decide({ kind: 'custom', name: 'neg' }, { customPolicies: { neg: () => ({ retry: true, delayMs: -5 }) } })).toEqual({
      retry: true,
      delayMs: 0,
    });
  });

  test('an unknown custom policy means no retry', () => {
    expect(decide({ kind: 'custom', name: 'missing' }, { customPolicies: { other: () => ({ retry: true }) } })).toEqual({
      retry: false,
    });
  });

  test('a custom policy is not consulted when attempts are used up', () => {
    const custom = vi.fn(() => ({ retry: true, delayMs: 1 }));
    expect(decide({ kind: 'custom', name: 'c' }, { job: jobAt(3, 3), customPolicies: { c: custom } })).toEqual({ retry: false });
    expect(custom).not.toHaveBeenCalled();
  });
});
