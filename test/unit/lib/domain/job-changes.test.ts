/** What a PATCH makes of a queued job, without a table: values, windows, the record, and refusals naming fields. */
import { describe, expect, test } from 'vitest';
import { ValidationError } from '../../../../lib/domain/errors.js';
import { appendChange, planJobChange } from '../../../../lib/domain/job-changes.js';
import { CHANGES_LIMIT, type JobChangeRecord } from '../../../../lib/domain/job.js';
import { runningJob, T0 } from '../../../support/jobs.js';

const HOUR = 3_600_000;
const queued = (overrides = {}) => runningJob({ status: 'queued', attempt: 0, runAfterMs: T0 + 24 * HOUR, ...overrides });
const noWindows = { timeWindows: undefined };

describe('planJobChange', () => {
  test('records each field it changes, from and to, with who and when', () => {
    const planned = planJobChange(queued(), noWindows, { runAfter: 'now', priority: 5, expiresAtMs: T0 + HOUR }, 'key-1', T0);
    expect(planned).toEqual({
      runAfterMs: T0,
      priority: 5,
      expiresAtMs: T0 + HOUR,
      record: {
        atMs: T0,
        by: 'key-1',
        runAfterMs: { from: T0 + 24 * HOUR, to: T0 },
        priority: { from: 100, to: 5 },
        expiresAtMs: { from: null, to: T0 + HOUR },
      },
    });
  });

  test('a change to the values the job has is no change', () => {
    expect(planJobChange(queued(), noWindows, { priority: 100, runAfter: T0 + 24 * HOUR }, 'k', T0)).toBeUndefined();
  });

  test('"now" never makes a job that is already due later', () => {
    expect(planJobChange(queued({ runAfterMs: T0 - HOUR }), noWindows, { runAfter: 'now' }, 'k', T0)).toBeUndefined();
  });

  test("a new run_after moves into the job's own windows before its type's", () => {
    const typeWindows = { timeWindows: [{ start: '00:00', end: '01:00', tz: 'UTC' }] };
    const own = { timeWindows: [{ start: '12:00', end: '13:00', tz: 'UTC' }] };
    expect(planJobChange(queued(), typeWindows, { runAfter: 'now' }, 'k', T0)?.runAfterMs).toBe(Date.parse('2026-11-22T00:00:00Z'));
    expect(planJobChange(queued(own), typeWindows, { runAfter: 'now' }, 'k', T0)?.runAfterMs).toBe(Date.parse('2026-11-21T12:00:00Z'));
  });

  test('an expiry at or before the resulting run_after names the field the request gave', () => {
    const fieldOf = (run: () => unknown) => {
      try {
        run();
      } catch (error) {
        return error instanceof ValidationError ? error.details.map((detail) => detail.field) : error;
      }
      return [];
    };
    expect(fieldOf(() => planJobChange(queued(), noWindows, { expiresAtMs: T0 + 24 * HOUR }, 'k', T0))).toEqual(['expires_at']);
    expect(fieldOf(() => planJobChange(queued({ expiresAtMs: T0 + 25 * HOUR }), noWindows, { runAfter: T0 + 26 * HOUR }, 'k', T0))).toEqual(['run_after']);
    expect(fieldOf(() => planJobChange(queued({ expiresAtMs: T0 + 25 * HOUR }), noWindows, { runAfter: T0 + 26 * HOUR, expiresAtMs: null }, 'k', T0))).toEqual([]);
  });
});

test('appendChange keeps the last CHANGES_LIMIT changes', () => {
  const records: JobChangeRecord[] = Array.from({ length: CHANGES_LIMIT }, (_, i) => ({ atMs: i, by: 'k' }));
  const appended = appendChange({ changes: records }, { atMs: 99, by: 'k' });
  expect(appended).toHaveLength(CHANGES_LIMIT);
  expect(appended[0]?.atMs).toBe(1);
  expect(appended.at(-1)?.atMs).toBe(99);
});
