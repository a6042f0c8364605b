/** The client's schedule methods: `/v1/schedules`. Every one but delete is safe to repeat, so retried. */
import type { Requester } from './transport.js';
import { wireBody } from './wire.js';
import type { Schedule, ScheduleBody, SchedulePage } from './schedule-types.js';

export interface ScheduleMethods {
  /** `PUT /v1/schedules/{name}`: creates or replaces a schedule. Needs `schedule:<type>` (or admin). Retried. */
  defineSchedule(name: string, body: ScheduleBody): Promise<Schedule>;
  /** The schedule, its next fire times and its last fire with the job it made. Needs `read:<type>`. */
  getSchedule(name: string): Promise<Schedule>;
  /** One page of the schedules the key may read, next to fire first. */
  listSchedules(options?: { limit?: number; cursor?: string | null }): Promise<SchedulePage>;
  /** Makes no job until `resumeSchedule`; resumed, it fires what it missed as its `catch_up` says. Retried. */
  pauseSchedule(name: string): Promise<Schedule>;
  resumeSchedule(name: string): Promise<Schedule>;
  /** Deletes the schedule; the jobs it made stay. Not retried: a repeat would be answered 404. */
  deleteSchedule(name: string): Promise<{ name: string; deleted: true }>;
}

export function scheduleMethods(request: Requester): ScheduleMethods {
  return {
    defineSchedule: (name, body) => request({ method: 'PUT', path: ['v1', 'schedules', name], body: wireBody(body), idempotent: true }),
    getSchedule: (name) => request({ method: 'GET', path: ['v1', 'schedules', name], idempotent: true }),
    listSchedules: ({ limit, cursor } = {}) => request({ method: 'GET', path: ['v1', 'schedules'], query: { limit, cursor }, idempotent: true }),
    pauseSchedule: (name) => request({ method: 'POST', path: ['v1', 'schedules', name, 'pause'], idempotent: true }),
    resumeSchedule: (name) => request({ method: 'POST', path: ['v1', 'schedules', name, 'resume'], idempotent: true }),
    deleteSchedule: (name) => request({ method: 'DELETE', path: ['v1', 'schedules', name], idempotent: false }),
  };
}
