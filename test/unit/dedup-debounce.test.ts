/** Dedup and debounce without a table: when a debounced job is due after a fold, which jobs collect, and the bounds. */
import { describe, expect, test } from 'vitest';
import type { ValidationError } from '../../lib/domain/errors.js';
import { assertDedupWindowFits, collectsEnqueues, debouncedRunAfterMs, MAX_DEBOUNCE_S } from '../../lib/domain/dedup-debounce.js';
import { runningJob, T0 } from '../support/jobs.js';

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

/** The fields a ValidationError thrown by `check` names; none when it passes. */
function fieldsRefused(check: () => void): string[] {
  try {
    check();
    return [];
  } catch (error) {
    return (error as ValidationError).details.map((issue) => issue.field);
  }
}

describe('assertDedupWindowFits', () => {
  test('a window as long as finished jobs are kept passes', () => {
    expect(fieldsRefused(() => assertDedupWindowFits({ key: 'k', windowS: 86_400 }, 1))).toEqual([]);
  });

  test('a longer one is refused naming dedup.window_s', () => {
    expect(fieldsRefused(() => assertDedupWindowFits({ key: 'k', windowS: 86_401 }, 1))).toEqual(['dedup.window_s']);
  });
});
