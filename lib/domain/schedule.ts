/**
 * Recurring schedules: a cron expression in an IANA zone that makes one
 * ordinary job of its type per fire time, with the id `<schedule>@<fire time>`
 * so that however often a time is fired, it makes one job.
 */
import { fireTimesAfter, firstFireAtOrAfter, latestFireTimes, type CronSpec } from './cron.js';
import { ValidationError } from './errors.js';

export const SCHEDULE_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

export const CATCH_UP_POLICIES = ['latest', 'all', 'none'] as const;
export type CatchUp = (typeof CATCH_UP_POLICIES)[number];
export const OVERLAP_POLICIES = ['allow', 'skip'] as const;
export type Overlap = (typeof OVERLAP_POLICIES)[number];

/** `catch_up: "all"` makes at most this many jobs after an outage: the latest missed times. */
export const MAX_CATCH_UP_FIRES = 100;
/** A fire time at most this old when it is fired is on time, not missed: `catch_up: "none"` still fires it. */
export const ON_TIME_GRACE_MS = 60_000;
/** `start_at` may lie at most this far ahead, so a schedule says something about the foreseeable future. */
export const MAX_START_AHEAD_MS = 5 * 366 * 86_400_000;

/** What a schedule makes at each fire time: a job of `jobType` with these choices. */
export interface ScheduledJob {
  jobType: string;
  data: unknown;
  priority: number;
  weight: number;
  throttleKey?: string;
  /** The tags each job it makes carries; absent: none. */
  tags?: string[];
}

/** What a PUT says about a schedule. */
export interface ScheduleDefinition extends CronSpec, ScheduledJob {
  overlap: Overlap;
  catchUp: CatchUp;
  startAtMs?: number;
  endAtMs?: number;
}

/** What happened at the last fire time: the job it made, or why it made none. */
export interface ScheduleFire {
  fireAtMs: number;
  firedAtMs: number;
  jobId?: string;
  skipped?: string;
}

export interface Schedule extends ScheduleDefinition {
  name: string;
  paused: boolean;
  /** The next time to fire; null once `end_at` has passed every fire time. */
  nextFireAtMs: number | null;
  lastFire?: ScheduleFire;
  /** The last job a fire made, which `overlap: "skip"` waits for. */
  lastJobId?: string;
  /** Every write of the schedule adds one: writers condition on the revision they read. */
  revision: number;
  createdAtMs: number;
  updatedAtMs: number;
}

/** The id of the job a schedule makes at a fire time: the same time always the same id. */
export function scheduledJobId(name: string, fireAtMs: number): string {
  return `${name}@${new Date(fireAtMs).toISOString().replace('.000Z', 'Z')}`;
}

/**
 * The first fire time of a definition at `nowMs` (after now, at or after its `start_at`, before its `end_at`); a definition
 * that never fires, or starts too far ahead, is a ValidationError naming the field.
 */
export function firstFireOf(definition: ScheduleDefinition, nowMs: number): number {
  const { startAtMs, endAtMs } = definition;
  if (startAtMs !== undefined && startAtMs > nowMs + MAX_START_AHEAD_MS) {
    throw new ValidationError([{ field: 'start_at', message: 'must be at most 5 years ahead' }]);
  }
  if (startAtMs !== undefined && endAtMs !== undefined && endAtMs <= startAtMs) {
    throw new ValidationError([{ field: 'end_at', message: 'must be after start_at' }]);
  }
  // After now: a PUT fires nothing at the very instant it is made.
  const fromMs = Math.max(nowMs + 1, startAtMs ?? 0);
  const first = firstFireAtOrAfter(definition, fromMs, endAtMs);
  if (first !== undefined) return first;
  if (endAtMs !== undefined && firstFireAtOrAfter(definition, fromMs) !== undefined) {
    throw new ValidationError([{ field: 'end_at', message: 'leaves no fire time: the schedule would never fire' }]);
  }
  throw new ValidationError([{ field: 'cron', message: 'never fires' }]);
}

/** The next `count` fire times after `afterMs`, within the schedule's end. */
export function upcomingFireTimes(schedule: Schedule, count: number): number[] {
  if (schedule.nextFireAtMs === null) return [];
  return [schedule.nextFireAtMs, ...fireTimesAfter(schedule, schedule.nextFireAtMs, count - 1, schedule.endAtMs)];
}

/** What a poll at `nowMs` fires: the due times its catch-up policy keeps, and the next fire time after now (null: none left). */
export function dueFires(schedule: Schedule, nowMs: number): { fireAtMs: number[]; nextFireAtMs: number | null } {
  const { nextFireAtMs, endAtMs, catchUp } = schedule;
  if (nextFireAtMs === null || nextFireAtMs > nowMs) return { fireAtMs: [], nextFireAtMs };
  const upToMs = Math.min(nowMs, (endAtMs ?? Infinity) - 1);
  const most = catchUp === 'all' ? MAX_CATCH_UP_FIRES : 1;
  const found = latestFireTimes(schedule, nextFireAtMs, upToMs, most);
  // nextFireAtMs came from a forward walk, so it is a fire time; a backward walk can miss it when it is a
  // spring-forward gap's end and the library's previous time lies before the gap.
  const due = found.length < most && nextFireAtMs <= upToMs && !found.includes(nextFireAtMs) ? [nextFireAtMs, ...found] : found;
  const fireAtMs = catchUp === 'none' ? due.filter((atMs) => nowMs - atMs <= ON_TIME_GRACE_MS) : due;
  return { fireAtMs, nextFireAtMs: fireTimesAfter(schedule, nowMs, 1, endAtMs)[0] ?? null };
}
