/** Job types on the wire: the snake_case body `PUT /v1/job-types/{name}` accepts and the shape the API returns. */
import { z } from 'zod';
import { MAX_WORKER_ATTEMPT_S, WORKER_TIMEOUT_S } from '../domain/limits.js';
import { DEFAULT_EVENT_SOURCE, DEFAULT_RETRY, DELIVERY_STRATEGIES, OTHER_THROTTLE_KEYS, PRIORITY_ORDERS, type JobType, type JobTypeDefinition, type RetryPolicy, type Target, type ThrottleLimit } from '../domain/job-type.js';
import { isoOrNull, parseWith } from './parse.js';
import { instantSchema, throttleKeySchema, timeWindowSchema, timeWindowsSchema } from './fields.js';
import { typeStatsSchema } from './stats.js';
import { urlForReaders, urlWithoutCredentials } from '../domain/url-credentials.js';

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


/**
 * The slowest rate a type or key may have: about one start in 12 days. Below it a rate is a mistake, and far
 * below it (under 1e-130) DynamoDB cannot store the number at all: the type's write failed as a 500.
 */
const MIN_RATE_PER_S = 0.000_001;

const ratePerSSchema = z.number().min(MIN_RATE_PER_S, `must be at least ${MIN_RATE_PER_S} (a start in about 12 days)`).max(100_000);

const throttleLimitSchema = z
  .strictObject({
    limit: z.number().int().min(0).max(100_000).optional(),
    share: z.number().gt(0).max(1).optional(),
    rate_per_s: ratePerSSchema.optional(),
  })
  .superRefine((entry, ctx) => {
    if (entry.limit !== undefined && entry.share !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['share'], message: 'a key has a limit or a share, not both' });
    }
    if (entry.limit === undefined && entry.share === undefined && entry.rate_per_s === undefined) {
      ctx.addIssue({ code: 'custom', path: [], message: 'must set limit, share or rate_per_s' });
    }
  })
  .meta({
    description:
      'What one throttle key is held to, at least one of: in flight, `limit` weight units or a `share` of the type\'s concurrency (not both); `rate_per_s`, starts (claims) a second across every poller, from a token bucket of the key\'s own.',
  });

type ThrottleLimitBody = z.output<typeof throttleLimitSchema>;

const throttleLimitsSchema = z
  .record(throttleKeySchema, throttleLimitSchema)
  .refine((limits) => Object.keys(limits).length >= 1 && Object.keys(limits).length <= 100, 'must name 1 to 100 keys');

/**
 * A limit keyed "__proto__" would be dropped on its way to the table (an object's "__proto__" is its prototype,
 * not an entry, to the parser and the marshaller alike), so it is refused rather than silently lost; jobs with
 * that throttle key count against the "*" limit. Every other key, "constructor" and "toString" too, is stored.
 */
function refuseUnstorableKeys<T>(limits: T, ctx: { addIssue: (issue: { code: 'custom'; path: string[]; message: string }) => void }): T {
  if (typeof limits === 'object' && limits !== null && Object.hasOwn(limits, '__proto__')) {
    ctx.addIssue({ code: 'custom', path: ['__proto__'], message: `cannot be stored as a limit's key; jobs with this throttle key count against "${OTHER_THROTTLE_KEYS}"` });
  }
  return limits;
}

const throttleSchema = z.strictObject({
  key_field: z
    .string()
    .regex(/^[A-Za-z0-9_$-]{1,64}(\.[A-Za-z0-9_$-]{1,64}){0,7}$/, 'must be a dotted path of field names, e.g. "customer.region"')
    .optional(),
  limits: z.preprocess((limits: z.input<typeof throttleLimitsSchema>, ctx) => refuseUnstorableKeys(limits, ctx), throttleLimitsSchema),
});

export const jobTypeInputSchema = z
  .strictObject({
    delivery_strategy: z.enum(DELIVERY_STRATEGIES).default('at_least_once'),
    attempts: z.number().int().min(1).max(100).optional(),
    concurrency: z.number().int().min(0).max(100_000).nullable().default(null),
    rate_limit_per_s: ratePerSSchema.nullable().default(null),
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
      if (limit.share !== undefined && body.concurrency === null) {
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

function throttleLimitFromInput(body: ThrottleLimitBody): ThrottleLimit {
  return {
    ...(body.limit !== undefined ? { limit: body.limit } : {}),
    ...(body.share !== undefined ? { share: body.share } : {}),
    ...(body.rate_per_s !== undefined ? { ratePerS: body.rate_per_s } : {}),
  };
}

function throttleLimitToApi(limit: ThrottleLimit): ThrottleLimitBody {
  return {
    ...(limit.limit !== undefined ? { limit: limit.limit } : {}),
    ...(limit.share !== undefined ? { share: limit.share } : {}),
    ...(limit.ratePerS !== undefined ? { rate_per_s: limit.ratePerS } : {}),
  };
}

/** Each key's entry converted; `Object.fromEntries` defines keys such as "constructor" as the map's own entries. */
function mapLimits<From, To>(limits: Record<string, From>, convert: (limit: From) => To): Record<string, To> {
  return Object.fromEntries(Object.entries(limits).map(([key, limit]) => [key, convert(limit)]));
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

/**
 * Who a job type is shown to: `admin`, who defines it, sees an http target's URL whole but for the
 * credentials a name tells; a `reader` (a key with read: on the type) sees its query values and fragment hidden too.
 */
export type JobTypeAudience = 'admin' | 'reader';

function targetToApi(target: Target, audience: JobTypeAudience): Record<string, unknown> {
  switch (target.kind) {
    case 'handler':
      return { kind: 'handler', name: target.name };
    case 'http':
      return { kind: 'http', url: audience === 'admin' ? urlWithoutCredentials(target.url) : urlForReaders(target.url), request_timeout_s: target.requestTimeoutS, allow_link_local: target.allowLinkLocal };
    case 'lambda':
      return { kind: 'lambda', function: target.functionName };
    case 'eventbridge':
      return { kind: 'eventbridge', bus: target.bus, detail_type: target.detailType, source: target.source };
  }
}

/** The domain's definition of a type from the body the API accepted. */
export function jobTypeDefinitionOf(input: JobTypeInput): JobTypeDefinition {
  const atMostOnce = input.delivery_strategy === 'at_most_once';
  return {
    deliveryStrategy: input.delivery_strategy,
    attempts: atMostOnce ? 1 : (input.attempts ?? 3),
    concurrency: input.concurrency,
    ...(input.paused !== undefined ? { paused: input.paused } : {}),
    rateLimitPerS: input.rate_limit_per_s,
    priorityOrder: input.priority_order,
    listSucceeded: input.list_succeeded,
    throttle: input.throttle
      ? { ...(input.throttle.key_field ? { keyField: input.throttle.key_field } : {}), limits: mapLimits(input.throttle.limits, throttleLimitFromInput) }
      : null,
    visibilityTimeoutS: input.visibility_timeout_s,
    timeoutS: input.timeout_s,
    retry: retryFromInput(input.retry),
    target: targetFromInput(input.target),
    ...(input.time_windows ? { timeWindows: input.time_windows } : {}),
  };
}

/** A body checked against the API's schema (a ValidationError naming each field otherwise), as the domain's definition. */
export function parseJobTypeDefinition(body: unknown): JobTypeDefinition {
  return jobTypeDefinitionOf(parseWith(jobTypeInputSchema, body));
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

export function jobTypeToApi(jobType: JobType, audience: JobTypeAudience = 'reader'): Record<string, unknown> {
  return {
    name: jobType.name,
    delivery_strategy: jobType.deliveryStrategy,
    attempts: jobType.attempts,
    concurrency: jobType.concurrency,
    paused: jobType.paused,
    rate_limit_per_s: jobType.rateLimitPerS,
    priority_order: jobType.priorityOrder,
    list_succeeded: jobType.listSucceeded,
    throttle: jobType.throttle ? { key_field: jobType.throttle.keyField ?? null, limits: mapLimits(jobType.throttle.limits, throttleLimitToApi) } : null,
    visibility_timeout_s: jobType.visibilityTimeoutS,
    timeout_s: jobType.timeoutS,
    retry: retryToApi(jobType.retry),
    target: targetToApi(jobType.target, audience),
    time_windows: jobType.timeWindows ?? null,
    created_at: isoOrNull(jobType.createdAtMs),
    updated_at: isoOrNull(jobType.updatedAtMs),
  };
}


const retryOnToApiSchema = z.array(z.union([z.string(), z.number().int()])).nullable();

/** A job type as jobTypeToApi writes it: every default filled in, absent values null. */
export const jobTypeSchema = z
  .strictObject({
    name: z.string(),
    delivery_strategy: z.enum(DELIVERY_STRATEGIES),
    attempts: z.number().int(),
    concurrency: z.number().int().nullable(),
    paused: z.boolean(),
    rate_limit_per_s: z.number().nullable(),
    priority_order: z.enum(PRIORITY_ORDERS),
    list_succeeded: z.boolean(),
    throttle: z.strictObject({ key_field: z.string().nullable(), limits: z.record(z.string(), throttleLimitSchema) }).nullable(),
    visibility_timeout_s: z.number().int(),
    timeout_s: z.number().int(),
    retry: z.discriminatedUnion('kind', [
      z.strictObject({ kind: z.literal('none') }),
      z.strictObject({ kind: z.literal('fixed'), delay_s: z.number(), retry_on: retryOnToApiSchema }),
      z.strictObject({ kind: z.literal('exponential'), base_s: z.number(), factor: z.number(), max_s: z.number(), jitter: z.number(), retry_on: retryOnToApiSchema }),
      z.strictObject({ kind: z.literal('custom'), name: z.string() }),
    ]),
    target: targetSchema,
    time_windows: z.array(timeWindowSchema).nullable(),
    created_at: instantSchema,
    updated_at: instantSchema,
  })
  .meta({ id: 'JobType' });

/** `PUT /v1/job-types/{name}`: the type, and the signing secret of an http target in the one answer that generated it. */
export const definedJobTypeSchema = jobTypeSchema.extend({ signing_secret: z.string().optional() }).meta({ id: 'DefinedJobType' });

/** `GET /v1/job-types/{name}`: the type with its live stats. */
export const jobTypeWithStatsSchema = jobTypeSchema.extend({ stats: typeStatsSchema }).meta({ id: 'JobTypeWithStats' });

export const jobTypeListSchema = z.strictObject({ job_types: z.array(jobTypeSchema) });
