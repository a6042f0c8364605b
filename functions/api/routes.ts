/** The routes of DESIGN §5 served so far: each parses, calls lib/, and maps the result. */
import { z } from 'zod';
import { apiKeyInputSchema, apiKeyToApi, createApiKey, KEY_ID_PATTERN, listApiKeys, revokeApiKey, scopeAllows } from '../../lib/queue/api-keys.js';
import { enqueueBatch, MAX_BATCH_JOBS, type BatchJob } from '../../lib/queue/batch.js';
import { completeCorrelatedJob, completeFromCallback, findActiveCorrelatedJob, heartbeatJob, type CallbackInput } from '../../lib/queue/callbacks.js';
import type { QueueContext } from '../../lib/queue/context.js';
import { ForbiddenError, NotFoundError, type FieldIssue } from '../../lib/domain/errors.js';
import { ValidationError } from '../../lib/domain/errors.js';
import { DEFAULT_PAGE_SIZE, listJobs, MAX_PAGE_SIZE } from '../../lib/queue/job-listing.js';
import { listJobTypes, putJobType, requireJobType, setJobTypePaused } from '../../lib/queue/job-types.js';
import { assertJsonSize, cancelJob, enqueueJob, newJobId, replayJob, requireJob } from '../../lib/queue/jobs.js';
import { CORRELATION_KEY_PATTERN, issuesToDetails, JOB_ID_PATTERN, JOB_TYPE_NAME_PATTERN, MAX_DATA_BYTES, jobInputFromBody, jobInputSchema, jobToApi, jobTypeInputSchema, jobTypeToApi, parseWith } from '../../lib/domain/model.js';
import { JOB_STATUSES, type Job } from '../../lib/domain/model.js';
import { createMetricsRecorder, finishedOutcomeOfStatus, MAX_METRICS_MINUTES, metricsHistoryToApi, readMetricsHistory } from '../../lib/queue/metrics-history.js';
import { listRoster, rosterEntryToApi } from '../../lib/queue/roster.js';
import { statsOfType, statsOfTypes, typeStatsToApi } from '../../lib/queue/stats.js';
import { isLinkLocalAddress, literalAddressOf } from '../../lib/targets/addresses.js';
import type { CustomRetryPolicies } from '../../lib/domain/retry.js';
import type { Principal } from '../shared/principal.js';
import { log } from '../shared/log.js';
import { assertCallbackAttempt } from './access.js';
import { json, type HttpEvent, type HttpResponse } from '../shared/http.js';
import { errorResult } from './http-errors.js';
import { MAX_BATCH_BODY_BYTES, parseJsonBody, pathParam } from './http.js';

/**
 * The worker's code as far as the api needs it: the handlers a job type may target, only by name (the keys
 * of `handlers`, so the worker's own registry serves too), and the custom retry policies, which a status
 * callback's failure goes through.
 */
export interface WorkerCatalog {
  handlers: Readonly<Record<string, unknown>>;
  retryPolicies: CustomRetryPolicies;
}

export interface ApiDeps {
  ctx: QueueContext;
  /** So a job type can only name handlers and retry policies that exist. */
  registry: WorkerCatalog;
}

/** A route gets the caller the api authorised (undefined on public routes). */
export type Route = (event: HttpEvent, principal: Principal | undefined) => Promise<HttpResponse>;

const readableBy = (principal: Principal | undefined, type: string): boolean =>
  principal?.kind === 'key' && scopeAllows(principal.scopes, 'read', type);

function refusesLiteralAddress(url: string): boolean {
  const literal = literalAddressOf(new URL(url));
  return literal !== undefined && isLinkLocalAddress(literal);
}

const typeName = (event: HttpEvent, param = 'type'): string => pathParam(event, param, JOB_TYPE_NAME_PATTERN);
const jobId = (event: HttpEvent): string => pathParam(event, 'id', JOB_ID_PATTERN);

const callbackSchema = z.strictObject({
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
  result: z.json().optional(),
});

function callbackInputOf(body: z.output<typeof callbackSchema>): CallbackInput {
  return {
    status: body.status,
    attempt: body.attempt,
    ...(body.retryable !== undefined ? { retryable: body.retryable } : {}),
    ...(body.error ? { error: body.error } : {}),
    ...(body.result !== undefined ? { result: body.result } : {}),
  };
}

/** `POST /v1/jobs/{type}/batch` is the batch route, so no job may take `batch` as its id. */
const BATCH_PATH_SEGMENT = 'batch';
const RESERVED_ID = 'is reserved: POST /v1/jobs/{type}/batch enqueues a batch';

const batchSchema = z.strictObject({
  // Each item is validated on its own below, so one bad item fails alone.
  jobs: z.array(z.unknown()).min(1).max(MAX_BATCH_JOBS),
});

/** A batch item as a job to enqueue (an id of its own or a new server id), or the issues that make it invalid, fields named from the body's root. */
function parseBatchItem(item: unknown, index: number, newId: () => string): BatchJob | { id?: string; issues: FieldIssue[] } {
  const path = `jobs.${index}`;
  if (typeof item !== 'object' || item === null || Array.isArray(item)) return { issues: [{ field: path, message: 'must be an object' }] };
  const { id, ...body } = item as Record<string, unknown>;
  const issues: FieldIssue[] = [];
  if (id !== undefined && (typeof id !== 'string' || !JOB_ID_PATTERN.test(id))) {
    issues.push({ field: `${path}.id`, message: `must match ${JOB_ID_PATTERN.source}` });
  } else if (id === BATCH_PATH_SEGMENT) {
    issues.push({ field: `${path}.id`, message: RESERVED_ID });
  }
  const parsed = jobInputSchema.safeParse(body);
  if (!parsed.success) issues.push(...issuesToDetails(parsed.error).map((issue) => withinItem(issue, path)));
  const ownId = typeof id === 'string' && issues.every((issue) => issue.field !== `${path}.id`) ? id : undefined;
  if (issues.length > 0 || !parsed.success) return { ...(ownId !== undefined ? { id: ownId } : {}), issues };
  return { index, id: ownId ?? newId(), input: jobInputFromBody(parsed.data) };
}

const withinItem = (issue: FieldIssue, path: string): FieldIssue => ({
  ...issue,
  field: issue.field === 'body' ? path : `${path}.${issue.field}`,
});

/**
 * The status and error body of an item that failed, its fields named from the
 * body's root. A dependency failure is a 500 of its own: the job may or may
 * not have been stored, and sending the item again with its id is safe.
 */
function batchItemError(error: unknown, path: string, requestId: string | undefined): { status: number; error: unknown } {
  const result = errorResult(error, requestId);
  const body = result.body.error as { message: string; details: FieldIssue[] };
  if (result.internal) {
    log('error', 'batch item failed', { requestId, item: path, error });
    return { status: result.status, error: { ...body, message: 'internal error: the job may or may not have been enqueued; send it again with this id' } };
  }
  return { status: result.status, error: { ...body, details: body.details.map((issue) => withinItem(issue, path)) } };
}

const jobberQueueSchema = z.strictObject({
  type: z.string().regex(JOB_TYPE_NAME_PATTERN, `must match ${JOB_TYPE_NAME_PATTERN.source}`),
  payload: z.json().default(null),
});

const listQuerySchema = z.strictObject({
  status: z.enum(JOB_STATUSES),
  limit: z.coerce.number().int().min(1).max(MAX_PAGE_SIZE).default(DEFAULT_PAGE_SIZE),
  cursor: z.string().min(1).max(2_000).optional(),
});

const DEFAULT_METRICS_MINUTES = 60;

/** `?minutes=`: 1 to MAX_METRICS_MINUTES, 60 when absent; anything else is a 400 naming `minutes`. */
function metricsMinutes(event: HttpEvent): number {
  const raw = event.queryStringParameters?.minutes;
  if (raw === undefined || raw === '') return DEFAULT_METRICS_MINUTES;
  const minutes = /^\d{1,4}$/.test(raw) ? Number(raw) : NaN;
  if (!(minutes >= 1 && minutes <= MAX_METRICS_MINUTES)) {
    throw new ValidationError([{ field: 'minutes', message: `must be an integer from 1 to ${MAX_METRICS_MINUTES}` }]);
  }
  return minutes;
}

const heartbeatSchema = z.strictObject({
  attempt: z.number().int().min(1).max(1000),
  extend_s: z.number().int().min(1).max(43_200).optional(),
});

export function createRoutes({ ctx, registry }: ApiDeps) {
  const putJobTypeRoute: Route = async (event) => {
    const name = typeName(event, 'name');
    const input = parseWith(jobTypeInputSchema, parseJsonBody(event));
    if (input.target.kind === 'handler' && !Object.hasOwn(registry.handlers, input.target.name)) {
      throw new ValidationError([{ field: 'target.name', message: `no handler named "${input.target.name}" in the worker` }]);
    }
    if (input.target.kind === 'http' && !input.target.allow_link_local && refusesLiteralAddress(input.target.url)) {
      throw new ValidationError([{ field: 'target.url', message: 'is a link-local or metadata address; set allow_link_local to allow it' }]);
    }
    if (input.retry?.kind === 'custom' && !(input.retry.name in registry.retryPolicies)) {
      throw new ValidationError([{ field: 'retry.name', message: `no retry policy named "${input.retry.name}" in the worker` }]);
    }
    const { jobType, created, newSigningSecret } = await putJobType(ctx, name, input);
    // The only time the secret leaves the store: the caller keeps it for the downstream to verify requests.
    const body = newSigningSecret !== undefined ? { ...jobTypeToApi(jobType), signing_secret: newSigningSecret } : jobTypeToApi(jobType);
    return json(created ? 201 : 200, body);
  };

  // Attempts ended by a status callback never pass through a worker: the api counts them in the history. Its
  // write is awaited in the request that makes it (one request per container every 10 s at most), as Lambda
  // may freeze the container as soon as the answer is out; counts held back go out with a trailing write.
  // A write that fails is logged and fails nothing.
  const history = createMetricsRecorder(ctx, (error) => log('warn', 'could not write the metrics history', { error }));
  const counted = async (job: Job): Promise<HttpResponse> => {
    const finished = finishedOutcomeOfStatus(job.status);
    if (finished) history.recordFinished(job.type, finished, ctx.nowMs());
    history.flushSoon();
    await history.settled();
    return json(200, jobToApi(job));
  };

  const enqueue = async (event: HttpEvent, id: string): Promise<HttpResponse> => {
    if (id === BATCH_PATH_SEGMENT) throw new ValidationError([{ field: 'id', message: RESERVED_ID }]);
    const jobType = await requireJobType(ctx, typeName(event));
    const input = jobInputFromBody(parseWith(jobInputSchema, parseJsonBody(event)));
    const { job, created } = await enqueueJob(ctx, jobType, id, input);
    return json(created ? 201 : 200, jobToApi(job));
  };

  return {
    health: async () => json(200, { status: 'ok' }),
    putJobType: putJobTypeRoute,
    listJobTypes: async (_event, principal) => {
      const readable = (await listJobTypes(ctx)).filter((jobType) => readableBy(principal, jobType.name));
      return json(200, { job_types: readable.map(jobTypeToApi) });
    },
    getJobType: async (event) => {
      const jobType = await requireJobType(ctx, typeName(event, 'name'));
      return json(200, { ...jobTypeToApi(jobType), stats: typeStatsToApi(await statsOfType(ctx, jobType)) });
    },
    pauseJobType: async (event) => json(200, jobTypeToApi(await setJobTypePaused(ctx, typeName(event, 'name'), true))),
    resumeJobType: async (event) => json(200, jobTypeToApi(await setJobTypePaused(ctx, typeName(event, 'name'), false))),
    stats: async (_event, principal) => {
      const readable = (await listJobTypes(ctx)).filter((jobType) => readableBy(principal, jobType.name));
      const [stats, roster] = await Promise.all([statsOfTypes(ctx, readable), listRoster(ctx)]);
      return json(200, {
        job_types: stats.map(({ jobType, stats: typeStats }) => ({
          name: jobType.name,
          ...typeStatsToApi(typeStats),
          concurrency: jobType.concurrency,
          paused: jobType.paused,
        })),
        pollers: roster.poller.map(rosterEntryToApi),
        workers: roster.worker.map(rosterEntryToApi),
      });
    },
    metrics: async (event, principal) => {
      const minutes = metricsMinutes(event);
      const readable = (await listJobTypes(ctx)).filter((jobType) => readableBy(principal, jobType.name));
      return json(200, metricsHistoryToApi(await readMetricsHistory(ctx, readable.map((jobType) => jobType.name), minutes)));
    },
    enqueueWithId: async (event) => enqueue(event, jobId(event)),
    enqueueWithServerId: async (event) => enqueue(event, newJobId(ctx.nowMs())),
    getJob: async (event) => json(200, jobToApi(await requireJob(ctx, typeName(event), jobId(event)))),
    listJobs: async (event) => {
      const jobType = await requireJobType(ctx, typeName(event));
      const query = parseWith(listQuerySchema, event.queryStringParameters ?? {});
      const page = await listJobs(ctx, jobType, {
        status: query.status,
        limit: query.limit,
        ...(query.cursor !== undefined ? { cursor: query.cursor } : {}),
      });
      return json(200, { jobs: page.jobs.map(jobToApi), next_cursor: page.nextCursor ?? null });
    },
    enqueueBatch: async (event) => {
      const jobType = await requireJobType(ctx, typeName(event));
      const { jobs } = parseWith(batchSchema, parseJsonBody(event, MAX_BATCH_BODY_BYTES));
      const parsed = jobs.map((item, index) => parseBatchItem(item, index, () => newJobId(ctx.nowMs())));
      const valid = parsed.filter((item): item is BatchJob => !('issues' in item));
      const outcomes = new Map((await enqueueBatch(ctx, jobType, valid)).map((outcome) => [outcome.index, outcome]));
      const requestId = event.requestContext?.requestId;
      const results = parsed.map((item, index) => {
        if ('issues' in item) {
          const { body } = errorResult(new ValidationError(item.issues), requestId);
          return { index, id: item.id ?? null, status: 400, ...body };
        }
        const outcome = outcomes.get(index)!;
        if (outcome.ok) return { index, id: outcome.id, status: outcome.created ? 201 : 200, job: jobToApi(outcome.job) };
        return { index, id: outcome.id, ...batchItemError(outcome.error, `jobs.${index}`, requestId) };
      });
      return json(200, { results });
    },
    jobberQueue: async (event, principal) => {
      const body = parseWith(jobberQueueSchema, parseJsonBody(event));
      if (principal?.kind !== 'key' || !scopeAllows(principal.scopes, 'enqueue', body.type)) {
        throw new ForbiddenError(`this route needs scope enqueue:${body.type}`);
      }
      const jobType = await requireJobType(ctx, body.type);
      assertJsonSize('payload', body.payload, MAX_DATA_BYTES);
      const { job } = await enqueueJob(ctx, jobType, newJobId(ctx.nowMs()), jobInputFromBody(jobInputSchema.parse({ data: body.payload })));
      return json(201, { 'job-id': job.id });
    },
    callback: async (event, principal) => {
      const id = jobId(event);
      const body = parseWith(callbackSchema, parseJsonBody(event));
      assertCallbackAttempt(principal, body.attempt);
      const jobType = await requireJobType(ctx, typeName(event));
      return counted(await completeFromCallback(ctx, jobType, id, callbackInputOf(body), registry.retryPolicies));
    },
    callbackByCorrelationKey: async (event, principal) => {
      const correlationKey = pathParam(event, 'correlation_key', CORRELATION_KEY_PATTERN);
      const body = parseWith(callbackSchema, parseJsonBody(event));
      const found = await findActiveCorrelatedJob(ctx, correlationKey);
      // The same answer whether no job holds the key or the caller may not call back jobs of its type,
      // so a key cannot be used to learn about another type's jobs.
      if (found === undefined || principal?.kind !== 'key' || !scopeAllows(principal.scopes, 'callback', found.job.type)) {
        throw new NotFoundError(`no job that has not finished holds correlation_key "${correlationKey}"`);
      }
      const jobType = await requireJobType(ctx, found.job.type);
      return counted(await completeCorrelatedJob(ctx, jobType, found, callbackInputOf(body), registry.retryPolicies));
    },
    heartbeat: async (event, principal) => {
      const body = parseWith(heartbeatSchema, parseJsonBody(event));
      assertCallbackAttempt(principal, body.attempt);
      const jobType = await requireJobType(ctx, typeName(event));
      const job = await heartbeatJob(ctx, jobType, jobId(event), body.attempt, body.extend_s);
      return json(200, jobToApi(job));
    },
    replay: async (event) => {
      const jobType = await requireJobType(ctx, typeName(event));
      return json(201, jobToApi(await replayJob(ctx, jobType, jobId(event))));
    },
    cancel: async (event) => json(200, jobToApi(await cancelJob(ctx, typeName(event), jobId(event)))),
    createKey: async (event) => {
      const { key, presented } = await createApiKey(ctx, parseWith(apiKeyInputSchema, parseJsonBody(event)));
      return json(201, { ...apiKeyToApi(key), key: presented });
    },
    listKeys: async () => json(200, { keys: (await listApiKeys(ctx)).map(apiKeyToApi) }),
    revokeKey: async (event) => json(200, apiKeyToApi(await revokeApiKey(ctx, pathParam(event, 'id', KEY_ID_PATTERN)))),
  } satisfies Record<string, Route>;
}
