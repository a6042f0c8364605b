/**
 * `/v1/schedules`: define, read, list, pause, resume and delete recurring schedules. A schedule's job type is
 * in its body or its item, not its path: each route checks `schedule:<type>` (managing) or `read:<type>` itself.
 */
import type { ScopeAction } from '../../../lib/domain/api-key.js';
import { ConflictError, ForbiddenError, NotFoundError } from '../../../lib/domain/errors.js';
import { SCHEDULE_NAME_PATTERN, type Schedule } from '../../../lib/domain/schedule.js';
import { deleteSchedule, getSchedule, lastJobStatuses, listSchedules, putSchedule, setSchedulePaused } from '../../../lib/queue/schedules/manage-schedules.js';
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
import { holdsScopeOn, keyAllows, mayRead } from '../access.js';
import { parseJsonBody, pathParam } from '../http.js';
import type { Route, RouteDeps } from './route.js';

const scheduleName = (event: HttpEvent): string => pathParam(event, 'name', SCHEDULE_NAME_PATTERN);

function assertAllowed(principal: Principal | undefined, action: ScopeAction, type: string): void {
  if (!keyAllows(principal, action, type)) throw new ForbiddenError(`this route needs scope ${action}:${type}`);
}

const missing = (name: string): NotFoundError => new NotFoundError(`schedule "${name}" does not exist`);

/** The schedule as the API shows it, its last fire with the status of the job it made (null when it made none or the job is gone). */
function withJobStatus(body: Record<string, unknown>, status: string | undefined): Record<string, unknown> {
  const lastFire = body.last_fire as Record<string, unknown> | null;
  return { ...body, last_fire: lastFire && { ...lastFire, job_status: status ?? null } };
}

/**
 * A schedule as the caller may see it: to a key that manages the type's schedules but may not read the type,
 * without the data of the jobs it makes nor the job its last fire made (as jobAnswer withholds a job's).
 */
function scheduleAnswer(schedule: Schedule, principal: Principal | undefined): Record<string, unknown> {
  const body = scheduleToApi(schedule, UPCOMING_FIRES_SHOWN);
  if (mayRead(principal, schedule.jobType)) return body;
  const lastFire = body.last_fire as Record<string, unknown> | null;
  return { ...body, data: null, throttle_key: null, last_fire: lastFire && { ...lastFire, job_id: null } };
}

export function scheduleRoutes({ ctx, jobTypes }: RouteDeps) {
  /** The schedule, once the caller may `action` schedules of its type; one of a type the caller holds no scope on is missing to it. */
  const scheduleFor = async (event: HttpEvent, principal: Principal | undefined, action: ScopeAction): Promise<Schedule> => {
    const name = scheduleName(event);
    const schedule = await getSchedule(ctx, name);
    if (schedule === undefined || !holdsScopeOn(principal, schedule.jobType)) throw missing(name);
    assertAllowed(principal, action, schedule.jobType);
    return schedule;
  };
  /** The check scheduleFor makes, made again on every read of a change: the schedule may have moved to another type since. */
  const mayManage =
    (principal: Principal | undefined, name: string) =>
    (existing: Schedule): void => {
      if (!holdsScopeOn(principal, existing.jobType)) throw missing(name);
      assertAllowed(principal, 'schedule', existing.jobType);
    };
  return {
    putSchedule: async (event, principal) => {
      const name = scheduleName(event);
      const body = parseWith(scheduleInputSchema, parseJsonBody(event));
      assertAllowed(principal, 'schedule', body.job_type);
      const definition = scheduleDefinitionFromInput(body);
      const jobType = await jobTypes.require(definition.jobType);
      // Moving a schedule to another type takes the scope of the type it leaves, too, checked on the very
      // read the write is conditioned on. Names are shared by all types: one taken by a type the caller holds
      // no scope on can only be refused, as taken, without its type.
      const mayReplace = (existing: Schedule): void => {
        if (!holdsScopeOn(principal, existing.jobType)) {
          throw new ConflictError(`schedule "${name}" already exists for a job type this key holds no scope on`, [
            { field: 'name', message: 'is taken by a schedule this key may not see' },
          ]);
        }
        assertAllowed(principal, 'schedule', existing.jobType);
      };
      const { schedule, created } = await putSchedule(ctx, name, definition, jobType, mayReplace);
      return json(created ? 201 : 200, scheduleAnswer(schedule, principal));
    },
    listSchedules: async (event, principal) => {
      const query = parseWith(listSchedulesQuerySchema, event.queryStringParameters ?? {});
      const page = await listSchedules(ctx, {
        limit: query.limit,
        ...(query.cursor !== undefined ? { cursor: query.cursor } : {}),
        visible: (schedule) => mayRead(principal, schedule.jobType),
      });
      const statuses = await lastJobStatuses(ctx, page.schedules);
      return json(200, { schedules: page.schedules.map((schedule) => withJobStatus(scheduleToApi(schedule), statuses.get(schedule.name))), next_cursor: page.nextCursor ?? null });
    },
    getSchedule: async (event, principal) => {
      const schedule = await scheduleFor(event, principal, 'read');
      const statuses = await lastJobStatuses(ctx, [schedule]);
      return json(200, withJobStatus(scheduleToApi(schedule, UPCOMING_FIRES_SHOWN), statuses.get(schedule.name)));
    },
    deleteSchedule: async (event, principal) => {
      const schedule = await scheduleFor(event, principal, 'schedule');
      await deleteSchedule(ctx, schedule.name, schedule.jobType);
      return json(200, { name: schedule.name, deleted: true });
    },
    pauseSchedule: async (event, principal) => {
      const schedule = await scheduleFor(event, principal, 'schedule');
      return json(200, scheduleAnswer(await setSchedulePaused(ctx, schedule.name, true, mayManage(principal, schedule.name)), principal));
    },
    resumeSchedule: async (event, principal) => {
      const schedule = await scheduleFor(event, principal, 'schedule');
      return json(200, scheduleAnswer(await setSchedulePaused(ctx, schedule.name, false, mayManage(principal, schedule.name)), principal));
    },
  } satisfies Record<string, Route>;
}
