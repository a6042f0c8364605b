/** Jobs on the wire: the snake_case enqueue body the API accepts and the job as it returns it (docs/reference/http-api.md). */
import { z } from 'zod';
import { ATTEMPT_OUTCOMES, CORRELATION_KEY_PATTERN, DEFAULT_PRIORITY, JOB_STATUSES, type AttemptRecord, type FieldChange, type Job, type JobChangeRecord, type JobDebounce, type JobDedup, type JobInput } from '../domain/job.js';
import type { JobChangeInput } from '../domain/job-changes.js';
import type { JobProgress } from '../domain/progress.js';
import { ValidationError } from '../domain/errors.js';
import { isoOrNull } from './parse.js';
import { attemptErrorToApi } from './traces.js';
import { DELIVERY_STRATEGIES } from '../domain/job-type.js';
import { instantSchema, jsonValueSchema, nextCursorSchema, tagsSchema, throttleKeySchema, timeWindowSchema, timeWindowsSchema } from './fields.js';
import { isWellFormedText } from '../domain/json-size.js';
import { MAX_DEBOUNCE_S, MAX_DEDUP_KEY_CHARS, MAX_DEDUP_WINDOW_S } from '../domain/dedup-debounce.js';

/** Dedup and debounce: what an enqueue asks for, and what the job answers with (domain/dedup-debounce.ts). */
// oxlint-disable-next-line no-control-regex -- the control characters are what the pattern refuses.
const DEDUP_KEY_PATTERN = /^[^\u0000-\u001f]{1,256}$/;
const dedupKeySchema = z
  .string()
  .regex(DEDUP_KEY_PATTERN, `must be 1 to ${MAX_DEDUP_KEY_CHARS} characters without control characters`)
  .refine(isWellFormedText, 'must be well-formed Unicode: no unpaired surrogate');
const dedupSchema = z.strictObject({ key: dedupKeySchema, window_s: z.number().int().min(1).max(MAX_DEDUP_WINDOW_S) }).meta({ id: 'Dedup' });
const debounceSchema = z
  .strictObject({
    key: dedupKeySchema,
    delay_s: z.number().int().min(0).max(MAX_DEBOUNCE_S),
    max_wait_s: z.number().int().min(1).max(MAX_DEBOUNCE_S).optional(),
  })
  .meta({ id: 'DebounceInput' });
const dedupFromBody = (dedup: z.output<typeof dedupSchema>): JobDedup => ({ key: dedup.key, windowS: dedup.window_s });
const debounceFromBody = (debounce: z.output<typeof debounceSchema>): JobDebounce => ({
  key: debounce.key,
  delayS: debounce.delay_s,
  ...(debounce.max_wait_s !== undefined ? { maxWaitS: debounce.max_wait_s } : {}),
});
const dedupToApi = (dedup: JobDedup | undefined) => (dedup ? { key: dedup.key, window_s: dedup.windowS } : null);
const debounceToApi = (debounce: JobDebounce | undefined) =>
  debounce ? { key: debounce.key, delay_s: debounce.delayS, max_wait_s: debounce.maxWaitS ?? null } : null;

/** Epoch milliseconds before 1970 would be negative, and sort keys pad them as non-negative. */
export const isoWithOffset = z.iso
  .datetime({ offset: true, message: 'must be an ISO 8601 date-time with an offset' })
  .refine((text) => Date.parse(text) >= 0, 'must not be before 1970-01-01T00:00:00Z');

export const jobInputSchema = z
  .strictObject({
    data: jsonValueSchema.default(null),
    run_after: isoWithOffset.optional(),
    expires_at: isoWithOffset.nullable().optional(),
    priority: z.number().int().min(0).max(1000).default(DEFAULT_PRIORITY),
    weight: z.number().int().min(0).max(100_000).default(1),
    throttle_key: throttleKeySchema.nullable().optional(),
    time_windows: timeWindowsSchema.nullable().optional(),
    correlation_key: z
      .string()
      .regex(CORRELATION_KEY_PATTERN, 'must be 1-256 characters of A-Z a-z 0-9 _ . : @ = ~ -, starting with a letter or digit')
      .optional(),
    tags: tagsSchema.nullable().optional().meta({ description: 'Labels to list and bulk-select the job by; fixed once enqueued' }),
    dedup: dedupSchema.optional(),
    debounce: debounceSchema.optional(),
  })
  .superRefine((body, ctx) => {
    if (body.run_after && body.expires_at && Date.parse(body.expires_at) <= Date.parse(body.run_after)) {
      ctx.addIssue({ code: 'custom', path: ['expires_at'], message: 'must be after run_after' });
    }
  });

export function jobInputFromBody(body: z.output<typeof jobInputSchema>): JobInput {
  return {
    data: body.data,
    ...(body.run_after ? { runAfterMs: Date.parse(body.run_after) } : {}),
    ...(body.expires_at ? { expiresAtMs: Date.parse(body.expires_at) } : {}),
    priority: body.priority,
    weight: body.weight,
    ...(body.throttle_key ? { throttleKey: body.throttle_key } : {}),
    ...(body.time_windows ? { timeWindows: body.time_windows } : {}),
    ...(body.correlation_key !== undefined ? { correlationKey: body.correlation_key } : {}),
    ...(body.tags && body.tags.length > 0 ? { tags: body.tags } : {}),
    ...(body.dedup ? { dedup: dedupFromBody(body.dedup) } : {}),
    ...(body.debounce ? { debounce: debounceFromBody(body.debounce) } : {}),
  };
}

/** `PATCH /v1/jobs/{type}/{id}`: the fields a queued job may change. */
export const jobPatchSchema = z.strictObject({
  run_after: z.union([z.literal('now'), isoWithOffset]).optional(),
  priority: z.number().int().min(0).max(1000).optional(),
  expires_at: isoWithOffset.nullable().optional(),
});

/** The change a valid body asks for; a body that asks for none is a ValidationError naming `body`. */
export function jobChangeFromBody(body: z.output<typeof jobPatchSchema>): JobChangeInput {
  if (Object.keys(body).length === 0) {
    throw new ValidationError([{ field: 'body', message: 'must change at least one of run_after, priority, expires_at' }]);
  }
  return {
    ...(body.run_after !== undefined ? { runAfter: body.run_after === 'now' ? 'now' : Date.parse(body.run_after) } : {}),
    ...(body.priority !== undefined ? { priority: body.priority } : {}),
    ...(body.expires_at !== undefined ? { expiresAtMs: body.expires_at === null ? null : Date.parse(body.expires_at) } : {}),
  };
}

const instantChangeToApi = (change: FieldChange<number | null>) => ({ from: isoOrNull(change.from ?? undefined), to: isoOrNull(change.to ?? undefined) });

function changeToApi(record: JobChangeRecord): Record<string, unknown> {
  return {
    at: isoOrNull(record.atMs),
    by: record.by,
    ...(record.runAfterMs ? { run_after: instantChangeToApi(record.runAfterMs) } : {}),
    ...(record.priority ? { priority: record.priority } : {}),
    ...(record.expiresAtMs ? { expires_at: instantChangeToApi(record.expiresAtMs) } : {}),
  };
}

function progressToApi(progress: JobProgress): Record<string, unknown> {
  return {
    percent: progress.percent ?? null,
    message: progress.message ?? null,
    data: progress.data ?? null,
    attempt: progress.attempt,
    at: isoOrNull(progress.atMs),
  };
}

function attemptToApi(record: AttemptRecord): Record<string, unknown> {
  return {
    attempt: record.attempt,
    claimed_at: isoOrNull(record.claimedAtMs),
    started_at: record.startedAtMs === null ? null : isoOrNull(record.startedAtMs),
    ended_at: isoOrNull(record.endedAtMs),
    outcome: record.outcome,
    error: record.error ? attemptErrorToApi(record.error) : null,
    worker: record.worker ?? null,
  };
}

/** The job in the shape the API returns (docs/reference/http-api.md). */
export function jobToApi(job: Job): Record<string, unknown> {
  return {
    id: job.id,
    type: job.type,
    status: job.status,
    data: job.data,
    attempt: job.attempt,
    max_attempts: job.maxAttempts,
    delivery_strategy: job.deliveryStrategy,
    run_after: isoOrNull(job.runAfterMs),
    expires_at: isoOrNull(job.expiresAtMs),
    priority: job.priority,
    weight: job.weight,
    time_windows: job.timeWindows ?? null,
    throttle_key: job.throttleKey ?? null,
    correlation_key: job.correlationKey ?? null,
    schedule: job.schedule ?? null,
    traceparent: job.traceparent ?? null,
    tags: job.tags ?? [],
    dedup: dedupToApi(job.dedup),
    debounce: debounceToApi(job.debounce),
    debounce_count: job.debounceCount ?? 0,
    created_at: isoOrNull(job.createdAtMs),
    updated_at: isoOrNull(job.updatedAtMs),
    finished_at: isoOrNull(job.finishedAtMs),
    cancelled_by: job.cancelledBy ?? null,
    cancel_requested_at: isoOrNull(job.cancelRequestedAtMs),
    result: job.result ?? null,
    claimed_until: isoOrNull(job.claimedUntilMs),
    history: job.history.map(attemptToApi),
    history_dropped: job.historyDropped,
    progress: job.progress ? progressToApi(job.progress) : null,
    changes: (job.changes ?? []).map(changeToApi),
    changes_dropped: (job.changeCount ?? 0) - (job.changes?.length ?? 0),
  };
}

const fieldChangeSchema = <T extends z.ZodType>(value: T) => z.strictObject({ from: value, to: value });

const jobChangeSchema = z.strictObject({
  at: instantSchema,
  by: z.string().meta({ description: 'The id of the key that made the change' }),
  run_after: fieldChangeSchema(instantSchema).optional(),
  priority: fieldChangeSchema(z.number().int()).optional(),
  expires_at: fieldChangeSchema(instantSchema.nullable()).optional(),
});

const jobProgressSchema = z.strictObject({
  percent: z.number().nullable(),
  message: z.string().nullable(),
  data: jsonValueSchema,
  attempt: z.number().int(),
  at: instantSchema,
});

const attemptSchema = z.strictObject({
  attempt: z.number().int(),
  claimed_at: instantSchema.nullable(),
  started_at: instantSchema.nullable(),
  ended_at: instantSchema.nullable(),
  outcome: z.enum(ATTEMPT_OUTCOMES),
  error: z.strictObject({ class: z.string(), message: z.string(), trace: z.string().optional() }).nullable(),
  worker: z.strictObject({ id: z.string(), host: z.string() }).nullable(),
});

/** The job as jobToApi writes it. */
export const jobSchema = z
  .strictObject({
    id: z.string(),
    type: z.string(),
    status: z.enum(JOB_STATUSES),
    data: jsonValueSchema,
    attempt: z.number().int(),
    max_attempts: z.number().int(),
    delivery_strategy: z.enum(DELIVERY_STRATEGIES),
    run_after: instantSchema.nullable(),
    expires_at: instantSchema.nullable(),
    priority: z.number().int(),
    weight: z.number().int(),
    time_windows: z.array(timeWindowSchema).nullable(),
    throttle_key: z.string().nullable(),
    correlation_key: z.string().nullable(),
    schedule: z.string().nullable().meta({ description: 'The schedule that made the job' }),
    traceparent: z
      .string()
      .nullable()
      .meta({ description: "The W3C traceparent of the request that enqueued it (a schedule's fire starts its own); each attempt runs as a child span" }),
    tags: z.array(z.string()).meta({ description: 'Its tags as enqueued; empty for none' }),
    dedup: dedupSchema.nullable().meta({ description: 'Enqueues of its type with the key within window_s of its own answer this job' }),
    debounce: z
      .strictObject({ key: z.string(), delay_s: z.number().int(), max_wait_s: z.number().int().nullable() })
      .nullable()
      .meta({ description: 'Enqueues of its type with the key while it waits unstarted replace its data and move its run_after' }),
    debounce_count: z.number().int().meta({ description: 'Enqueues a debounced job took in after its own' }),
    created_at: instantSchema.nullable(),
    updated_at: instantSchema.nullable(),
    finished_at: instantSchema.nullable(),
    cancelled_by: z
      .string()
      .nullable()
      .meta({ description: 'Who cancelled it: the id of the key that asked, or of the bulk operation that did' }),
    cancel_requested_at: instantSchema
      .nullable()
      .meta({ description: 'When a cancel of its running attempt was asked; set until the attempt ends, then the job is cancelled' }),
    result: jsonValueSchema,
    claimed_until: instantSchema.nullable(),
    history: z.array(attemptSchema).meta({ description: 'Its ended attempts, oldest first' }),
    history_dropped: z.number().int(),
    progress: jobProgressSchema.nullable().meta({ description: 'The latest progress report of an attempt' }),
    changes: z.array(jobChangeSchema).meta({ description: 'The changes PATCH made, oldest first' }),
    changes_dropped: z.number().int(),
  })
  .meta({ id: 'Job' });

/** A cancel's answer when the job ended cancelled at once (200). */
export const cancelledJobSchema = jobSchema.extend({ status: z.literal('cancelled') }).meta({ id: 'CancelledJob' });

/** A cancel's answer when the job was running (202): its worker is stopping it, and it ends cancelled within seconds. */
export const cancellingJobSchema = jobSchema.extend({ status: z.literal('running'), cancel_requested_at: instantSchema }).meta({ id: 'CancellingJob' });

export const jobPageSchema = z.strictObject({ jobs: z.array(jobSchema), next_cursor: nextCursorSchema });
