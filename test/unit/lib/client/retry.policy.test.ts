/** The client's retry policy: what is retried, how often, and how long it waits. */
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { DEFAULT_RETRY_POLICY, retryAfterMsOf, retryDelayMs, retryPolicyOf, retryWaitMs, shouldRetry } from '../../../../lib/client/retry.js';

const policy = { retries: 3, baseDelayMs: 100, maxDelayMs: 1_000 };

describe('shouldRetry', () => {
  test('an idempotent request is retried after no answer and after any 5xx', () => {
    for (const status of [undefined, 500, 502, 503, 504]) {
      expect(shouldRetry({ idempotent: true, failure: { status }, triesSoFar: 1, policy })).toBe(true);
    }
  });

  test('a request that is not idempotent is not retried after a 5xx or no answer', () => {
    for (const status of [undefined, 500, 503]) {
      expect(shouldRetry({ idempotent: false, failure: { status }, triesSoFar: 1, policy })).toBe(false);
    }
  });

  test('a 429 is retried whether or not the request is idempotent: the gateway refused it before anything ran', () => {
    for (const idempotent of [true, false]) {
      expect(shouldRetry({ idempotent, failure: { status: 429 }, triesSoFar: 1, policy })).toBe(true);
      expect(shouldRetry({ idempotent, failure: { status: 429 }, triesSoFar: 4, policy })).toBe(false);
    }
  });

  test('any other 4xx is never retried', () => {
    for (const status of [400, 401, 403, 404, 409, 413, 415]) {
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

describe('retryAfterMsOf', () => {
  const nowMs = Date.parse('2026-11-26T10:00:00.000Z');

  test('delay-seconds and an HTTP date are read as milliseconds from now', () => {
    expect(retryAfterMsOf('2', nowMs)).toBe(2_000);
    expect(retryAfterMsOf('0', nowMs)).toBe(0);
    expect(retryAfterMsOf('Thu, 26 Nov 2026 10:00:05 GMT', nowMs)).toBe(5_000);
  });

  test('absent, unreadable or past is no wait; far off is capped at a minute', () => {
    expect(retryAfterMsOf(null, nowMs)).toBeUndefined();
    expect(retryAfterMsOf('soon', nowMs)).toBeUndefined();
    expect(retryAfterMsOf('Thu, 26 Nov 2026 09:00:00 GMT', nowMs)).toBe(0);
    expect(retryAfterMsOf('86400', nowMs)).toBe(60_000);
  });
});

describe('retryWaitMs', () => {
  test('a Retry-After is waited out in full, with the jittered delay on top', () => {
    expect(retryWaitMs(0, { status: 429, retryAfterMs: 1_000 }, policy, () => 0)).toBe(1_000);
    expect(retryWaitMs(1, { status: 503, retryAfterMs: 1_000 }, policy, () => 0.5)).toBe(1_100);
  });

  test('without Retry-After it is the jittered delay alone', () => {
    expect(retryWaitMs(1, { status: 503 }, policy, () => 0.5)).toBe(100);
    expect(retryWaitMs(1, { status: undefined }, policy, () => 0.5)).toBe(100);
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
