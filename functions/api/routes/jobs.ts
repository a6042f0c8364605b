/** `/v1/jobs` and `/jobber/queue`: enqueue (one job or a batch), read, list, cancel and replay jobs. */
import { enqueueBatch } from '../../../lib/queue/enqueue/enqueue-batch.js';
import { type BatchJob, type Job, MAX_DATA_BYTES } from '../../../lib/domain/job.js';
import { ForbiddenError, ValidationError, type FieldIssue } from '../../../lib/domain/errors.js';
import { listJobs, MAX_PAGE_BYTES } from '../../../lib/queue/read/list-jobs.js';
import { listJobsByTag } from '../../../lib/queue/read/list-by-tag.js';
import { assertJsonSize, jsonBytes } from '../../../lib/domain/json-size.js';
import { requireJob } from '../../../lib/queue/read-job.js';
import { cancelJob } from '../../../lib/queue/attempt/cancel.js';
import { enqueueJob, replayJob } from '../../../lib/queue/enqueue/enqueue.js';
import { newJobId } from '../../../lib/domain/new-job.js';
import { jobChangeFromBody, jobInputFromBody, jobInputSchema, jobPatchSchema, jobToApi } from '../../../lib/wire/jobs.js';
import { changeQueuedJob } from '../../../lib/queue/enqueue/change-waiting-job.js';
import { parseWith } from '../../../lib/wire/parse.js';
import {
  batchSchema,
  jobberQueueSchema,
  listJobsQuerySchema,
  parseBatchItem,
  reservedIdMessage,
  withinItem,
} from '../../../lib/wire/api-requests.js';
import { header, json, type HttpEvent, type HttpResponse } from '../../shared/http.js';
import { traceparentFromHeader } from '../../../lib/domain/trace-context.js';
import { log } from '../../shared/log.js';
import type { Principal } from '../../shared/principal.js';
import { jobAnswer, keyAllows } from '../access.js';
import { errorResult } from '../http-errors.js';
import { MAX_BATCH_BODY_BYTES, parseJsonBody } from '../http.js';
import { jobId, typeName, type Route, type RouteDeps } from './route.js';

/** The enqueue's trace context, from its `traceparent` header: every job the request makes is kept in that trace. */
function traceOf(event: HttpEvent): { traceparent?: string } {
  const traceparent = traceparentFromHeader(header(event, 'traceparent'));
  return traceparent !== undefined ? { traceparent } : {};
}

/**
 * The status and error body of an item that failed, its fields named from the
 * body's root. A dependency failure is a 500 (or a 503, when DynamoDB was only
 * overloaded) of its own: the job may or may not have been stored, and sending
 * the item again with its id is safe.
 */
function batchItemError(error: unknown, path: string, requestId: string | undefined): { status: number; error: unknown } {
  const result = errorResult(error, requestId);
  const body = result.body.error as { message: string; details: FieldIssue[] };
  if (result.outcomeUnknown) {
    if (result.internal) log('error', 'batch item failed', { requestId, item: path, error });
    const cause = result.internal ? 'internal error' : 'the queue is overloaded';
    return { status: result.status, error: { ...body, message: `${cause}: the job may or may not have been enqueued; send it again with this id` } };
  }
  return { status: result.status, error: { ...body, details: body.details.map((issue) => withinItem(issue, path)) } };
}

export function jobRoutes({ ctx, jobTypes }: RouteDeps) {
  /**
   * A job an enqueue created holds only what the caller sent, so it is answered whole; one that was
   * already there (the same body again) may have run since, and is answered as the caller may read it.
   */
  const enqueueAnswer = (job: Job, created: boolean, principal: Principal | undefined) => (created ? jobToApi(job) : jobAnswer(job, principal));

  const enqueue = async (event: HttpEvent, id: string, principal: Principal | undefined): Promise<HttpResponse> => {
    const reserved = reservedIdMessage(id);
    if (reserved !== undefined) throw new ValidationError([{ field: 'id', message: reserved }]);
    const jobType = await jobTypes.require(typeName(event));
    const input = { ...jobInputFromBody(parseWith(jobInputSchema, parseJsonBody(event))), ...traceOf(event) };
    const { job, created } = await enqueueJob(ctx, jobType, id, input);
    return json(created ? 201 : 200, enqueueAnswer(job, created, principal));
  };

  return {
    enqueueWithId: async (event, principal) => enqueue(event, jobId(event), principal),
    enqueueWithServerId: async (event, principal) => enqueue(event, newJobId(ctx.nowMs()), principal),
    getJob: async (event) => json(200, jobToApi(await requireJob(ctx, typeName(event), jobId(event)))),
    listJobs: async (event) => {
      const jobType = await jobTypes.require(typeName(event));
      const { status, tag, limit, cursor } = parseWith(listJobsQuerySchema, event.queryStringParameters ?? {});
      // Lambda's answer carries the body as a JSON string: each job counts as escaped there.
      const bytes = { bytesOf: (job: Job) => jsonBytes(JSON.stringify(jobToApi(job))), maxBytes: MAX_PAGE_BYTES };
      const page =
        tag !== undefined
          ? await listJobsByTag(ctx, jobType, { tag, status, limit, cursor, bytes })
          : // The query's schema requires a status where no tag is given.
            await listJobs(ctx, jobType, { status: status!, limit, ...(cursor !== undefined ? { cursor } : {}), bytes });
      return json(200, { jobs: page.jobs.map(jobToApi), next_cursor: page.nextCursor ?? null });
    },
    enqueueBatch: async (event, principal) => {
      const jobType = await jobTypes.require(typeName(event));
      const { jobs } = parseWith(batchSchema, parseJsonBody(event, MAX_BATCH_BODY_BYTES));
      const parsed = jobs.map((item, index) => parseBatchItem(item, index, () => newJobId(ctx.nowMs())));
      const trace = traceOf(event);
      const valid = parsed.filter((item): item is BatchJob => !('issues' in item)).map((item) => ({ ...item, input: { ...item.input, ...trace } }));
      const outcomes = new Map((await enqueueBatch(ctx, jobType, valid)).map((outcome) => [outcome.index, outcome]));
      const requestId = event.requestContext?.requestId;
      const results = parsed.map((item, index) => {
        if ('issues' in item) {
          const { body } = errorResult(new ValidationError(item.issues), requestId);
          return { index, id: item.id ?? null, status: 400, ...body };
        }
        const outcome = outcomes.get(index)!;
        if (outcome.ok) return { index, id: outcome.id, status: outcome.created ? 201 : 200, job: enqueueAnswer(outcome.job, outcome.created, principal) };
        return { index, id: outcome.id, ...batchItemError(outcome.error, `jobs.${index}`, requestId) };
      });
      return json(200, { results });
    },
    jobberQueue: async (event, principal) => {
      const body = parseWith(jobberQueueSchema, parseJsonBody(event));
      if (!keyAllows(principal, 'enqueue', body.type)) {
        throw new ForbiddenError(`this route needs scope enqueue:${body.type}`);
      }
      const jobType = await jobTypes.require(body.type);
      assertJsonSize('payload', body.payload, MAX_DATA_BYTES);
      const input = { ...jobInputFromBody(jobInputSchema.parse({ data: body.payload })), ...traceOf(event) };
      const { job } = await enqueueJob(ctx, jobType, newJobId(ctx.nowMs()), input);
      return json(201, { 'job-id': job.id });
    },
    replay: async (event, principal) => {
      const jobType = await jobTypes.require(typeName(event));
      return json(201, jobAnswer(await replayJob(ctx, jobType, jobId(event)), principal));
    },
    // 200: cancelled at once; 202: running, its worker asked to stop (the job shows cancel_requested_at).
    cancel: async (event, principal) => {
      const { state, job } = await cancelJob(ctx, typeName(event), jobId(event), principal?.kind === 'key' ? principal.keyId : undefined);
      return json(state === 'cancelled' ? 200 : 202, jobAnswer(job, principal));
    },
    changeJob: async (event, principal) => {
      const change = jobChangeFromBody(parseWith(jobPatchSchema, parseJsonBody(event)));
      const jobType = await jobTypes.require(typeName(event));
      // typeScope admits keys only; the change is recorded under the key's id.
      if (principal?.kind !== 'key') throw new ForbiddenError(`this route needs scope enqueue:${jobType.name}`);
      return json(200, jobAnswer(await changeQueuedJob(ctx, jobType, jobId(event), change, principal.keyId), principal));
    },
  } satisfies Record<string, Route>;
}
