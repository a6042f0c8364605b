/** Managing schedules: create or replace, read, list, pause, resume and delete. */
import { ConflictError, NotFoundError } from '../../domain/errors.js';
import { cursorFields, encodeCursor, invalidCursor } from '../../domain/cursor.js';
import type { JobStatus } from '../../domain/job.js';
import type { JobType } from '../../domain/job-type.js';
import { newJob } from '../../domain/new-job.js';
import { firstFireOf, SCHEDULE_NAME_PATTERN, scheduledJobId, type Schedule, type ScheduleDefinition } from '../../domain/schedule.js';
import { pageOfSchedules, readSchedule, removeSchedule, writeSchedule, type SchedulePosition } from '../../store/schedules.js';
import { itemToJob } from '../../store/items.js';
import { jobKey } from '../../store/keys.js';
import { batchGetItems } from '../../store/send.js';
import type { QueueContext } from '../context.js';
import { scheduledJobInput } from './fire-schedules.js';

export function getSchedule(ctx: QueueContext, name: string): Promise<Schedule | undefined> {
  return readSchedule(ctx, name);
}

export async function requireSchedule(ctx: QueueContext, name: string): Promise<Schedule> {
  const schedule = await readSchedule(ctx, name);
  if (!schedule) throw new NotFoundError(`schedule "${name}" does not exist`);
  return schedule;
}

/** A write that raced another write of the schedule (a poller firing it, another change) reads it again, at most this often. */
const WRITE_TRIES = 5;

/**
 * Throws when the caller may not change the schedule as it was just read. It runs on every read of a change,
 * so a check passed on an earlier read is not outlived by a write that moved the schedule to another type.
 */
export type ScheduleCheck = (existing: Schedule) => void;

const anyone: ScheduleCheck = () => undefined;

/** Reads the schedule, changes it and writes it over the revision read, again while other writes come first. */
async function changeSchedule(ctx: QueueContext, name: string, change: (existing: Schedule | undefined, nowMs: number) => Schedule): Promise<{ schedule: Schedule; existed: boolean }> {
  for (let tries = 1; ; tries++) {
    const existing = await readSchedule(ctx, name);
    const schedule = change(existing, ctx.nowMs());
    if (await writeSchedule(ctx, schedule, existing)) return { schedule, existed: existing !== undefined };
    if (tries >= WRITE_TRIES) throw new ConflictError(`schedule "${name}" kept changing while it was written; try again`);
  }
}

const sameTiming = (a: ScheduleDefinition, b: ScheduleDefinition): boolean =>
  a.cron === b.cron && a.tz === b.tz && a.startAtMs === b.startAtMs && a.endAtMs === b.endAtMs;

/**
 * Creates or replaces a schedule of `jobType`; `created` tells which. A replacement with the same timing keeps
 * its next fire time (a fire due now is not lost to a repeated PUT); new timing starts from now. A paused
 * schedule stays paused. What it would enqueue is checked now against the type, so a fire never fails on it.
 */
export async function putSchedule(
  ctx: QueueContext,
  name: string,
  definition: ScheduleDefinition,
  jobType: JobType,
  mayReplace: ScheduleCheck = anyone,
): Promise<{ schedule: Schedule; created: boolean }> {
  const nextFireAtMs = firstFireOf(definition, ctx.nowMs());
  newJob(jobType, scheduledJobId(name, nextFireAtMs), scheduledJobInput({ ...definition, name }, nextFireAtMs), ctx.nowMs());
  const { schedule, existed } = await changeSchedule(ctx, name, (existing, nowMs) => {
    if (existing) mayReplace(existing);
    return {
      ...definition,
      name,
      paused: existing?.paused ?? false,
      nextFireAtMs: existing && sameTiming(existing, definition) ? existing.nextFireAtMs : firstFireOf(definition, nowMs),
      ...(existing?.lastFire ? { lastFire: existing.lastFire } : {}),
      ...(existing?.lastJobId !== undefined ? { lastJobId: existing.lastJobId } : {}),
      revision: (existing?.revision ?? 0) + 1,
      createdAtMs: existing?.createdAtMs ?? nowMs,
      updatedAtMs: nowMs,
    };
  });
  return { schedule, created: !existed };
}

/**
 * Pauses or resumes. A paused schedule leaves the index of due schedules and makes no job; resumed, its next
 * fire time is where it stopped, so the next poll fires what it missed as its `catch_up` says.
 */
export async function setSchedulePaused(ctx: QueueContext, name: string, paused: boolean, mayChange: ScheduleCheck = anyone): Promise<Schedule> {
  const { schedule } = await changeSchedule(ctx, name, (existing, nowMs) => {
    if (!existing) throw new NotFoundError(`schedule "${name}" does not exist`);
    mayChange(existing);
    return { ...existing, paused, revision: existing.revision + 1, updatedAtMs: nowMs };
  });
  return schedule;
}

/** Deletes the schedule; with `jobType`, only while it is of that type: one moved to another type since is missing here. */
export async function deleteSchedule(ctx: QueueContext, name: string, jobType?: string): Promise<void> {
  if (!(await removeSchedule(ctx, name, jobType))) throw new NotFoundError(`schedule "${name}" does not exist`);
}

/**
 * The position a cursor names, checked against what the schedules index holds: a schedule's name and the
 * index key it sorts under (`<next fire>#<name>`, `ENDED#<name>` or `PAUSED#<name>`). A cursor is handed to the
 * caller, so it comes back as any JSON at all, and DynamoDB refuses a start key it could never have returned.
 */
function decodeCursor(cursor: string): SchedulePosition {
  const { gsi1sk, name } = cursorFields(cursor);
  if (typeof gsi1sk === 'string' && typeof name === 'string' && SCHEDULE_NAME_PATTERN.test(name) && /^(?:\d{15}|ENDED|PAUSED)$/.test(gsi1sk.slice(0, -name.length - 1)) && gsi1sk.endsWith(`#${name}`)) {
    return { gsi1sk, name };
  }
  throw invalidCursor();
}

/** How many schedules a listing reads at a time at most while it passes over schedules it does not show. */
const SCHEDULES_READ_AT_MOST = 100;

/**
 * A page of the schedules `visible` lets through, next to fire first (then ended, then paused), with a cursor
 * to the next page. The filter runs before the page is cut, and the cursor is the position of the page's last
 * schedule, so neither the page nor its cursor tells anything of the schedules left out; a page may read past
 * many of them to fill up.
 */
export async function listSchedules(
  ctx: QueueContext,
  options: { limit: number; cursor?: string; visible: (schedule: Schedule) => boolean },
): Promise<{ schedules: Schedule[]; nextCursor?: string }> {
  const { limit, visible } = options;
  const found: { schedule: Schedule; position: SchedulePosition }[] = [];
  let after = options.cursor !== undefined ? decodeCursor(options.cursor) : undefined;
  // One schedule past the page tells whether another page follows; reads grow while they find few to show.
  let readSize = limit + 1;
  while (found.length <= limit) {
    const page = await pageOfSchedules(ctx, readSize, after);
    found.push(...page.schedules.filter(({ schedule }) => visible(schedule)));
    if (!page.last) break;
    after = page.last;
    readSize = Math.min(readSize * 2, Math.max(limit + 1, SCHEDULES_READ_AT_MOST));
  }
  const shown = found.slice(0, limit);
  const last = shown.at(-1);
  return { schedules: shown.map(({ schedule }) => schedule), ...(found.length > limit && last ? { nextCursor: encodeCursor(last.position) } : {}) };
}

/** The status of the job each schedule's last fire made, by schedule name (none for a schedule whose job is gone or that made none). */
export async function lastJobStatuses(ctx: QueueContext, schedules: readonly Schedule[]): Promise<Map<string, JobStatus>> {
  const made = schedules.flatMap((schedule) => (schedule.lastFire?.jobId !== undefined ? [{ schedule: schedule.name, type: schedule.jobType, id: schedule.lastFire.jobId }] : []));
  if (made.length === 0) return new Map();
  const jobs = new Map((await batchGetItems(ctx, made.map(({ type, id }) => jobKey(type, id)))).map(itemToJob).map((job) => [`${job.type}\u0000${job.id}`, job.status]));
  return new Map(made.flatMap(({ schedule, type, id }) => {
    const status = jobs.get(`${type}\u0000${id}`);
    return status ? [[schedule, status] as const] : [];
  }));
}
