/**
 * `/v1/schedules`: define, read, list, pause, resume and delete recurring schedules. A schedule's job type is
 * in its body or its item, not its path: each route checks `schedule:<type>` (managing) or `read:<type>` itself.
 */
import { scopeAllows, type ScopeAction } from '../../../lib/domain/api-key.js';
import { ForbiddenError } from '../../../lib/domain/errors.js';
import { SCHEDULE_NAME_PATTERN, type Schedule } from '../../../lib/domain/schedule.js';
import { getJob } from '../../../lib/queue/jobs.js';
import { deleteSchedule, getSchedule, listSchedules, putSchedule, requireSchedule, setSchedulePaused } from '../../../lib/queue/schedules.js';
import { parseWith } from '../../../lib/wire/parse.js';
import {
  listSchedulesQuerySchema,
  scheduleDefinitionFromInput,
  scheduleInputSchema,
  scheduleToApi,
  UPCOMING_FIRES_SHOWN,
} from '../../../lib/wire/schedules.js';
import type { Principal } from '../../shared/principal.js';
import { json, type HttpEvent } from '../../shared/http.js';
import { parseJsonBody, pathParam } from '../http.js';
import type { Route, RouteDeps } from './route.js';

const scheduleName = (event: HttpEvent): string => pathParam(event, 'name', SCHEDULE_NAME_PATTERN);

const allows = (principal: Principal | undefined, action: ScopeAction, type: string): boolean =>
  principal?.kind === 'key' && scopeAllows(principal.scopes, action, type);

function assertAllowed(principal: Principal | undefined, action: ScopeAction, type: string): void {
  if (!allows(principal, action, type)) throw new ForbiddenError(`this route needs scope ${action}:${type}`);
}

export function scheduleRoutes({ ctx, jobTypes }: RouteDeps) {
  /** The schedule, once the caller may `action` schedules of its type. */
  const scheduleFor = async (event: HttpEvent, principal: Principal | undefined, action: ScopeAction): Promise<Schedule> => {
    const schedule = await requireSchedule(ctx, scheduleName(event));
    assertAllowed(principal, action, schedule.jobType);
    return schedule;
  };
  return {
    putSchedule: async (event, principal) => {
      const name = scheduleName(event);
      const body = parseWith(scheduleInputSchema, parseJsonBody(event));
      assertAllowed(principal, 'schedule', body.job_type);
      const definition = scheduleDefinitionFromInput(body);
      const jobType = await jobTypes.require(definition.jobType);
      // Moving a schedule to another type takes the scope of the type it leaves, too.
      const existing = await getSchedule(ctx, name);
      if (existing) assertAllowed(principal, 'schedule', existing.jobType);
      const { schedule, created } = await putSchedule(ctx, name, definition, jobType);
      return json(created ? 201 : 200, scheduleToApi(schedule, UPCOMING_FIRES_SHOWN));
    },
    listSchedules: async (event, principal) => {
      const query = parseWith(listSchedulesQuerySchema, event.queryStringParameters ?? {});
      const page = await listSchedules(ctx, { limit: query.limit, ...(query.cursor !== undefined ? { cursor: query.cursor } : {}) });
      const readable = page.schedules.filter((schedule) => allows(principal, 'read', schedule.jobType));
      return json(200, { schedules: readable.map((schedule) => scheduleToApi(schedule)), next_cursor: page.nextCursor ?? null });
    },
    getSchedule: async (event, principal) => {
      const schedule = await scheduleFor(event, principal, 'read');
      const lastJobId = schedule.lastFire?.jobId;
      const lastJob = lastJobId !== undefined ? await getJob(ctx, schedule.jobType, lastJobId) : undefined;
      const body = scheduleToApi(schedule, UPCOMING_FIRES_SHOWN);
      const lastFire = body.last_fire as Record<string, unknown> | null;
      return json(200, { ...body, last_fire: lastFire && { ...lastFire, job_status: lastJob?.status ?? null } });
    },
    deleteSchedule: async (event, principal) => {
      const schedule = await scheduleFor(event, principal, 'schedule');
      await deleteSchedule(ctx, schedule.name);
      return json(200, { name: schedule.name, deleted: true });
    },
    pauseSchedule: async (event, principal) => {
      const schedule = await scheduleFor(event, principal, 'schedule');
      return json(200, scheduleToApi(await setSchedulePaused(ctx, schedule.name, true), UPCOMING_FIRES_SHOWN));
    },
    resumeSchedule: async (event, principal) => {
      const schedule = await scheduleFor(event, principal, 'schedule');
      return json(200, scheduleToApi(await setSchedulePaused(ctx, schedule.name, false), UPCOMING_FIRES_SHOWN));
    },
  } satisfies Record<string, Route>;
}
