/**
 * Every operation the api serves, once: the router is built from this table and the OpenAPI document is
 * generated from it, with the zod schemas the routes validate with, so the two cannot drift apart.
 */
import type { z } from 'zod';
import { apiKeyInputSchema, apiKeyListSchema, apiKeySchema, createdApiKeySchema } from '../../lib/wire/api-keys.js';
import { batchResultSchema, healthSchema, jobberQueueResultSchema, openApiDocumentSchema } from '../../lib/wire/api-responses.js';
import { bulkOperationSchema, bulkRequestSchema } from '../../lib/wire/bulk.js';
import { batchDocumentSchema, callbackSchema, correlationCallbackSchema, heartbeatSchema, jobberQueueSchema, listJobsQuerySchema, metricsQuerySchema } from '../../lib/wire/api-requests.js';
import { definedJobTypeSchema, jobTypeInputSchema, jobTypeListSchema, jobTypeSchema, jobTypeWithStatsSchema } from '../../lib/wire/job-types.js';
import { cancelledJobSchema, cancellingJobSchema, jobInputSchema, jobPageSchema, jobPatchSchema, jobSchema } from '../../lib/wire/jobs.js';
import { metricsSchema } from '../../lib/wire/metrics.js';
import { deletedScheduleSchema, listSchedulesQuerySchema, schedulePageSchema, scheduleInputSchema, scheduleSchema } from '../../lib/wire/schedules.js';
import { statsSchema } from '../../lib/wire/stats.js';
import { ADMIN, PUBLIC, typeScope, type Access } from './access.js';

export type Method = 'GET' | 'PUT' | 'POST' | 'PATCH' | 'DELETE';
export type SuccessStatus = 200 | 201 | 202;

export interface Operation {
  method: Method;
  /** API Gateway's template: `{name}` matches one segment. */
  path: string;
  access: Access;
  /** The route that serves it, by its name in createRoutes; also the OpenAPI operationId. */
  route: string;
  summary: string;
  /** Each status of a success with the schema of its body: an idempotent create answers 201 when it created, 200 when it was there already. */
  responses: Readonly<Partial<Record<SuccessStatus, z.ZodType>>>;
  body?: z.ZodType;
  query?: z.ZodType;
  /** Request headers it reads, beside the key. */
  headers?: readonly HeaderParameter[];
}

export interface HeaderParameter {
  name: string;
  description: string;
  pattern: string;
}

/** An enqueue's W3C trace context (lib/domain/trace-context.ts): later versions' extra fields are read past. */
const TRACEPARENT_HEADER: HeaderParameter = {
  name: 'traceparent',
  description: 'W3C trace context of the request: its jobs are kept in that trace, and each attempt runs as a child span. Not one: 400.',
  pattern: '^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}(-.*)?$',
};
const TRACED = [TRACEPARENT_HEADER] as const;

const READ_ANY: Access = { kind: 'any_type', action: 'read' };
/** A schedule's type is in its body or item: the routes check schedule:<type> or read:<type> themselves. */
const SCHEDULE_ANY: Access = { kind: 'any_type', action: 'schedule' };

/** In the order the router matches them: a literal segment before a `{name}` in the same place. */
export const OPERATIONS = [
  { method: 'GET', path: '/health', access: PUBLIC, route: 'health', summary: 'Whether the API answers', responses: { 200: healthSchema } },
  { method: 'GET', path: '/openapi.json', access: PUBLIC, route: 'openApi', summary: 'This description of the API, as OpenAPI 3.1', responses: { 200: openApiDocumentSchema } },
  { method: 'GET', path: '/v1/job-types', access: READ_ANY, route: 'listJobTypes', summary: 'The job types the key may read', responses: { 200: jobTypeListSchema } },
  { method: 'GET', path: '/v1/job-types/{name}', access: typeScope('read', 'name'), route: 'getJobType', summary: 'One job type', responses: { 200: jobTypeWithStatsSchema } },
  { method: 'PUT', path: '/v1/job-types/{name}', access: ADMIN, route: 'putJobType', summary: 'Create or replace a job type (idempotent)', responses: { 201: definedJobTypeSchema, 200: definedJobTypeSchema }, body: jobTypeInputSchema },
  { method: 'POST', path: '/v1/job-types/{name}/pause', access: ADMIN, route: 'pauseJobType', summary: 'Stop claiming the type’s jobs', responses: { 200: jobTypeSchema } },
  { method: 'POST', path: '/v1/job-types/{name}/resume', access: ADMIN, route: 'resumeJobType', summary: 'Claim the type’s jobs again', responses: { 200: jobTypeSchema } },
  { method: 'GET', path: '/v1/stats', access: READ_ANY, route: 'stats', summary: 'Due, scheduled and running jobs per type, the live pollers and workers, and the alarms where the server evaluates them', responses: { 200: statsSchema } },
  { method: 'GET', path: '/v1/metrics', access: READ_ANY, route: 'metrics', summary: 'Per-minute outcomes and lag per type', responses: { 200: metricsSchema }, query: metricsQuerySchema },
  { method: 'POST', path: '/v1/jobs/{type}', access: typeScope('enqueue'), route: 'enqueueWithServerId', summary: 'Enqueue a job under a new server id', responses: { 201: jobSchema }, body: jobInputSchema, headers: TRACED },
  { method: 'GET', path: '/v1/jobs/{type}', access: typeScope('read'), route: 'listJobs', summary: 'List the type’s jobs by status, or by tag (newest enqueued first)', responses: { 200: jobPageSchema }, query: listJobsQuerySchema },
  { method: 'POST', path: '/v1/jobs/{type}/batch', access: typeScope('enqueue'), route: 'enqueueBatch', summary: 'Enqueue up to 100 jobs, each answered on its own', responses: { 200: batchResultSchema }, body: batchDocumentSchema, headers: TRACED },
  { method: 'POST', path: '/v1/jobs/{type}/bulk', access: typeScope('enqueue'), route: 'startBulk', summary: 'Start a bulk retry or cancel of the type’s jobs (idempotent)', responses: { 202: bulkOperationSchema, 200: bulkOperationSchema }, body: bulkRequestSchema },
  { method: 'PUT', path: '/v1/jobs/{type}/{id}', access: typeScope('enqueue'), route: 'enqueueWithId', summary: 'Enqueue a job under its own id (idempotent)', responses: { 201: jobSchema, 200: jobSchema }, body: jobInputSchema, headers: TRACED },
  { method: 'GET', path: '/v1/jobs/{type}/{id}', access: typeScope('read'), route: 'getJob', summary: 'One job with its history', responses: { 200: jobSchema } },
  { method: 'POST', path: '/v1/jobs/{type}/{id}', access: { kind: 'callback' }, route: 'callback', summary: 'Status callback: end the open attempt', responses: { 200: jobSchema }, body: callbackSchema },
  { method: 'DELETE', path: '/v1/jobs/{type}/{id}', access: typeScope('enqueue'), route: 'cancel', summary: 'Cancel a job that has not finished: 200 when it ended cancelled at once (queued, awaiting its callback), 202 when it was running and its worker is stopping it (it ends cancelled within seconds)', responses: { 200: cancelledJobSchema, 202: cancellingJobSchema } },
  { method: 'PATCH', path: '/v1/jobs/{type}/{id}', access: typeScope('enqueue'), route: 'changeJob', summary: 'Move a queued job (run it now), or change its priority or expiry', responses: { 200: jobSchema }, body: jobPatchSchema },
  { method: 'POST', path: '/v1/jobs/{type}/{id}/heartbeat', access: { kind: 'callback' }, route: 'heartbeat', summary: 'Extend the open attempt’s claim, and report its progress', responses: { 200: jobSchema }, body: heartbeatSchema },
  { method: 'POST', path: '/v1/jobs/{type}/{id}/replay', access: typeScope('enqueue'), route: 'replay', summary: 'Run a finished job again', responses: { 201: jobSchema } },
  { method: 'POST', path: '/v1/callbacks/{correlation_key}', access: { kind: 'any_type', action: 'callback' }, route: 'callbackByCorrelationKey', summary: 'Status callback for the unfinished job holding a correlation key, among the types the key may call back', responses: { 200: jobSchema }, body: correlationCallbackSchema },
  { method: 'GET', path: '/v1/operations/{id}', access: READ_ANY, route: 'getOperation', summary: 'A bulk operation’s progress (read scope on its type)', responses: { 200: bulkOperationSchema } },
  { method: 'POST', path: '/jobber/queue', access: { kind: 'any_type', action: 'enqueue' }, route: 'jobberQueue', summary: 'Enqueue in the Jobber format: the type in the body', responses: { 201: jobberQueueResultSchema }, body: jobberQueueSchema, headers: TRACED },
  { method: 'POST', path: '/v1/keys', access: ADMIN, route: 'createKey', summary: 'Create an API key (the key is shown once)', responses: { 201: createdApiKeySchema }, body: apiKeyInputSchema },
  { method: 'GET', path: '/v1/keys', access: ADMIN, route: 'listKeys', summary: 'List API keys (never the keys themselves)', responses: { 200: apiKeyListSchema } },
  { method: 'DELETE', path: '/v1/keys/{id}', access: ADMIN, route: 'revokeKey', summary: 'Revoke an API key', responses: { 200: apiKeySchema } },
  { method: 'GET', path: '/v1/schedules', access: READ_ANY, route: 'listSchedules', summary: 'The schedules of types the key may read, by next fire time', responses: { 200: schedulePageSchema }, query: listSchedulesQuerySchema },
  { method: 'PUT', path: '/v1/schedules/{name}', access: SCHEDULE_ANY, route: 'putSchedule', summary: 'Create or replace a recurring schedule (idempotent)', responses: { 201: scheduleSchema, 200: scheduleSchema }, body: scheduleInputSchema },
  { method: 'GET', path: '/v1/schedules/{name}', access: READ_ANY, route: 'getSchedule', summary: 'One schedule with its next fire times and last fire', responses: { 200: scheduleSchema } },
  { method: 'DELETE', path: '/v1/schedules/{name}', access: SCHEDULE_ANY, route: 'deleteSchedule', summary: 'Delete a schedule (its jobs stay)', responses: { 200: deletedScheduleSchema } },
  { method: 'POST', path: '/v1/schedules/{name}/pause', access: SCHEDULE_ANY, route: 'pauseSchedule', summary: 'Stop firing the schedule', responses: { 200: scheduleSchema } },
  { method: 'POST', path: '/v1/schedules/{name}/resume', access: SCHEDULE_ANY, route: 'resumeSchedule', summary: 'Fire the schedule again, catching up as it says', responses: { 200: scheduleSchema } },
] as const satisfies readonly Operation[];

/** The names createRoutes must serve. */
export type RouteName = (typeof OPERATIONS)[number]['route'];

