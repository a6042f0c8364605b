/** Dedup and debounce without a table: when a debounced job is due after a fold, which jobs collect, and the bounds. */
import { describe, expect, test } from 'vitest';
import type { ValidationError } from '../../../../lib/domain/errors.js';
import {
  assertDedupDebounceFits,
  assertDedupWindowFits,
  collectsEnqueues,
  debouncedRunAfterMs,
  dedupWindowEndsAtMs,
  MAX_DEBOUNCE_S,
} from '../../../../lib/domain/dedup-debounce.js';
import { runningJob, T0 } from '../../../support/jobs.js';
import { fieldsRefused } from '../../../support/validation.js';

const S = 1_000;
const noWindows = { timeWindows: undefined };
const waiting = (overrides = {}) =>
  runningJob({ status: 'queued', attempt: 0, createdAtMs: T0, runAfterMs: T0 + 10 * S, debounce: { key: 'k', delayS: 10, maxWaitS: 60 }, ...overrides });

describe('debouncedRunAfterMs', () => {
  test('is the fold’s delay after it', () => {
    expect(debouncedRunAfterMs(waiting(), noWindows, 10, T0 + 20 * S)).toBe(T0 + 30 * S);
  });

  test('never passes max_wait_s after the first enqueue', () => {
    expect(debouncedRunAfterMs(waiting(), noWindows, 10, T0 + 55 * S)).toBe(T0 + 60 * S);
  });

  test('without max_wait_s, never passes the longest wait', () => {
    const job = waiting({ debounce: { key: 'k', delayS: MAX_DEBOUNCE_S } });
    expect(debouncedRunAfterMs(job, noWindows, MAX_DEBOUNCE_S, T0 + S)).toBe(T0 + MAX_DEBOUNCE_S * S);
  });

  test('stays before an expiry a PATCH gave the job, so the job runs rather than expires', () => {
    expect(debouncedRunAfterMs(waiting({ expiresAtMs: T0 + 25 * S }), noWindows, 10, T0 + 20 * S)).toBe(T0 + 25 * S - 1);
  });

  test('then waits for the job’s time windows to open', () => {
    const windows = { timeWindows: [{ start: '11:00', end: '12:00', tz: 'UTC' }] };
    expect(debouncedRunAfterMs(waiting(), windows, 10, T0)).toBe(Date.parse('2026-11-21T11:00:00.000Z'));
  });
});

describe('collectsEnqueues', () => {
  test('a queued job never claimed collects enqueues with its key', () => {
    expect(collectsEnqueues(waiting(), 'k')).toBe(true);
  });

  test('a claimed, retried or finished job does not, nor one of another key', () => {
    expect(collectsEnqueues(waiting({ status: 'running', attempt: 1 }), 'k')).toBe(false);
    expect(collectsEnqueues(waiting({ attempt: 1 }), 'k')).toBe(false);
    expect(collectsEnqueues(waiting({ status: 'cancelled' }), 'k')).toBe(false);
    expect(collectsEnqueues(waiting(), 'other')).toBe(false);
  });
});

describe('assertDedupWindowFits', () => {
  test('a window as long as finished jobs are kept passes', () => {
    expect(fieldsRefused(() => assertDedupWindowFits({ key: 'k', windowS: 86_400 }, 1))).toEqual([]);
  });

  test('a longer one is refused naming dedup.window_s', () => {
    expect(fieldsRefused(() => assertDedupWindowFits({ key: 'k', windowS: 86_401 }, 1))).toEqual(['dedup.window_s']);
  });
});

describe('assertDedupDebounceFits', () => {
  const dedup = { key: 'd', windowS: 60 };
  const debounce = { key: 'b', delayS: 10 };
  const messageOf = (call: () => void): string | undefined => {
    try {
      call();
    } catch (error) {
      return (error as ValidationError).details[0]?.message;
    }
    return undefined;
  };

  test('a job deduplicated, or debounced, alone passes', () => {
    expect(fieldsRefused(() => assertDedupDebounceFits({ dedup }))).toEqual([]);
    expect(fieldsRefused(() => assertDedupDebounceFits({ debounce }))).toEqual([]);
    expect(fieldsRefused(() => assertDedupDebounceFits({ runAfterMs: T0, expiresAtMs: T0 + S, correlationKey: 'c' }))).toEqual([]);
  });

  test('a job deduplicated and debounced is refused naming debounce', () => {
    expect(fieldsRefused(() => assertDedupDebounceFits({ dedup, debounce }))).toEqual(['debounce']);
    expect(messageOf(() => assertDedupDebounceFits({ dedup, debounce }))).toBe('must be left out with dedup: a job is deduplicated or debounced, not both');
  });

  test('a correlation key beside dedup is refused naming dedup, beside debounce naming debounce', () => {
    expect(fieldsRefused(() => assertDedupDebounceFits({ dedup, correlationKey: 'c' }))).toEqual(['dedup']);
    expect(fieldsRefused(() => assertDedupDebounceFits({ debounce, correlationKey: 'c' }))).toEqual(['debounce']);
    expect(messageOf(() => assertDedupDebounceFits({ dedup, correlationKey: 'c' }))).toBe(
      'must be left out with correlation_key, which already keeps one unfinished job per key',
    );
  });

  test('a debounced job may not ask for a ready time: its delay gives it', () => {
    expect(fieldsRefused(() => assertDedupDebounceFits({ debounce, runAfterMs: T0 }))).toEqual(['run_after']);
    expect(messageOf(() => assertDedupDebounceFits({ debounce, runAfterMs: T0 }))).toBe(
      'must be left out with debounce: the job is due delay_s after the latest enqueue',
    );
  });

  test('a debounced job may not ask for an expiry: its max wait bounds it', () => {
    expect(fieldsRefused(() => assertDedupDebounceFits({ debounce, expiresAtMs: T0 }))).toEqual(['expires_at']);
    expect(messageOf(() => assertDedupDebounceFits({ debounce, expiresAtMs: T0 }))).toBe('must be left out with debounce: max_wait_s bounds when the job runs');
  });

  test('a max wait as long as the delay passes; a shorter one is refused', () => {
    expect(fieldsRefused(() => assertDedupDebounceFits({ debounce: { ...debounce, maxWaitS: 10 } }))).toEqual([]);
    expect(fieldsRefused(() => assertDedupDebounceFits({ debounce: { ...debounce, maxWaitS: 9 } }))).toEqual(['debounce.max_wait_s']);
    expect(messageOf(() => assertDedupDebounceFits({ debounce: { ...debounce, maxWaitS: 9 } }))).toBe('must be at least delay_s');
  });

  test('a dedup without a debounce may have a ready time and an expiry', () => {
    expect(fieldsRefused(() => assertDedupDebounceFits({ dedup, runAfterMs: T0, expiresAtMs: T0 + S }))).toEqual([]);
  });
});

describe('dedupWindowEndsAtMs', () => {
  test("a dedup window closes its length in seconds after the enqueue that opened it", () => {
    expect(dedupWindowEndsAtMs({ key: 'd', windowS: 60 }, T0)).toBe(T0 + 60 * S);
  });
});
