/**
 * Every operation the api serves, once: the router is built from this table and the OpenAPI document is
 * generated from it, with the zod schemas the routes validate with, so the two cannot drift apart.
 */
import type { z } from 'zod';
import { apiKeyInputSchema } from '../../lib/wire/api-keys.js';
import { batchDocumentSchema, callbackSchema, correlationCallbackSchema, heartbeatSchema, jobberQueueSchema, listJobsQuerySchema, metricsQuerySchema } from '../../lib/wire/api-requests.js';
import { bulkRequestSchema } from '../../lib/wire/bulk.js';
import { jobTypeInputSchema } from '../../lib/wire/job-types.js';
import { jobInputSchema, jobPatchSchema } from '../../lib/wire/jobs.js';
import { listSchedulesQuerySchema, scheduleInputSchema } from '../../lib/wire/schedules.js';
import { ADMIN, PUBLIC, typeScope, type Access } from './access.js';

export type Method = 'GET' | 'PUT' | 'POST' | 'PATCH' | 'DELETE';

export interface Operation {
  method: Method;
  /** API Gateway's template: `{name}` matches one segment. */
  path: string;
  access: Access;
  /** The route that serves it, by its name in createRoutes; also the OpenAPI operationId. */
  route: string;
  summary: string;
  /** The statuses of a success: an idempotent create answers 201 when it created, 200 when it was there already. */
  statuses: readonly number[];
  body?: z.ZodType;
  query?: z.ZodType;
}

const READ_ANY: Access = { kind: 'any_type', action: 'read' };
/** A schedule's type is in its body or item: the routes check schedule:<type> or read:<type> themselves. */
const SCHEDULE_ANY: Access = { kind: 'any_type', action: 'schedule' };

/** In the order the router matches them: a literal segment before a `{name}` in the same place. */
export const OPERATIONS = [
  { method: 'GET', path: '/health', access: PUBLIC, route: 'health', summary: 'Whether the API answers', statuses: [200] },
  { method: 'GET', path: '/openapi.json', access: PUBLIC, route: 'openApi', summary: 'This description of the API, as OpenAPI 3.1', statuses: [200] },
  { method: 'GET', path: '/v1/job-types', access: READ_ANY, route: 'listJobTypes', summary: 'The job types the key may read', statuses: [200] },
  { method: 'GET', path: '/v1/job-types/{name}', access: typeScope('read', 'name'), route: 'getJobType', summary: 'One job type', statuses: [200] },
  { method: 'PUT', path: '/v1/job-types/{name}', access: ADMIN, route: 'putJobType', summary: 'Create or replace a job type (idempotent)', statuses: [201, 200], body: jobTypeInputSchema },
  { method: 'POST', path: '/v1/job-types/{name}/pause', access: ADMIN, route: 'pauseJobType', summary: 'Stop claiming the type’s jobs', statuses: [200] },
  { method: 'POST', path: '/v1/job-types/{name}/resume', access: ADMIN, route: 'resumeJobType', summary: 'Claim the type’s jobs again', statuses: [200] },
  { method: 'GET', path: '/v1/stats', access: READ_ANY, route: 'stats', summary: 'Due, scheduled and running jobs per type', statuses: [200] },
  { method: 'GET', path: '/v1/metrics', access: READ_ANY, route: 'metrics', summary: 'Per-minute outcomes and lag per type', statuses: [200], query: metricsQuerySchema },
  { method: 'POST', path: '/v1/jobs/{type}', access: typeScope('enqueue'), route: 'enqueueWithServerId', summary: 'Enqueue a job under a new server id', statuses: [201], body: jobInputSchema },
  { method: 'GET', path: '/v1/jobs/{type}', access: typeScope('read'), route: 'listJobs', summary: 'List the type’s jobs by status', statuses: [200], query: listJobsQuerySchema },
  { method: 'POST', path: '/v1/jobs/{type}/batch', access: typeScope('enqueue'), route: 'enqueueBatch', summary: 'Enqueue up to 100 jobs, each answered on its own', statuses: [200], body: batchDocumentSchema },
  { method: 'POST', path: '/v1/jobs/{type}/bulk', access: typeScope('enqueue'), route: 'startBulk', summary: 'Start a bulk retry or cancel of the type’s jobs (idempotent)', statuses: [202, 200], body: bulkRequestSchema },
  { method: 'PUT', path: '/v1/jobs/{type}/{id}', access: typeScope('enqueue'), route: 'enqueueWithId', summary: 'Enqueue a job under its own id (idempotent)', statuses: [201, 200], body: jobInputSchema },
  { method: 'GET', path: '/v1/jobs/{type}/{id}', access: typeScope('read'), route: 'getJob', summary: 'One job with its history', statuses: [200] },
  { method: 'POST', path: '/v1/jobs/{type}/{id}', access: { kind: 'callback' }, route: 'callback', summary: 'Status callback: end the open attempt', statuses: [200], body: callbackSchema },
  { method: 'DELETE', path: '/v1/jobs/{type}/{id}', access: typeScope('enqueue'), route: 'cancel', summary: 'Cancel a queued job', statuses: [200] },
  { method: 'PATCH', path: '/v1/jobs/{type}/{id}', access: typeScope('enqueue'), route: 'changeJob', summary: 'Move a queued job (run it now), or change its priority or expiry', statuses: [200], body: jobPatchSchema },
  { method: 'POST', path: '/v1/jobs/{type}/{id}/heartbeat', access: { kind: 'callback' }, route: 'heartbeat', summary: 'Extend the open attempt’s claim, and report its progress', statuses: [200], body: heartbeatSchema },
  { method: 'POST', path: '/v1/jobs/{type}/{id}/replay', access: typeScope('enqueue'), route: 'replay', summary: 'Run a finished job again', statuses: [201] },
  { method: 'POST', path: '/v1/callbacks/{correlation_key}', access: { kind: 'any_type', action: 'callback' }, route: 'callbackByCorrelationKey', summary: 'Status callback for the unfinished job holding a correlation key', statuses: [200], body: correlationCallbackSchema },
  { method: 'GET', path: '/v1/operations/{id}', access: READ_ANY, route: 'getOperation', summary: 'A bulk operation’s progress (read scope on its type)', statuses: [200] },
  { method: 'POST', path: '/jobber/queue', access: { kind: 'any_type', action: 'enqueue' }, route: 'jobberQueue', summary: 'Enqueue in the Jobber format: the type in the body', statuses: [201], body: jobberQueueSchema },
  { method: 'POST', path: '/v1/keys', access: ADMIN, route: 'createKey', summary: 'Create an API key (the key is shown once)', statuses: [201], body: apiKeyInputSchema },
  { method: 'GET', path: '/v1/keys', access: ADMIN, route: 'listKeys', summary: 'List API keys (never the keys themselves)', statuses: [200] },
  { method: 'DELETE', path: '/v1/keys/{id}', access: ADMIN, route: 'revokeKey', summary: 'Revoke an API key', statuses: [200] },
  { method: 'GET', path: '/v1/schedules', access: READ_ANY, route: 'listSchedules', summary: 'The schedules of types the key may read, by next fire time', statuses: [200], query: listSchedulesQuerySchema },
  { method: 'PUT', path: '/v1/schedules/{name}', access: SCHEDULE_ANY, route: 'putSchedule', summary: 'Create or replace a recurring schedule (idempotent)', statuses: [201, 200], body: scheduleInputSchema },
  { method: 'GET', path: '/v1/schedules/{name}', access: READ_ANY, route: 'getSchedule', summary: 'One schedule with its next fire times and last fire', statuses: [200] },
  { method: 'DELETE', path: '/v1/schedules/{name}', access: SCHEDULE_ANY, route: 'deleteSchedule', summary: 'Delete a schedule (its jobs stay)', statuses: [200] },
  { method: 'POST', path: '/v1/schedules/{name}/pause', access: SCHEDULE_ANY, route: 'pauseSchedule', summary: 'Stop firing the schedule', statuses: [200] },
  { method: 'POST', path: '/v1/schedules/{name}/resume', access: SCHEDULE_ANY, route: 'resumeSchedule', summary: 'Fire the schedule again, catching up as it says', statuses: [200] },
] as const satisfies readonly Operation[];

/** The names createRoutes must serve. */
export type RouteName = (typeof OPERATIONS)[number]['route'];
