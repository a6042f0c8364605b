/**
 * A typed client for the queue's HTTP API, for producers, callbacks and
 * operators. It uses the global `fetch` (or one you pass) and nothing else, so
 * it runs in Node.js 20+, Deno, Bun, edge runtimes and browsers.
 *
 *     const queue = createClient({ url: 'http://localhost:3000', token: process.env.QUEUE_TOKEN! });
 *     await queue.enqueue('send-email', { data: { to: 'ada@example.com' }, run_after: inFiveMinutes }, { id: 'welcome-42' });
 *
 * Requests that are safe to repeat are retried on 5xx answers and network errors (see `retry.ts`); errors are
 * thrown as the classes of `errors.ts`.
 */
import { ConflictError } from './errors.js';
import { scheduleMethods, type ScheduleMethods } from './schedules.js';
import { adminMethods, type AdminMethods } from './admin.js';
import { bulkMethods, type BulkMethods } from './bulk.js';
import { createRequester, type Call, type ClientOptions } from './transport.js';
import { wireBody } from './wire.js';
import type {
  BatchResult,
  CancelAnswer,
  CompleteBody,
  CompleteByKeyBody,
  DefinedJobType,
  EnqueueJob,
  FailBody,
  FailByKeyBody,
  HeartbeatBody,
  JobChangeBody,
  Job,
  JobPage,
  JobStatus,
  JobType,
  JobTypeBody,
  JobTypeWithStats,
  Metrics,
  ProgressBody,
  Stats,
} from './types.js';

export * from './errors.js';
export { DEFAULT_RETRY_POLICY, retryDelayMs, shouldRetry, type RetryPolicy } from './retry.js';
export type { ClientOptions } from './transport.js';
export type * from './types.js';
export type * from './schedule-types.js';
export type { BulkBody, BulkOperation } from './bulk.js';
export { JOB_STATUSES } from './types.js';

/** Which jobs a listing shows: by `status`, or by `tag` (newest enqueued first, in any status, or in `status` when both are given). */
export type ListSelection = { status: JobStatus; tag?: string | undefined } | { status?: JobStatus | undefined; tag: string };

export type ListOptions = ListSelection & {
  /** 1 to 100. @default 50 */
  limit?: number;
  cursor?: string | null;
};

/** The trace an enqueue belongs to: a W3C `traceparent`, sent as that header. */
export interface TraceOptions {
  traceparent?: string;
}

const traceHeaders = (traceparent: string | undefined): Record<string, string> => (traceparent !== undefined ? { traceparent } : {});

export interface QueueClient extends ScheduleMethods, AdminMethods, BulkMethods {
  /** `PUT /v1/job-types/{name}`: creates or replaces a job type. Retried. */
  defineType(name: string, body: JobTypeBody): Promise<DefinedJobType>;
  /** The type with its live stats. */
  getType(name: string): Promise<JobTypeWithStats>;
  listTypes(): Promise<JobType[]>;
  /**
   * Enqueues a job: with `id` by `PUT /v1/jobs/{type}/{id}` (the same body again returns the same job, so it
   * is retried); without, by `POST /v1/jobs/{type}` with a server id (not retried: a retry could enqueue it twice;
   * unless it has a `dedup` key, whose window answers a second copy with the job the first made).
   * `traceparent` (W3C trace context, e.g. the active span's) puts the job in that trace: its attempts run as child spans.
   */
  enqueue(type: string, job?: EnqueueJob, options?: { id?: string } & TraceOptions): Promise<Job>;
  /** Up to 100 jobs, a result per item (an item's refusal is in its result, not thrown). Retried when every job has an id or a dedup key. */
  enqueueBatch(type: string, jobs: (EnqueueJob & { id?: string })[], options?: TraceOptions): Promise<BatchResult>;
  get(type: string, id: string): Promise<Job>;
  /** One page of a type's jobs in one status, or with one tag. */
  list(type: string, options: ListOptions): Promise<JobPage>;
  /** Every job of a type in one status, or with one tag, page by page. */
  listAll(type: string, options: ListSelection & { limit?: number }): AsyncIterable<Job>;
  /** A new job with the same data. Not retried: each call makes a new job. */
  replay(type: string, id: string): Promise<Job>;
  /**
   * Cancels a job that has not finished: at once when it is queued or awaiting its callback, or, when it is
   * running, by asking its worker to stop (the answer is the running job with `cancel_requested_at`; it ends
   * cancelled within seconds). A finished job is a ConflictError. Retried; a retry's 409 is answered with the
   * job when it is cancelled.
   */
  cancel(type: string, id: string): Promise<CancelAnswer>;
  /**
   * Reports an attempt succeeded. Retried: a repeat changes nothing. When the first try took effect but its
   * answer was lost, the retry's 409 is answered with the job, the attempt recorded as succeeded (when the key can read it).
   */
  complete(type: string, id: string, body: CompleteBody): Promise<Job>;
  /** Reports an attempt failed; retried like `complete`. */
  fail(type: string, id: string, body: FailBody): Promise<Job>;
  /** Extends a running attempt's claim, and records its `progress` when given. Retried. */
  heartbeat(type: string, id: string, body: HeartbeatBody): Promise<Job>;
  /** Records how far a running attempt got: a heartbeat carrying `progress` (so it extends the claim too). Retried. */
  reportProgress(type: string, id: string, body: { attempt: number; progress: ProgressBody }): Promise<Job>;
  /**
   * `PATCH /v1/jobs/{type}/{id}`: moves a queued job (`run_after: 'now'` runs it now) or changes its priority
   * or expiry. Retried: the values are absolute, so a repeat changes nothing more; a retry's 409 means the job
   * has started since, whether or not the first try took effect.
   */
  change(type: string, id: string, body: JobChangeBody): Promise<Job>;
  /**
   * Reports the attempt of the job holding `correlationKey` succeeded, by `POST /v1/callbacks/{key}`.
   * Without `attempt`, it ends whichever attempt is open and is not retried (a repeat could end a later
   * attempt); with it, it is retried, and a retry after a first try that took effect unseen answers 404 or 409.
   */
  completeByKey(correlationKey: string, body?: CompleteByKeyBody): Promise<Job>;
  /** Reports the attempt of the job holding `correlationKey` failed; retried like `completeByKey`. */
  failByKey(correlationKey: string, body?: FailByKeyBody): Promise<Job>;
  /** Claims none of the type's jobs until `resume`. Needs scope admin. Retried. */
  pause(type: string): Promise<JobType>;
  resume(type: string): Promise<JobType>;
  stats(): Promise<Stats>;
  /** The last `minutes` minutes (1 to 360, default 60) of finished jobs and scheduling lag. */
  metrics(options?: { minutes?: number }): Promise<Metrics>;
}

export function createClient(options: ClientOptions): QueueClient {
  const request = createRequester(options);

  /**
   * A retried request whose earlier try took effect unseen is answered 409 (the attempt already ended, the
   * job is already cancelled). When the job shows exactly that effect, the job is the answer; otherwise the 409 stands.
   */
  async function confirmingConflict(call: Call, type: string, id: string, tookEffect: (job: Job) => boolean): Promise<Job> {
    try {
      return await request<Job>(call);
    } catch (error) {
      if (!(error instanceof ConflictError) || error.tries < 2) throw error;
      const job = await request<Job>({ method: 'GET', path: ['v1', 'jobs', type, id], idempotent: true }).catch(() => undefined);
      if (job && tookEffect(job)) return job;
      throw error;
    }
  }

  const callback = (type: string, id: string, body: { attempt: number } & Record<string, unknown>, outcome: 'succeeded' | 'failed') =>
    confirmingConflict({ method: 'POST', path: ['v1', 'jobs', type, id], body, idempotent: true }, type, id, (job) =>
      job.history.some((attempt) => attempt.attempt === body.attempt && attempt.outcome === outcome),
    );

  const client: QueueClient = {
    defineType: (name, body) => request({ method: 'PUT', path: ['v1', 'job-types', name], body, idempotent: true }),
    getType: (name) => request({ method: 'GET', path: ['v1', 'job-types', name], idempotent: true }),
    listTypes: async () => (await request<{ job_types: JobType[] }>({ method: 'GET', path: ['v1', 'job-types'], idempotent: true })).job_types,
    enqueue: (type, job, { id, traceparent } = {}) =>
      id === undefined
        ? request({ method: 'POST', path: ['v1', 'jobs', type], body: wireBody(job ?? {}), headers: traceHeaders(traceparent), idempotent: job?.dedup !== undefined })
        : request({ method: 'PUT', path: ['v1', 'jobs', type, id], body: wireBody(job ?? {}), headers: traceHeaders(traceparent), idempotent: true }),
    enqueueBatch: (type, jobs, { traceparent } = {}) =>
      request({
        method: 'POST',
        path: ['v1', 'jobs', type, 'batch'],
        body: { jobs: jobs.map(({ id, ...job }) => ({ ...(id !== undefined ? { id } : {}), ...wireBody(job) })) },
        headers: traceHeaders(traceparent),
        idempotent: jobs.every((job) => job.id !== undefined || job.dedup !== undefined),
      }),
    get: (type, id) => request({ method: 'GET', path: ['v1', 'jobs', type, id], idempotent: true }),
    list: (type, { status, tag, limit, cursor }) =>
      request({ method: 'GET', path: ['v1', 'jobs', type], query: { status, tag, limit, cursor }, idempotent: true }),
    async *listAll(type, options) {
      let cursor: string | null = null;
      do {
        const page: JobPage = await client.list(type, { ...options, cursor });
        yield* page.jobs;
        cursor = page.next_cursor;
      } while (cursor !== null);
    },
    replay: (type, id) => request({ method: 'POST', path: ['v1', 'jobs', type, id, 'replay'], idempotent: false }),
    cancel: async (type, id) =>
      (await confirmingConflict({ method: 'DELETE', path: ['v1', 'jobs', type, id], idempotent: true }, type, id, (job) => job.status === 'cancelled')) as CancelAnswer,
    complete: (type, id, { attempt, result }) =>
      callback(type, id, { status: 'succeeded', attempt, ...(result !== undefined ? { result } : {}) }, 'succeeded'),
    fail: (type, id, { attempt, error, retryable }) =>
      callback(
        type,
        id,
        { status: 'failed', attempt, ...(error !== undefined ? { error } : {}), ...(retryable !== undefined ? { retryable } : {}) },
        'failed',
      ),
    heartbeat: (type, id, body) => request({ method: 'POST', path: ['v1', 'jobs', type, id, 'heartbeat'], body, idempotent: true }),
    reportProgress: (type, id, { attempt, progress }) => client.heartbeat(type, id, { attempt, progress }),
    change: (type, id, body) => request({ method: 'PATCH', path: ['v1', 'jobs', type, id], body: wireBody(body), idempotent: true }),
    completeByKey: (correlationKey, { attempt, result } = {}) =>
      request({
        method: 'POST',
        path: ['v1', 'callbacks', correlationKey],
        // Fields left undefined are left out of the JSON.
        body: { status: 'succeeded', attempt, result },
        idempotent: attempt !== undefined,
      }),
    failByKey: (correlationKey, { attempt, error, retryable } = {}) =>
      request({
        method: 'POST',
        path: ['v1', 'callbacks', correlationKey],
        body: { status: 'failed', attempt, error, retryable },
        idempotent: attempt !== undefined,
      }),
    pause: (type) => request({ method: 'POST', path: ['v1', 'job-types', type, 'pause'], idempotent: true }),
    resume: (type) => request({ method: 'POST', path: ['v1', 'job-types', type, 'resume'], idempotent: true }),
    stats: () => request({ method: 'GET', path: ['v1', 'stats'], idempotent: true }),
    metrics: ({ minutes } = {}) => request({ method: 'GET', path: ['v1', 'metrics'], query: { minutes }, idempotent: true }),
    ...scheduleMethods(request), ...adminMethods(request), ...bulkMethods(request),
  };
  return client;
}
