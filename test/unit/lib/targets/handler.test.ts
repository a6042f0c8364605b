import { describe, expect, test } from 'vitest';
import { appendHistory } from '../../../../lib/domain/attempts.js';
import { NonRetryableError, RetryAfterError } from '../../../../lib/domain/errors.js';
import { HISTORY_LIMIT, type AttemptRecord } from '../../../../lib/domain/job.js';
import { failureFromError } from '../../../../lib/queue/attempt/run-batch.js';
import { T0 } from '../../../support/jobs.js';

const record = (attempt: number): AttemptRecord => ({
  attempt,
  claimedAtMs: T0 + attempt,
  startedAtMs: T0 + attempt,
  endedAtMs: T0 + attempt + 1,
  outcome: 'failed',
  error: { class: 'Error', message: `attempt ${attempt}` },
});

describe('failureFromError', () => {
  test('a NonRetryableError is not retryable and keeps its class and message', () => {
    const failure = failureFromError(new NonRetryableError('card declined'));
    expect(failure.retryable).toBe(false);
    expect(failure.error).toMatchObject({ class: 'NonRetryableError', message: 'card declined' });
    expect(failure.retryAfterMs).toBeUndefined();
  });

  test('a subclass of NonRetryableError is not retryable either and reports its own name', () => {
    class InvalidAddress extends NonRetryableError {
      override readonly name = 'InvalidAddress';
    }
    const failure = failureFromError(new InvalidAddress('no such street'));
    expect(failure.retryable).toBe(false);
    expect(failure.error.class).toBe('InvalidAddress');
  });

  test('a RetryAfterError is retryable and carries its delay', () => {
    const failure = failureFromError(new RetryAfterError('rate limited', 12_000));
    expect(failure).toMatchObject({
      retryable: true,
      retryAfterMs: 12_000,
      error: { class: 'RetryAfterError', message: 'rate limited' },
    });
  });

  test('a plain Error is retryable, with its class, message and stack trace', () => {
    const error = new TypeError('x is undefined');
    const failure = failureFromError(error);
    expect(failure.retryable).toBe(true);
    expect(failure.error.class).toBe('TypeError');
    expect(failure.error.message).toBe('x is undefined');
    expect(failure.error.trace).toBe(error.stack);
    expect(failure.retryAfterMs).toBeUndefined();
  });

  test('a thrown non-Error is retryable, class NonError, its value as the message', () => {
    expect(failureFromError('just a string')).toEqual({ error: { class: 'NonError', message: 'just a string' }, retryable: true });
    expect(failureFromError(42)).toEqual({ error: { class: 'NonError', message: '42' }, retryable: true });
    expect(failureFromError(undefined).error).toEqual({ class: 'NonError', message: 'undefined' });
  });
});

describe('appendHistory', () => {
  // The byte budget is test/unit/lib/domain/json-size.item-size.test.ts's; these are about the count.
  const NO_BYTE_LIMIT = Number.POSITIVE_INFINITY;

  test('appends under the limit without dropping anything', () => {
    const history = Array.from({ length: HISTORY_LIMIT - 1 }, (_, i) => record(i + 1));
    const next = appendHistory({ history, historyDropped: 0 }, record(HISTORY_LIMIT), NO_BYTE_LIMIT);
    expect(next.history).toHaveLength(HISTORY_LIMIT);
    expect(next.history.at(-1)?.attempt).toBe(HISTORY_LIMIT);
    expect(next.historyDropped).toBe(0);
  });

  test('caps at 25, dropping the oldest and counting it', () => {
    expect(HISTORY_LIMIT).toBe(25);
    const history = Array.from({ length: 25 }, (_, i) => record(i + 1));
    const next = appendHistory({ history, historyDropped: 0 }, record(26), NO_BYTE_LIMIT);
    expect(next.history).toHaveLength(25);
    expect(next.history[0]?.attempt).toBe(2);
    expect(next.history.at(-1)?.attempt).toBe(26);
    expect(next.historyDropped).toBe(1);
  });

  test('adds to the count already dropped', () => {
    const history = Array.from({ length: 25 }, (_, i) => record(i + 11));
    const next = appendHistory({ history, historyDropped: 10 }, record(36), NO_BYTE_LIMIT);
    expect(next.historyDropped).toBe(11);
    expect(next.history.map((r) => r.attempt)).toEqual(Array.from({ length: 25 }, (_, i) => i + 12));
  });

  test('does not mutate the job it was given', () => {
    const history = [record(1)];
    appendHistory({ history, historyDropped: 0 }, record(2), NO_BYTE_LIMIT);
    expect(history).toEqual([record(1)]);
  });
});
