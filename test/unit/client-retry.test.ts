/** The client's retry policy: what is retried, how often, and how long it waits. */
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { DEFAULT_RETRY_POLICY, retryDelayMs, retryPolicyOf, shouldRetry } from '../../lib/client/retry.js';

const policy = { retries: 3, baseDelayMs: 100, maxDelayMs: 1_000 };

describe('shouldRetry', () => {
  test('an idempotent request is retried after no answer and after any 5xx', () => {
    for (const status of [undefined, 500, 502, 503, 504]) {
      expect(shouldRetry({ idempotent: true, failure: { status }, triesSoFar: 1, policy })).toBe(true);
    }
  });

  test('a request that is not idempotent is never retried', () => {
    for (const status of [undefined, 500, 503]) {
      expect(shouldRetry({ idempotent: false, failure: { status }, triesSoFar: 1, policy })).toBe(false);
    }
  });

  test('a 4xx is never retried, 429 included', () => {
    for (const status of [400, 401, 403, 404, 409, 413, 415, 429]) {
      expect(shouldRetry({ idempotent: true, failure: { status }, triesSoFar: 1, policy })).toBe(false);
    }
  });

  test('at most `retries` retries: 1 + retries tries in all', () => {
    const failure = { status: 503 };
    expect(shouldRetry({ idempotent: true, failure, triesSoFar: 3, policy })).toBe(true);
    expect(shouldRetry({ idempotent: true, failure, triesSoFar: 4, policy })).toBe(false);
    expect(shouldRetry({ idempotent: true, failure, triesSoFar: 1, policy: { ...policy, retries: 0 } })).toBe(false);
  });
});

describe('retryDelayMs', () => {
  test('full jitter: a delay from 0 up to a ceiling that doubles with each retry', () => {
    expect([0, 1, 2].map((retry) => retryDelayMs(retry, policy, () => 0.999_999))).toEqual([99, 199, 399]);
    expect(retryDelayMs(0, policy, () => 0)).toBe(0);
  });

  test('the ceiling is maxDelayMs however many retries', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 1_000 }), fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), (retry, random) => {
        const delay = retryDelayMs(retry, policy, () => random);
        expect(delay).toBeGreaterThanOrEqual(0);
        expect(delay).toBeLessThan(policy.maxDelayMs);
      }),
    );
  });
});

describe('retryPolicyOf', () => {
  test('absent: 3 retries from 200 ms up to 5 s', () => {
    expect(retryPolicyOf(undefined)).toEqual({ retries: 3, baseDelayMs: 200, maxDelayMs: 5_000 });
    expect(retryPolicyOf(undefined)).toBe(DEFAULT_RETRY_POLICY);
  });

  test('a number sets the retries; an object overrides what it names', () => {
    expect(retryPolicyOf(0)).toEqual({ ...DEFAULT_RETRY_POLICY, retries: 0 });
    expect(retryPolicyOf({ maxDelayMs: 50 })).toEqual({ ...DEFAULT_RETRY_POLICY, maxDelayMs: 50 });
  });

  test('a negative or non-finite value is refused, naming it', () => {
    expect(() => retryPolicyOf(-1)).toThrow(/retries\.retries/);
    expect(() => retryPolicyOf({ baseDelayMs: Number.NaN })).toThrow(/retries\.baseDelayMs/);
  });
});
