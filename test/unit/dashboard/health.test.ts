/** The dashboard's pure parts: how absent fields read, and when the queue counts as healthy. */
import { describe, expect, test } from 'vitest';
import type { MetricsMinute, Stats } from '../../../dashboard/types.js';
import { ABSENT, concurrencyInUse, count, duration, pausedState } from '../../../dashboard/format.js';
import { alarmStateLabel, assessHealth, LAG_THRESHOLD_MS, ASLEEP_GRACE_MS } from '../../../dashboard/health.js';

const NOW_MS = Date.parse('2026-11-21T10:30:30.000Z');
const poller = { id: '1-a', host: 'h', shards: [0, 1, 2, 3], started_at: '2026-11-21T10:00:00.000Z', last_seen_at: '2026-11-21T10:30:25.000Z' };
const stats = (overrides: Partial<Stats> = {}): Stats => ({ job_types: [{ name: 'emails', due: 0, oldest_due_lag_ms: 0 }], pollers: [poller], workers: [], ...overrides });
const minute = (minutesAgo: number, finished: MetricsMinute['finished']): MetricsMinute => ({
  at: new Date(Math.floor(NOW_MS / 60_000) * 60_000 - minutesAgo * 60_000).toISOString(),
  finished,
  lag_p50_ms: 100,
  lag_p99_ms: 400,
});

describe('fields a server does not send yet', () => {
  test('render as a dash rather than as 0 or "undefined"', () => {
    expect(count(undefined)).toBe(ABSENT);
    expect(duration(undefined)).toBe(ABSENT);
    expect(pausedState(undefined)).toBe(ABSENT);
    expect(concurrencyInUse(undefined, 10)).toBe(ABSENT);
  });

  test('concurrency in use reads "in flight / limit", with ∞ for a type without a limit', () => {
    expect(concurrencyInUse(3, 10)).toBe('3 / 10');
    expect(concurrencyInUse(3, null)).toBe('3 / ∞');
    expect(concurrencyInUse(3, undefined)).toBe(`3 / ${ABSENT}`);
  });

  test('a type without a limit, which keeps no counter, reads ∞', () => {
    expect(concurrencyInUse(null, null)).toBe('∞');
  });

  test('durations read in the unit that fits', () => {
    expect([duration(840), duration(2_340), duration(42_000), duration(150_000), duration(7_200_000)]).toEqual(['840 ms', '2.3 s', '42 s', '2.5 min', '2.0 h']);
  });
});

describe('health', () => {
  test('a live poller, no old due job and no recent failure is healthy', () => {
    const health = assessHealth({ stats: stats(), statsError: undefined, metrics: [minute(1, { succeeded: 5 })], nowMs: NOW_MS });
    expect(health.level).toBe('healthy');
  });

  test('no live poller while nothing is due is healthy: pollers sleep when idle', () => {
    const health = assessHealth({ stats: stats({ pollers: [] }), statsError: undefined, metrics: [], nowMs: NOW_MS });
    expect(health.level).toBe('healthy');
    expect(health.reasons[0]).toContain('pollers asleep, nothing due');
  });

  test(`no live poller while a job has been due over ${ASLEEP_GRACE_MS / 1_000} s is down: no wake started one`, () => {
    const due = { name: 'reports', due: 1, oldest_due_lag_ms: ASLEEP_GRACE_MS + 1 };
    const health = assessHealth({ stats: stats({ pollers: [], job_types: [due] }), statsError: undefined, metrics: [], nowMs: NOW_MS });
    expect(health).toEqual({ level: 'down', reasons: ['no live poller while jobs are due: nothing claims them'] });
    // A paused type's due jobs wait on purpose.
    expect(assessHealth({ stats: stats({ pollers: [], job_types: [{ ...due, paused: true }] }), statsError: undefined, metrics: [], nowMs: NOW_MS }).level).toBe('healthy');
  });

  test('stats that cannot be read are down, with the reason', () => {
    const health = assessHealth({ stats: stats(), statsError: 'the API answered 500', metrics: [], nowMs: NOW_MS });
    expect(health.level).toBe('down');
    expect(health.reasons[0]).toContain('the API answered 500');
  });

  test('a type whose oldest due job waited past the threshold needs attention, unless the type is paused', () => {
    const late = { name: 'reports', due: 4, oldest_due_lag_ms: LAG_THRESHOLD_MS + 5_000 };
    expect(assessHealth({ stats: stats({ job_types: [late] }), statsError: undefined, metrics: [], nowMs: NOW_MS })).toEqual({
      level: 'degraded',
      reasons: ['reports: the oldest due job has waited 65 s'],
    });
    expect(assessHealth({ stats: stats({ job_types: [{ ...late, paused: true }] }), statsError: undefined, metrics: [], nowMs: NOW_MS }).level).toBe('healthy');
  });

  test('failures and expiries of the last 5 minutes need attention; older ones do not', () => {
    const metrics = [minute(20, { failed: 9 }), minute(3, { failed: 2, succeeded: 10 }), minute(0, { expired: 1 })];
    expect(assessHealth({ stats: stats(), statsError: undefined, metrics, nowMs: NOW_MS })).toEqual({
      level: 'degraded',
      reasons: ['2 jobs failed in the last 5 min', '1 job expired in the last 5 min'],
    });
  });

  test('without metrics on the server, health says failures are not tracked rather than that there were none', () => {
    const health = assessHealth({ stats: stats(), statsError: undefined, metrics: undefined, nowMs: NOW_MS });
    expect(health.level).toBe('healthy');
    expect(health.reasons[0]).toContain('failures not tracked');
  });

  test("an alarm in ALARM needs attention, with the alarm's reason", () => {
    const alarms = [
      { name: 'DueLagAlarm', state: 'ALARM' as const, reason: '2 of the last 2 datapoints greater than the threshold (120000)', changed_at: '2026-11-21T10:29:00.000Z' },
      { name: 'WorkerErrorsAlarm', state: 'OK' as const, reason: '0 of the last 1 datapoints greater than the threshold (0)', changed_at: '2026-11-21T10:01:00.000Z' },
    ];
    expect(assessHealth({ stats: stats({ alarms }), statsError: undefined, metrics: [], nowMs: NOW_MS })).toEqual({
      level: 'degraded',
      reasons: ['DueLagAlarm is in ALARM: 2 of the last 2 datapoints greater than the threshold (120000)'],
    });
  });

  test('an alarm not evaluated yet leaves the queue healthy: a new alarm has no data for its first minute', () => {
    const alarms = [{ name: 'DueLagAlarm', state: 'INSUFFICIENT_DATA' as const, reason: 'not evaluated yet', changed_at: '2026-11-21T10:30:00.000Z' }];
    expect(assessHealth({ stats: stats({ alarms }), statsError: undefined, metrics: [], nowMs: NOW_MS }).level).toBe('healthy');
  });
});

test("an alarm's state reads as CloudWatch names it, but for a new alarm's, which reads as no data yet", () => {
  expect([alarmStateLabel('OK'), alarmStateLabel('ALARM'), alarmStateLabel('INSUFFICIENT_DATA')]).toEqual(['OK', 'ALARM', 'no data yet']);
});
