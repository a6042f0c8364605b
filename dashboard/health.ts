/**
 * Whether the queue is healthy, from what the dashboard already fetched: the roster, per-type lag and (from a
 * server that evaluates them) the alarms of GET /v1/stats, and the failures of GET /v1/metrics.
 */
import type { AlarmStatus, MetricsMinute, Stats } from './types.js';

export type HealthLevel = 'healthy' | 'degraded' | 'down';

export interface Health {
  level: HealthLevel;
  /** One line per problem found; for a healthy queue, what was checked. */
  reasons: string[];
}

/** The oldest due job of a running type waiting longer than this means the pollers are behind. */
export const LAG_THRESHOLD_MS = 60_000;
/**
 * Pollers sleep while nothing is due and are woken within about a second of a job falling due: a due job older
 * than this with no poller awake means no wake started one.
 */
export const ASLEEP_GRACE_MS = 5_000;
/** Failures this recent make the queue degraded; older ones are history. */
export const FAILURE_WINDOW_MS = 5 * 60_000;

export interface HealthInput {
  stats: Stats | undefined;
  /** Why the last GET /v1/stats failed, when it did. */
  statsError: string | undefined;
  /** Undefined when the server keeps no metrics (yet). */
  metrics: MetricsMinute[] | undefined;
  nowMs: number;
}

export function assessHealth({ stats, statsError, metrics, nowMs }: HealthInput): Health {
  if (statsError !== undefined || stats === undefined) {
    return { level: 'down', reasons: [`cannot read the queue's stats: ${statsError ?? 'no answer yet'}`] };
  }
  const down: string[] = [];
  const degraded: string[] = [];
  // A paused type's jobs are due and wait on purpose.
  const running = stats.job_types.filter((type) => type.paused !== true);
  const asleep = stats.pollers.length === 0;
  if (asleep && running.some((type) => (type.oldest_due_lag_ms ?? 0) > ASLEEP_GRACE_MS)) down.push('no live poller while jobs are due: nothing claims them');
  for (const type of running) {
    if ((type.oldest_due_lag_ms ?? 0) > LAG_THRESHOLD_MS) {
      degraded.push(`${type.name}: the oldest due job has waited ${Math.round((type.oldest_due_lag_ms ?? 0) / 1_000)} s`);
    }
  }
  for (const alarm of stats.alarms ?? []) {
    if (alarm.state === 'ALARM') degraded.push(`${alarm.name} is in ALARM: ${alarm.reason}`);
  }
  const recent = (metrics ?? []).filter((minute) => Date.parse(minute.at) + 60_000 > nowMs - FAILURE_WINDOW_MS);
  const failed = recent.reduce((sum, minute) => sum + (minute.finished.failed ?? 0), 0);
  const expired = recent.reduce((sum, minute) => sum + (minute.finished.expired ?? 0), 0);
  if (failed > 0) degraded.push(`${failed} job${failed === 1 ? '' : 's'} failed in the last ${FAILURE_WINDOW_MS / 60_000} min`);
  if (expired > 0) degraded.push(`${expired} job${expired === 1 ? '' : 's'} expired in the last ${FAILURE_WINDOW_MS / 60_000} min`);

  if (down.length > 0) return { level: 'down', reasons: [...down, ...degraded] };
  if (degraded.length > 0) return { level: 'degraded', reasons: degraded };
  const pollers = asleep ? 'pollers asleep, nothing due' : `${stats.pollers.length} live poller${stats.pollers.length === 1 ? '' : 's'}`;
  const failures = metrics === undefined ? 'failures not tracked by this server' : `no failures in the last ${FAILURE_WINDOW_MS / 60_000} min`;
  return { level: 'healthy', reasons: [`${pollers}, no due job older than ${LAG_THRESHOLD_MS / 1_000} s, ${failures}`] };
}

const ALARM_STATE_LABELS: ReadonlyMap<string, string> = new Map([['INSUFFICIENT_DATA', 'no data yet']]);

/** How the health view names an alarm's state: a new alarm has no data until its first evaluation, a minute on. */
export const alarmStateLabel = (state: AlarmStatus['state']): string => ALARM_STATE_LABELS.get(state) ?? state;

/** What the health view says of the alarms when the server does not answer them. */
export const ALARMS_ELSEWHERE = 'alarms: see CloudWatch (this server does not evaluate them)';
