/**
 * The api's request bodies and queries that are not a model's own input (jobs, job types and keys have
 * theirs beside the model): their zod schemas, and helpers that parse them into lib's inputs, each failure
 * naming its field from the body's root.
 */
import { z } from 'zod';
import type { FieldIssue } from '../domain/errors.js';
import { jsonValueSchema, tagSchema } from './fields.js';
import { issuesToDetails } from './parse.js';
import { JOB_ID_PATTERN, JOB_STATUSES } from '../domain/job.js';
import { JOB_TYPE_NAME_PATTERN } from '../domain/job-type.js';
import { jobInputFromBody, jobInputSchema } from './jobs.js';
import { MAX_BATCH_JOBS, type BatchJob } from '../domain/job.js';
import type { CallbackInput } from '../domain/attempts.js';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from '../domain/job.js';
import { MAX_METRICS_MINUTES } from '../domain/metrics.js';
import { MAX_PROGRESS_MESSAGE_CHARS } from '../domain/progress.js';

/** `POST /v1/jobs/{type}/{id}`: a status callback. */
export const callbackSchema = z.strictObject({
  status: z.enum(['succeeded', 'failed']),
  attempt: z.number().int().min(1).max(1000),
  retryable: z.boolean().optional(),
  error: z
    .strictObject({
      class: z.string().min(1).max(128).optional(),
      message: z.string().max(10_000).optional(),
      trace: z.string().max(100_000).optional(),
    })
    .optional(),
  result: jsonValueSchema.optional(),
});

/**
 * `POST /v1/callbacks/{correlation_key}`: the status callback, `attempt` optional, since the system that
 * answers under its own reference seldom knows it; the key names the job, whose open attempt it then ends.
 */
export const correlationCallbackSchema = callbackSchema.extend({ attempt: callbackSchema.shape.attempt.optional() });

export function callbackInputOf(body: z.output<typeof correlationCallbackSchema>): CallbackInput {
  return {
    status: body.status,
    ...(body.attempt !== undefined ? { attempt: body.attempt } : {}),
    ...(body.retryable !== undefined ? { retryable: body.retryable } : {}),
    ...(body.error ? { error: body.error } : {}),
    ...(body.result !== undefined ? { result: body.result } : {}),
  };
}

/** A running attempt's progress report; its size as a whole is checked after (assertProgressFits: 413 naming `progress`). */
export const progressSchema = z.strictObject({
  percent: z.number().min(0).max(100).optional(),
  message: z.string().max(MAX_PROGRESS_MESSAGE_CHARS).optional(),
  data: jsonValueSchema.optional(),
});

/** `POST /v1/jobs/{type}/{id}/heartbeat`. */
export const heartbeatSchema = z.strictObject({
  attempt: z.number().int().min(1).max(1000),
  extend_s: z.number().int().min(1).max(43_200).optional(),
  progress: progressSchema.optional(),
});

/** `POST /v1/jobs/{type}/batch` and `.../bulk` are routes of their own, so no job may take those ids: its callbacks could not reach it. */
export const RESERVED_IDS: Readonly<Record<string, string>> = {
  batch: 'is reserved: POST /v1/jobs/{type}/batch enqueues a batch',
  bulk: 'is reserved: POST /v1/jobs/{type}/bulk starts a bulk operation',
};

/**
 * Why `id` may not name a job a client enqueues, or undefined when it may. Ids with `@` are a schedule's
 * (`<schedule>@<fire time>`, predictable): a job enqueued under one would stand in for the fire's job. Jobs
 * enqueued with such ids before they were refused are still read, cancelled and called back by their id.
 */
export const reservedIdMessage = (id: string): string | undefined => {
  if (Object.hasOwn(RESERVED_IDS, id)) return RESERVED_IDS[id];
  return id.includes('@') ? "may not contain '@': ids <schedule>@<fire time> are reserved for the jobs schedules make" : undefined;
};

export const batchSchema = z.strictObject({
  // Each item is validated on its own (parseBatchItem), so one bad item fails alone.
  jobs: z.array(z.unknown()).min(1).max(MAX_BATCH_JOBS),
});

/** An issue of one batch item, its field named from the body's root. */
export const withinItem = (issue: FieldIssue, path: string): FieldIssue => ({
  ...issue,
  field: issue.field === 'body' ? path : `${path}.${issue.field}`,
});

/** A batch item as a job to enqueue (an id of its own or a new server id), or the issues that make it invalid, fields named from the body's root. */
export function parseBatchItem(item: unknown, index: number, newId: () => string): BatchJob | { id?: string; issues: FieldIssue[] } {
  const path = `jobs.${index}`;
  if (typeof item !== 'object' || item === null || Array.isArray(item)) return { issues: [{ field: path, message: 'must be an object' }] };
  const { id, ...body } = item as Record<string, unknown>;
  const issues: FieldIssue[] = [];
  if (id !== undefined && (typeof id !== 'string' || !JOB_ID_PATTERN.test(id))) {
    issues.push({ field: `${path}.id`, message: `must match ${JOB_ID_PATTERN.source}` });
  } else {
    const reserved = typeof id === 'string' ? reservedIdMessage(id) : undefined;
    if (reserved !== undefined) issues.push({ field: `${path}.id`, message: reserved });
  }
  const parsed = jobInputSchema.safeParse(body);
  if (!parsed.success) issues.push(...issuesToDetails(parsed.error).map((issue) => withinItem(issue, path)));
  const ownId = typeof id === 'string' && issues.every((issue) => issue.field !== `${path}.id`) ? id : undefined;
  if (issues.length > 0 || !parsed.success) return { ...(ownId !== undefined ? { id: ownId } : {}), issues };
  return { index, id: ownId ?? newId(), input: jobInputFromBody(parsed.data) };
}

/** `POST /jobber/queue`: a job of the type the body names, its payload as the data. */
export const jobberQueueSchema = z.strictObject({
  type: z.string().regex(JOB_TYPE_NAME_PATTERN, `must match ${JOB_TYPE_NAME_PATTERN.source}`),
  payload: jsonValueSchema.default(null),
});

/** `GET /v1/jobs/{type}?status=&limit=&cursor=`. */
/** `GET /v1/jobs/{type}`: by status, or by tag (in any status, or in the status given with it). */
export const listJobsQuerySchema = z
  .strictObject({
    status: z.enum(JOB_STATUSES).optional().meta({ description: 'Required unless tag is given' }),
    tag: tagSchema.optional().meta({ description: 'Lists the jobs with this tag, newest enqueued first, in any status unless status is given too' }),
    limit: z.coerce.number().int().min(1).max(MAX_PAGE_SIZE).default(DEFAULT_PAGE_SIZE),
    cursor: z.string().min(1).max(2_000).optional(),
  })
  .refine((query) => query.status !== undefined || query.tag !== undefined, { path: ['status'], message: 'is required unless tag is given' });

const DEFAULT_METRICS_MINUTES = 60;
const MINUTES_RANGE = `must be an integer from 1 to ${MAX_METRICS_MINUTES}`;

/** `GET /v1/metrics?minutes=`: 1 to MAX_METRICS_MINUTES, 60 when absent. Other parameters are ignored. */
export const metricsQuerySchema = z.object({
  minutes: z
    .string()
    .regex(/^\d{1,4}$/, MINUTES_RANGE)
    .transform(Number)
    .pipe(z.number().min(1, MINUTES_RANGE).max(MAX_METRICS_MINUTES, MINUTES_RANGE))
    .default(DEFAULT_METRICS_MINUTES),
});

/** `POST /v1/jobs/{type}/batch` as documented: each item is a job, with its own id or not (parseBatchItem validates them one by one). */
export const batchDocumentSchema = z.strictObject({
  jobs: z
    .array(jobInputSchema.extend({ id: z.string().regex(JOB_ID_PATTERN).optional() }))
    .min(1)
    .max(MAX_BATCH_JOBS),
});
