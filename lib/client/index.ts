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
import { apiErrorFrom, ConflictError, QueueNetworkError } from './errors.js';
import { retryDelayMs, retryPolicyOf, shouldRetry, type RetryPolicy, type TryFailure } from './retry.js';
import type {
  BatchResult,
  CompleteBody,
  EnqueueJob,
  FailBody,
  Job,
  JobPage,
  JobStatus,
  JobType,
  JobTypeBody,
  Metrics,
  Stats,
} from './types.js';

export * from './errors.js';
export { DEFAULT_RETRY_POLICY, retryDelayMs, shouldRetry, type RetryPolicy } from './retry.js';
export type * from './types.js';
export { JOB_STATUSES } from './types.js';

export interface ClientOptions {
  /** The API's base URL, e.g. `http://localhost:3000` or the stack's `ApiUrl` output. */
  url: string;
  /**
   * An API key with the scopes of the calls made (`enqueue:<type>`, `read:<type>`, `callback:<type>`, `admin`).
   * A downstream holding only a job's `callback_url` posts to that URL instead: its token travels in the query.
   */
  token: string;
  /** @default globalThis.fetch */
  fetch?: typeof fetch;
  /** Retries of requests that are safe to repeat: a count, or a policy. 0 turns retries off. @default 3 */
  retries?: number | Partial<RetryPolicy>;
  /** How long one try may take before it counts as a network error. @default 30000 */
  timeoutMs?: number;
  /** @default Math.random (tests make the backoff predictable) */
  random?: () => number;
  /** @default a timer */
  sleep?: (ms: number) => Promise<void>;
}

export interface ListOptions {
  status: JobStatus;
  /** 1 to 100. @default 50 */
  limit?: number;
  cursor?: string | null;
}

export interface QueueClient {
  /** `PUT /v1/job-types/{name}`: creates or replaces a job type. Retried. */
  defineType(name: string, body: JobTypeBody): Promise<JobType>;
  getType(name: string): Promise<JobType>;
  listTypes(): Promise<JobType[]>;
  /**
   * Enqueues a job: with `id` by `PUT /v1/jobs/{type}/{id}` (the same body again returns the same job, so it
   * is retried); without, by `POST /v1/jobs/{type}` with a server id (not retried: a retry could enqueue it twice).
   */
  enqueue(type: string, job?: EnqueueJob, options?: { id?: string }): Promise<Job>;
  /** Up to 100 jobs, a result per item (an item's refusal is in its result, not thrown). Retried when every job has an id. */
  enqueueBatch(type: string, jobs: (EnqueueJob & { id?: string })[]): Promise<BatchResult>;
  get(type: string, id: string): Promise<Job>;
  /** One page of a type's jobs in one status. */
  list(type: string, options: ListOptions): Promise<JobPage>;
  /** Every job of a type in one status, page by page. */
  listAll(type: string, options: Omit<ListOptions, 'cursor'>): AsyncIterable<Job>;
  /** A new job with the same data. Not retried: each call makes a new job. */
  replay(type: string, id: string): Promise<Job>;
  /** Cancels a job that has not started. Retried; a retry's 409 is answered with the job when it is cancelled. */
  cancel(type: string, id: string): Promise<Job>;
  /**
   * Reports an attempt succeeded. Retried: a repeat changes nothing. When the first try took effect but its
   * answer was lost, the retry's 409 is answered with the job, the attempt recorded as succeeded (when the key can read it).
   */
  complete(type: string, id: string, body: CompleteBody): Promise<Job>;
  /** Reports an attempt failed; retried like `complete`. */
  fail(type: string, id: string, body: FailBody): Promise<Job>;
  /** Extends a running attempt's claim. Retried. */
  heartbeat(type: string, id: string, body: { attempt: number; extend_s?: number }): Promise<Job>;
  /** Claims none of the type's jobs until `resume`. Needs scope admin. Retried. */
  pause(type: string): Promise<JobType>;
  resume(type: string): Promise<JobType>;
  stats(): Promise<Stats>;
  /** The last `minutes` minutes (1 to 360, default 60) of finished jobs and scheduling lag. */
  metrics(options?: { minutes?: number }): Promise<Metrics>;
}

type Method = 'GET' | 'PUT' | 'POST' | 'DELETE';

interface Call {
  method: Method;
  /** Path segments, each encoded here. */
  path: string[];
  query?: Record<string, string | number | undefined | null>;
  body?: unknown;
  /** Safe to send again: it names what it changes, so a second copy changes nothing more. */
  idempotent: boolean;
}

const iso = (time: Date | string | null | undefined): string | null | undefined => (time instanceof Date ? time.toISOString() : time);

/** The job as the API takes it: times as ISO strings, fields left out when not given. */
function enqueueBody(job: EnqueueJob = {}): Record<string, unknown> {
  const { run_after, expires_at, ...rest } = job;
  const body: Record<string, unknown> = Object.fromEntries(Object.entries(rest).filter(([, value]) => value !== undefined));
  if (run_after !== undefined) body.run_after = iso(run_after);
  if (expires_at !== undefined) body.expires_at = iso(expires_at);
  return body;
}

const defaultSleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export function createClient(options: ClientOptions): QueueClient {
  const baseUrl = options.url.replace(/\/+$/, '');
  // Called through globalThis when not given: a browser's fetch refuses to run detached from window.
  const fetchImpl: (url: string, init: RequestInit) => Promise<Response> = options.fetch ?? ((url, init) => globalThis.fetch(url, init));
  const policy = retryPolicyOf(options.retries);
  const timeoutMs = options.timeoutMs ?? 30_000;
  const random = options.random ?? Math.random;
  const sleep = options.sleep ?? defaultSleep;

  const urlOf = (call: Call): string => {
    const query = new URLSearchParams();
    for (const [name, value] of Object.entries(call.query ?? {})) if (value !== undefined && value !== null) query.set(name, String(value));
    const search = query.toString() === '' ? '' : `?${query}`;
    return `${baseUrl}/${call.path.map(encodeURIComponent).join('/')}${search}`;
  };

  async function request<T>(call: Call): Promise<T> {
    const url = urlOf(call);
    const headers: Record<string, string> = { authorization: `Bearer ${options.token}`, accept: 'application/json' };
    const body = call.body === undefined ? undefined : JSON.stringify(call.body);
    if (body !== undefined) headers['content-type'] = 'application/json';
    for (let tries = 1; ; tries++) {
      let failure: TryFailure;
      let error: Error;
      try {
        const response = await fetchImpl(url, { method: call.method, headers, body, signal: AbortSignal.timeout(timeoutMs) });
        const text = await response.text();
        let parsed: unknown;
        try {
          parsed = text.length > 0 ? JSON.parse(text) : undefined;
        } catch {
          parsed = undefined;
        }
        if (response.ok) return parsed as T;
        failure = { status: response.status };
        error = apiErrorFrom(response.status, parsed, tries, response.headers.get('x-request-id'));
      } catch (thrown) {
        failure = { status: undefined };
        const reason = thrown instanceof Error && thrown.name === 'TimeoutError' ? `timed out after ${timeoutMs} ms` : 'failed';
        error = new QueueNetworkError(`${call.method} ${url} ${reason}`, tries, { cause: thrown });
      }
      if (!shouldRetry({ idempotent: call.idempotent, failure, triesSoFar: tries, policy })) throw error;
      await sleep(retryDelayMs(tries - 1, policy, random));
    }
  }

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
    enqueue: (type, job, { id } = {}) =>
      id === undefined
        ? request({ method: 'POST', path: ['v1', 'jobs', type], body: enqueueBody(job), idempotent: false })
        : request({ method: 'PUT', path: ['v1', 'jobs', type, id], body: enqueueBody(job), idempotent: true }),
    enqueueBatch: (type, jobs) =>
      request({
        method: 'POST',
        path: ['v1', 'jobs', type, 'batch'],
        body: { jobs: jobs.map(({ id, ...job }) => ({ ...(id !== undefined ? { id } : {}), ...enqueueBody(job) })) },
        idempotent: jobs.every((job) => job.id !== undefined),
      }),
    get: (type, id) => request({ method: 'GET', path: ['v1', 'jobs', type, id], idempotent: true }),
    list: (type, { status, limit, cursor }) =>
      request({ method: 'GET', path: ['v1', 'jobs', type], query: { status, limit, cursor }, idempotent: true }),
    async *listAll(type, { status, limit }) {
      let cursor: string | null = null;
      do {
        const page: JobPage = await client.list(type, { status, ...(limit !== undefined ? { limit } : {}), cursor });
        yield* page.jobs;
        cursor = page.next_cursor;
      } while (cursor !== null);
    },
    replay: (type, id) => request({ method: 'POST', path: ['v1', 'jobs', type, id, 'replay'], idempotent: false }),
    cancel: (type, id) =>
      confirmingConflict({ method: 'DELETE', path: ['v1', 'jobs', type, id], idempotent: true }, type, id, (job) => job.status === 'cancelled'),
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
    pause: (type) => request({ method: 'POST', path: ['v1', 'job-types', type, 'pause'], idempotent: true }),
    resume: (type) => request({ method: 'POST', path: ['v1', 'job-types', type, 'resume'], idempotent: true }),
    stats: () => request({ method: 'GET', path: ['v1', 'stats'], idempotent: true }),
    metrics: ({ minutes } = {}) => request({ method: 'GET', path: ['v1', 'metrics'], query: { minutes }, idempotent: true }),
  };
  return client;
}
