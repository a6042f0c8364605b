/**
 * The job and job-type model: what is stored, what the API accepts (snake_case,
 * validated with zod, every error naming its field) and what it returns.
 */
import { z } from 'zod';
import { ValidationError, type FieldIssue } from './errors.js';
import { MAX_WORKER_ATTEMPT_S, WORKER_TIMEOUT_S } from './limits.js';
import { timeWindowsSchema, type TimeWindow } from './windows.js';

export const DELIVERY_STRATEGIES = ['at_least_once', 'at_most_once'] as const;
export type DeliveryStrategy = (typeof DELIVERY_STRATEGIES)[number];

export const JOB_STATUSES = [
  'queued',
  'running',
  'awaiting_callback',
  'succeeded',
  'failed',
  'expired',
  'cancelled',
] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];

export const TERMINAL_STATUSES: readonly JobStatus[] = ['succeeded', 'failed', 'expired', 'cancelled'];

/** Error classes (strings) or HTTP statuses (numbers) that may be retried; absent means every retryable error. */
export type RetryOn = (string | number)[];

export type RetryPolicy =
  | { kind: 'none' }
  | { kind: 'fixed'; delayS: number; retryOn?: RetryOn }
  | { kind: 'exponential'; baseS: number; factor: number; maxS: number; jitter: number; retryOn?: RetryOn }
  | { kind: 'custom'; name: string };

/** How a worker runs a job of this type (DESIGN §6). */
export type Target =
  | { kind: 'handler'; name: string }
  | {
      kind: 'http';
      url: string;
      /** Deadline of one request; the attempt as a whole is bounded by the type's `timeout_s` too. */
      requestTimeoutS: number;
      /** Link-local and cloud metadata addresses are refused unless this is set. */
      allowLinkLocal: boolean;
    }
  | { kind: 'lambda'; functionName: string }
  | { kind: 'eventbridge'; bus: string; detailType: string; source: string };

export type TargetKind = Target['kind'];

export const PRIORITY_ORDERS = ['time_first', 'priority_first'] as const;
export type PriorityOrder = (typeof PRIORITY_ORDERS)[number];

/** The throttle key `*` sets the limit of every key not named. */
export const OTHER_THROTTLE_KEYS = '*';

/** A key's in-flight weight limit: a number of weight units, or a share of the type's concurrency. */
export type ThrottleLimit = { limit: number } | { share: number };

export interface Throttle {
  /** Where a job's key comes from when it carries no `throttle_key`: a dotted path into its data. */
  keyField?: string;
  limits: Record<string, ThrottleLimit>;
}

/** The in-flight counters a claim added its weight to, so the attempt's end takes exactly that weight back. */
export interface HeldSlots {
  weight: number;
  /** The type-wide counter. */
  type: boolean;
  /** The throttle key's counter. */
  key?: string;
}

export interface JobType {
  name: string;
  deliveryStrategy: DeliveryStrategy;
  attempts: number;
  /** null: unlimited; 0: paused. Bounds the summed weight of the type's claimed jobs. */
  concurrency: number | null;
  /**
   * Set by `POST /v1/job-types/{name}/pause`: pollers claim none of the type's jobs, which wait queued.
   * Kept apart from `concurrency`, so resuming gives back the limit the type had.
   */
  paused: boolean;
  /** Claims per second, shared by every poller; null: unlimited. */
  rateLimitPerS: number | null;
  priorityOrder: PriorityOrder;
  throttle: Throttle | null;
  /** Succeeded jobs are listed by status only when this is set: it costs a write unit per job. */
  listSucceeded: boolean;
  visibilityTimeoutS: number;
  timeoutS: number;
  retry: RetryPolicy;
  target: Target;
  /** When its jobs may start; absent: any time. A job's own windows replace these. */
  timeWindows?: TimeWindow[];
  /**
   * The HMAC key requests to an `http` target are signed with. Generated when
   * the type first gets an http target, kept across replacements, returned by
   * the API only in that one response, and never read back. Workers read it
   * from the type's item: it never travels in a batch.
   */
  signingSecret?: string;
  createdAtMs: number;
  updatedAtMs: number;
}

/** A job type as it may leave the table in a worker batch: the secret stays behind, and the worker reads it from the item. */
export type JobTypeWithoutSecrets = Omit<JobType, 'signingSecret'>;

export function withoutSecrets(jobType: JobType): JobTypeWithoutSecrets {
  const { signingSecret: _secret, ...rest } = jobType;
  return rest;
}

export interface AttemptError {
  class: string;
  message: string;
  trace?: string;
}

export interface WorkerIdentity {
  id: string;
  host: string;
}

export const ATTEMPT_OUTCOMES = ['succeeded', 'failed', 'timed_out', 'expired'] as const;
export type AttemptOutcome = (typeof ATTEMPT_OUTCOMES)[number];

export interface AttemptRecord {
  attempt: number;
  claimedAtMs: number;
  startedAtMs: number | null;
  endedAtMs: number;
  outcome: AttemptOutcome;
  error?: AttemptError;
  worker?: WorkerIdentity;
}

/** A job as stored: the source of truth for its status, data, attempts and history. */
export interface Job {
  type: string;
  id: string;
  status: JobStatus;
  data: unknown;
  attempt: number;
  maxAttempts: number;
  deliveryStrategy: DeliveryStrategy;
  runAfterMs: number;
  expiresAtMs?: number;
  priority: number;
  weight: number;
  throttleKey?: string;
  /** The job's own windows, replacing its type's; absent: its type's. */
  timeWindows?: TimeWindow[];
  /** Unique among jobs that are not terminal; a `CORR#<key>` item points at the job holding it. */
  correlationKey?: string;
  createdAtMs: number;
  updatedAtMs: number;
  finishedAtMs?: number;
  result?: unknown;
  history: AttemptRecord[];
  historyDropped: number;
  /** Hash of the normalised enqueue body: the same body again is the same job. */
  requestHash: string;
  /** The current attempt's claim; absent while queued and once terminal. */
  claimToken?: string;
  claimedAtMs?: number;
  claimedUntilMs?: number;
  startedAtMs?: number;
  /** Written with startedAtMs, so a start whose write was retried recognises itself. */
  startToken?: string;
  worker?: WorkerIdentity;
  /** Present while the current claim holds concurrency slots. */
  heldSlots?: HeldSlots;
}

export const HISTORY_LIMIT = 25;
/** Priorities run from 0 to 1000, lower first. */
export const DEFAULT_PRIORITY = 100;
export const MAX_DATA_BYTES = 256 * 1024;
/** A result is kept on the job item beside data and history, all within DynamoDB's 400 KB item limit. */
export const MAX_RESULT_BYTES = 64 * 1024;
export const MAX_TRACE_CHARS = 2_000;
export const MAX_ERROR_MESSAGE_CHARS = 1_000;

export const JOB_TYPE_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
export const JOB_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/;
/**
 * Correlation keys travel as a path segment of `POST /v1/callbacks/{key}`, so
 * only characters that need no URL encoding and survive every proxy are allowed.
 */
export const CORRELATION_KEY_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.:@=~-]{0,255}$/;

/** Turns zod issues into field-named details; unknown fields are named one by one. */
export function issuesToDetails(error: z.ZodError): FieldIssue[] {
  return error.issues.flatMap((issue) => {
    const base = issue.path.map(String).join('.');
    if (issue.code === 'unrecognized_keys') {
      return issue.keys.map((key) => ({
        field: base ? `${base}.${key}` : key,
        message: 'unknown field',
      }));
    }
    return [{ field: base || 'body', message: issue.message }];
  });
}

export function parseWith<T>(schema: z.ZodType<T>, input: unknown): T {
  const result = schema.safeParse(input);
  if (!result.success) throw new ValidationError(issuesToDetails(result.error));
  return result.data;
}

const retryOnSchema = z
  .array(z.union([z.string().min(1).max(128), z.number().int().min(100).max(599)]))
  .min(1)
  .max(50)
  .optional();

const retrySchema = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('none') }),
  z.strictObject({
    kind: z.literal('fixed'),
    delay_s: z.number().min(0).max(86_400),
    retry_on: retryOnSchema,
  }),
  z.strictObject({
    kind: z.literal('exponential'),
    base_s: z.number().min(0).max(86_400),
    factor: z.number().min(1).max(100).default(2),
    max_s: z.number().min(0).max(86_400 * 7),
    jitter: z.number().min(0).max(1).default(0),
    retry_on: retryOnSchema,
  }),
  z.strictObject({ kind: z.literal('custom'), name: z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/) }),
]);

export const DEFAULT_EVENT_SOURCE = 'delayed-job-queue';

const targetSchema = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('handler'), name: z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/) }),
  z.strictObject({
    kind: z.literal('http'),
    url: z.url({ protocol: /^https?$/, message: 'must be an http or https URL' }).max(2048),
    request_timeout_s: z
      .number()
      .int()
      .min(1)
      .max(MAX_WORKER_ATTEMPT_S, `must be at most ${MAX_WORKER_ATTEMPT_S}: the request is sent and waited for inside the worker function`)
      .default(30),
    allow_link_local: z.boolean().default(false),
  }),
  z.strictObject({
    kind: z.literal('lambda'),
    // A name, a name with an alias or version, or an ARN (Lambda's own limit is 170 characters).
    function: z.string().regex(/^[A-Za-z0-9:_./-]{1,170}$/, 'must be a Lambda function name or ARN'),
  }),
  z.strictObject({
    kind: z.literal('eventbridge'),
    bus: z.string().regex(/^[A-Za-z0-9:_./-]{1,1600}$/, 'must be an event bus name or ARN'),
    detail_type: z.string().min(1).max(128),
    source: z.string().min(1).max(256).default(DEFAULT_EVENT_SOURCE),
  }),
]);

export const DEFAULT_RETRY: RetryPolicy = { kind: 'exponential', baseS: 1, factor: 2, maxS: 300, jitter: 0 };

const THROTTLE_KEY_PATTERN = /^[^\u0000-\u001f]{1,128}$/;

const throttleSchema = z.strictObject({
  key_field: z
    .string()
    .regex(/^[A-Za-z0-9_$-]{1,64}(\.[A-Za-z0-9_$-]{1,64}){0,7}$/, 'must be a dotted path of field names, e.g. "customer.region"')
    .optional(),
  limits: z
    .record(
      z.string().regex(THROTTLE_KEY_PATTERN, 'must be 1 to 128 characters without control characters'),
      z.union([
        z.strictObject({ limit: z.number().int().min(0).max(100_000) }),
        z.strictObject({ share: z.number().gt(0).max(1) }),
      ]),
    )
    .refine((limits) => Object.keys(limits).length >= 1 && Object.keys(limits).length <= 100, 'must name 1 to 100 keys'),
});

export const jobTypeInputSchema = z
  .strictObject({
    delivery_strategy: z.enum(DELIVERY_STRATEGIES).default('at_least_once'),
    attempts: z.number().int().min(1).max(100).optional(),
    concurrency: z.number().int().min(0).max(100_000).nullable().default(null),
    rate_limit_per_s: z.number().gt(0).max(100_000).nullable().default(null),
    priority_order: z.enum(PRIORITY_ORDERS).default('time_first'),
    throttle: throttleSchema.nullable().default(null),
    list_succeeded: z.boolean().default(false),
    visibility_timeout_s: z.number().int().min(1).max(43_200).default(30),
    timeout_s: z.number().int().min(1).max(86_400).default(60),
    retry: retrySchema.optional(),
    target: targetSchema,
    time_windows: timeWindowsSchema.nullable().optional(),
    /** Absent: a new type runs and an existing one keeps its paused state. */
    paused: z.boolean().optional(),
  })
  .superRefine((body, ctx) => {
    if (body.delivery_strategy === 'at_most_once' && body.attempts !== undefined && body.attempts !== 1) {
      ctx.addIssue({ code: 'custom', path: ['attempts'], message: 'must be 1 for at_most_once' });
    }
    // A lambda target's whole attempt waits inside the worker. A handler's timeout_s also bounds the callback
    // wait after it returns AWAIT_CALLBACK, which happens outside the worker, so it may be longer: the worker
    // cuts the handler's own run at MAX_WORKER_ATTEMPT_S. An http callback wait and an eventbridge put are
    // not bound by it either.
    if (body.target.kind === 'lambda' && body.timeout_s > MAX_WORKER_ATTEMPT_S) {
      ctx.addIssue({
        code: 'custom',
        path: ['timeout_s'],
        message:
          `must be at most ${MAX_WORKER_ATTEMPT_S} for a lambda target: its attempt runs inside the worker function, ` +
          `which Lambda stops after ${WORKER_TIMEOUT_S} s; a longer job needs an http target that answers 202 and calls back`,
      });
    }
    for (const [key, limit] of Object.entries(body.throttle?.limits ?? {})) {
      if ('share' in limit && body.concurrency === null) {
        ctx.addIssue({
          code: 'custom',
          path: ['throttle', 'limits', key, 'share'],
          message: 'a share is a share of the type\'s concurrency: set concurrency, or give this key a limit',
        });
      }
    }
  });

export type JobTypeInput = z.output<typeof jobTypeInputSchema>;

function retryFromInput(input: JobTypeInput['retry']): RetryPolicy {
  if (input === undefined) return DEFAULT_RETRY;
  switch (input.kind) {
    case 'none':
      return { kind: 'none' };
    case 'fixed':
      return { kind: 'fixed', delayS: input.delay_s, ...(input.retry_on ? { retryOn: input.retry_on } : {}) };
    case 'exponential':
      return {
        kind: 'exponential',
        baseS: input.base_s,
        factor: input.factor,
        maxS: input.max_s,
        jitter: input.jitter,
        ...(input.retry_on ? { retryOn: input.retry_on } : {}),
      };
    case 'custom':
      return { kind: 'custom', name: input.name };
  }
}

function targetFromInput(input: JobTypeInput['target']): Target {
  switch (input.kind) {
    case 'handler':
      return { kind: 'handler', name: input.name };
    case 'http':
      return { kind: 'http', url: input.url, requestTimeoutS: input.request_timeout_s, allowLinkLocal: input.allow_link_local };
    case 'lambda':
      return { kind: 'lambda', functionName: input.function };
    case 'eventbridge':
      return { kind: 'eventbridge', bus: input.bus, detailType: input.detail_type, source: input.source };
  }
}

function targetToApi(target: Target): Record<string, unknown> {
  switch (target.kind) {
    case 'handler':
      return { kind: 'handler', name: target.name };
    case 'http':
      return { kind: 'http', url: target.url, request_timeout_s: target.requestTimeoutS, allow_link_local: target.allowLinkLocal };
    case 'lambda':
      return { kind: 'lambda', function: target.functionName };
    case 'eventbridge':
      return { kind: 'eventbridge', bus: target.bus, detail_type: target.detailType, source: target.source };
  }
}

export function jobTypeFromInput(
  name: string,
  input: JobTypeInput,
  times: { createdAtMs: number; updatedAtMs: number },
  pausedBefore = false,
): JobType {
  const atMostOnce = input.delivery_strategy === 'at_most_once';
  return {
    name,
    deliveryStrategy: input.delivery_strategy,
    attempts: atMostOnce ? 1 : (input.attempts ?? 3),
    concurrency: input.concurrency,
    paused: input.paused ?? pausedBefore,
    rateLimitPerS: input.rate_limit_per_s,
    priorityOrder: input.priority_order,
    listSucceeded: input.list_succeeded,
    throttle: input.throttle
      ? { ...(input.throttle.key_field ? { keyField: input.throttle.key_field } : {}), limits: input.throttle.limits }
      : null,
    visibilityTimeoutS: input.visibility_timeout_s,
    timeoutS: input.timeout_s,
    retry: retryFromInput(input.retry),
    target: targetFromInput(input.target),
    ...(input.time_windows ? { timeWindows: input.time_windows } : {}),
    ...times,
  };
}

function retryToApi(retry: RetryPolicy): Record<string, unknown> {
  switch (retry.kind) {
    case 'none':
      return { kind: 'none' };
    case 'fixed':
      return { kind: 'fixed', delay_s: retry.delayS, retry_on: retry.retryOn ?? null };
    case 'exponential':
      return {
        kind: 'exponential',
        base_s: retry.baseS,
        factor: retry.factor,
        max_s: retry.maxS,
        jitter: retry.jitter,
        retry_on: retry.retryOn ?? null,
      };
    case 'custom':
      return { kind: 'custom', name: retry.name };
  }
}

const iso = (epochMs: number | undefined): string | null =>
  epochMs === undefined ? null : new Date(epochMs).toISOString();

export function jobTypeToApi(jobType: JobType): Record<string, unknown> {
  return {
    name: jobType.name,
    delivery_strategy: jobType.deliveryStrategy,
    attempts: jobType.attempts,
    concurrency: jobType.concurrency,
    paused: jobType.paused,
    rate_limit_per_s: jobType.rateLimitPerS,
    priority_order: jobType.priorityOrder,
    list_succeeded: jobType.listSucceeded,
    throttle: jobType.throttle ? { key_field: jobType.throttle.keyField ?? null, limits: jobType.throttle.limits } : null,
    visibility_timeout_s: jobType.visibilityTimeoutS,
    timeout_s: jobType.timeoutS,
    retry: retryToApi(jobType.retry),
    target: targetToApi(jobType.target),
    time_windows: jobType.timeWindows ?? null,
    created_at: iso(jobType.createdAtMs),
    updated_at: iso(jobType.updatedAtMs),
  };
}

/** Epoch milliseconds before 1970 would be negative, and sort keys pad them as non-negative. */
const isoWithOffset = z.iso
  .datetime({ offset: true, message: 'must be an ISO 8601 date-time with an offset' })
  .refine((text) => Date.parse(text) >= 0, 'must not be before 1970-01-01T00:00:00Z');

export const jobInputSchema = z
  .strictObject({
    data: z.json().default(null),
    run_after: isoWithOffset.optional(),
    expires_at: isoWithOffset.nullable().optional(),
    priority: z.number().int().min(0).max(1000).default(DEFAULT_PRIORITY),
    weight: z.number().int().min(0).max(100_000).default(1),
    throttle_key: z.string().regex(THROTTLE_KEY_PATTERN, 'must be 1 to 128 characters without control characters').nullable().optional(),
    time_windows: timeWindowsSchema.nullable().optional(),
    correlation_key: z
      .string()
      .regex(CORRELATION_KEY_PATTERN, 'must be 1-256 characters of A-Z a-z 0-9 _ . : @ = ~ -, starting with a letter or digit')
      .optional(),
  })
  .superRefine((body, ctx) => {
    if (body.run_after && body.expires_at && Date.parse(body.expires_at) <= Date.parse(body.run_after)) {
      ctx.addIssue({ code: 'custom', path: ['expires_at'], message: 'must be after run_after' });
    }
  });

/** A validated enqueue request, in the units the store uses. */
export interface JobInput {
  data: unknown;
  /** Absent: due now. */
  runAfterMs?: number;
  expiresAtMs?: number;
  priority: number;
  weight: number;
  /** Given by the producer; otherwise taken from the data by the type's `throttle.key_field`. */
  throttleKey?: string;
  /** Absent: the type's windows apply. */
  timeWindows?: TimeWindow[];
  correlationKey?: string;
}

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
  };
}

export function isTerminal(status: JobStatus): boolean {
  return TERMINAL_STATUSES.includes(status);
}

function attemptToApi(record: AttemptRecord): Record<string, unknown> {
  return {
    attempt: record.attempt,
    claimed_at: iso(record.claimedAtMs),
    started_at: record.startedAtMs === null ? null : iso(record.startedAtMs),
    ended_at: iso(record.endedAtMs),
    outcome: record.outcome,
    error: record.error ?? null,
    worker: record.worker ?? null,
  };
}

/** The job in the shape the API returns (DESIGN §5). */
export function jobToApi(job: Job): Record<string, unknown> {
  return {
    id: job.id,
    type: job.type,
    status: job.status,
    data: job.data,
    attempt: job.attempt,
    max_attempts: job.maxAttempts,
    delivery_strategy: job.deliveryStrategy,
    run_after: iso(job.runAfterMs),
    expires_at: iso(job.expiresAtMs),
    priority: job.priority,
    weight: job.weight,
    time_windows: job.timeWindows ?? null,
    throttle_key: job.throttleKey ?? null,
    correlation_key: job.correlationKey ?? null,
    created_at: iso(job.createdAtMs),
    updated_at: iso(job.updatedAtMs),
    finished_at: iso(job.finishedAtMs),
    result: job.result ?? null,
    claimed_until: iso(job.claimedUntilMs),
    history: job.history.map(attemptToApi),
    history_dropped: job.historyDropped,
  };
}
