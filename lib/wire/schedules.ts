/** Schedules on the wire: the body `PUT /v1/schedules/{name}` accepts and the schedule as the API returns it. */
import { z } from 'zod';
import { assertValidCron, MAX_CRON_CHARS } from '../domain/cron.js';
import { DEFAULT_PRIORITY, MAX_PAGE_SIZE, DEFAULT_PAGE_SIZE, JOB_STATUSES } from '../domain/job.js';
import { JOB_TYPE_NAME_PATTERN } from '../domain/job-type.js';
import { assertJsonSize } from '../domain/json-size.js';
import { CATCH_UP_POLICIES, OVERLAP_POLICIES, upcomingFireTimes, type Schedule, type ScheduleDefinition } from '../domain/schedule.js';
import { instantSchema, jsonValueSchema, nextCursorSchema, tagsSchema, throttleKeySchema } from './fields.js';
import { isoWithOffset } from './jobs.js';
import { isoOrNull } from './parse.js';

/**
 * A schedule's item is written at every fire, and a write costs a unit per KB of the item: its data is kept
 * small, so a fire stays cheap. Larger inputs belong in the job's own store, named by the data.
 */
export const MAX_SCHEDULE_DATA_BYTES = 16 * 1024;

/** How many coming fire times `GET /v1/schedules/{name}` shows. */
export const UPCOMING_FIRES_SHOWN = 5;

export const scheduleInputSchema = z
  .strictObject({
    cron: z.string().min(1).max(MAX_CRON_CHARS, `must be at most ${MAX_CRON_CHARS} characters`),
    tz: z.string().max(64).default('UTC'),
    job_type: z.string().regex(JOB_TYPE_NAME_PATTERN, `must match ${JOB_TYPE_NAME_PATTERN.source}`),
    data: jsonValueSchema.default(null),
    priority: z.number().int().min(0).max(1000).default(DEFAULT_PRIORITY),
    weight: z.number().int().min(0).max(100_000).default(1),
    throttle_key: throttleKeySchema.nullable().optional(),
    tags: tagsSchema.nullable().optional().meta({ description: 'The tags each job it makes carries' }),
    overlap: z.enum(OVERLAP_POLICIES).default('allow'),
    catch_up: z.enum(CATCH_UP_POLICIES).default('latest'),
    start_at: isoWithOffset.nullable().optional(),
    end_at: isoWithOffset.nullable().optional(),
  })
  .superRefine((body, ctx) => {
    if (body.start_at && body.end_at && Date.parse(body.end_at) <= Date.parse(body.start_at)) {
      ctx.addIssue({ code: 'custom', path: ['end_at'], message: 'must be after start_at' });
    }
  });

export type ScheduleInput = z.output<typeof scheduleInputSchema>;

/** The definition a valid body says; a cron string or zone the cron library cannot read is a ValidationError naming it. */
export function scheduleDefinitionFromInput(body: ScheduleInput): ScheduleDefinition {
  assertJsonSize('data', body.data, MAX_SCHEDULE_DATA_BYTES);
  const definition: ScheduleDefinition = {
    cron: body.cron.trim(),
    tz: body.tz,
    jobType: body.job_type,
    data: body.data,
    priority: body.priority,
    weight: body.weight,
    ...(body.throttle_key ? { throttleKey: body.throttle_key } : {}),
    ...(body.tags && body.tags.length > 0 ? { tags: body.tags } : {}),
    overlap: body.overlap,
    catchUp: body.catch_up,
    ...(body.start_at ? { startAtMs: Date.parse(body.start_at) } : {}),
    ...(body.end_at ? { endAtMs: Date.parse(body.end_at) } : {}),
  };
  assertValidCron(definition);
  return definition;
}

export const listSchedulesQuerySchema = z.strictObject({
  limit: z.coerce.number().int().min(1).max(MAX_PAGE_SIZE).default(DEFAULT_PAGE_SIZE),
  cursor: z.string().max(2048).optional(),
});

export function scheduleToApi(schedule: Schedule, upcoming = 1): Record<string, unknown> {
  const { lastFire } = schedule;
  return {
    name: schedule.name,
    cron: schedule.cron,
    tz: schedule.tz,
    job_type: schedule.jobType,
    data: schedule.data,
    priority: schedule.priority,
    weight: schedule.weight,
    throttle_key: schedule.throttleKey ?? null,
    tags: schedule.tags ?? [],
    overlap: schedule.overlap,
    catch_up: schedule.catchUp,
    start_at: isoOrNull(schedule.startAtMs),
    end_at: isoOrNull(schedule.endAtMs),
    paused: schedule.paused,
    next_fire_at: isoOrNull(schedule.nextFireAtMs ?? undefined),
    ...(upcoming > 1 ? { next_fires: upcomingFireTimes(schedule, upcoming).map((atMs) => new Date(atMs).toISOString()) } : {}),
    last_fire: lastFire
      ? { fire_at: isoOrNull(lastFire.fireAtMs), fired_at: isoOrNull(lastFire.firedAtMs), job_id: lastFire.jobId ?? null, skipped: lastFire.skipped ?? null }
      : null,
    created_at: isoOrNull(schedule.createdAtMs),
    updated_at: isoOrNull(schedule.updatedAtMs),
  };
}

/** The schedule as scheduleToApi writes it; the routes that read its last fire's job add that job's status. */
export const scheduleSchema = z
  .strictObject({
    name: z.string(),
    cron: z.string(),
    tz: z.string(),
    job_type: z.string(),
    data: jsonValueSchema,
    priority: z.number().int(),
    weight: z.number().int(),
    throttle_key: z.string().nullable(),
    tags: z.array(z.string()),
    overlap: z.enum(OVERLAP_POLICIES),
    catch_up: z.enum(CATCH_UP_POLICIES),
    start_at: instantSchema.nullable(),
    end_at: instantSchema.nullable(),
    paused: z.boolean(),
    next_fire_at: instantSchema.nullable().meta({ description: 'null once end_at has passed every fire time' }),
    next_fires: z.array(instantSchema).optional().meta({ description: `The next ${UPCOMING_FIRES_SHOWN} fire times; in answers about one schedule, not in listings` }),
    last_fire: z
      .strictObject({
        fire_at: instantSchema,
        fired_at: instantSchema,
        job_id: z.string().nullable(),
        skipped: z.string().nullable().meta({ description: 'Why the fire made no job' }),
        job_status: z.enum(JOB_STATUSES).nullable().optional().meta({ description: 'The status of the job it made, now (null when it made none or the job is gone); in GET and list answers' }),
      })
      .nullable(),
    created_at: instantSchema,
    updated_at: instantSchema,
  })
  .meta({ id: 'Schedule' });

export const schedulePageSchema = z.strictObject({ schedules: z.array(scheduleSchema), next_cursor: nextCursorSchema });

export const deletedScheduleSchema = z.strictObject({ name: z.string(), deleted: z.literal(true) });
