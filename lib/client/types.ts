/**
 * The API's request and response bodies as they are on the wire (snake_case).
 * Written out here rather than imported from the server's zod schemas, so the
 * client and its declarations depend on nothing but `fetch`; type tests keep
 * them in step with lib/wire: the bodies with the request schemas
 * (test/unit/lib/client/types.test.ts), each method's answer with the schema the
 * OpenAPI document describes its route's answer with (test/unit/lib/client/types.answer-types.test.ts).
 */
import type { Debounce, DebounceInput, Dedup } from './dedup-debounce.js';
import type { TypeStats } from './stats-types.js';

export type { Debounce, DebounceInput, Dedup } from './dedup-debounce.js';
export type { DeployedCost, JobTypeStats, Metrics, MetricsMinute, PollerEntry, RosterEntry, Stats, TypeStats, WorkerEntry } from './stats-types.js';

export const JOB_STATUSES = ['queued', 'running', 'awaiting_callback', 'succeeded', 'failed', 'expired', 'cancelled'] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];

export type AttemptOutcome = 'succeeded' | 'failed' | 'timed_out' | 'expired' | 'cancelled';
export type DeliveryStrategy = 'at_least_once' | 'at_most_once';
export type PriorityOrder = 'time_first' | 'priority_first';

/** Any JSON value. */
export type Json = string | number | boolean | null | Json[] | { [key: string]: Json };

export interface TimeWindow {
  /** Local opening time, `HH:MM`. */
  start: string;
  /** Local closing time, `HH:MM`; before `start` when the window crosses midnight. */
  end: string;
  /** An IANA time zone, e.g. `America/New_York`. */
  tz: string;
}

/** Error classes (strings) or HTTP statuses (numbers) that may be retried. */
export type RetryOn = (string | number)[];

export type RetryPolicyBody =
  | { kind: 'none' }
  | { kind: 'fixed'; delay_s: number; retry_on?: RetryOn | undefined }
  | { kind: 'exponential'; base_s: number; factor?: number | undefined; max_s: number; jitter?: number | undefined; retry_on?: RetryOn | undefined }
  | { kind: 'custom'; name: string };

export type TargetBody =
  | { kind: 'handler'; name: string }
  | { kind: 'http'; url: string; request_timeout_s?: number | undefined; allow_link_local?: boolean | undefined }
  | { kind: 'lambda'; function: string }
  | { kind: 'eventbridge'; bus: string; detail_type: string; source?: string | undefined };

/**
 * What one throttle key is held to, at least one of: in flight, a `limit` in weight units or a `share` of the
 * type's concurrency (not both); and `rate_per_s`, starts a second across every poller.
 */
export interface ThrottleLimitBody {
  limit?: number | undefined;
  share?: number | undefined;
  rate_per_s?: number | undefined;
}

export interface ThrottleBody {
  /** A dotted path into a job's data its throttle key is taken from. */
  key_field?: string | undefined;
  /** Per key; `*` for every key not named (a named key's entry replaces `*`'s whole). */
  limits: Record<string, ThrottleLimitBody>;
}

/** `PUT /v1/job-types/{name}`: everything but `target` has a default. */
export interface JobTypeBody {
  target: TargetBody;
  delivery_strategy?: DeliveryStrategy | undefined;
  attempts?: number | undefined;
  /** null: unlimited; 0 holds every job. */
  concurrency?: number | null | undefined;
  rate_limit_per_s?: number | null | undefined;
  priority_order?: PriorityOrder | undefined;
  throttle?: ThrottleBody | null | undefined;
  /** List succeeded jobs by status too (a write unit more per job). */
  list_succeeded?: boolean | undefined;
  visibility_timeout_s?: number | undefined;
  timeout_s?: number | undefined;
  retry?: RetryPolicyBody | undefined;
  time_windows?: TimeWindow[] | null | undefined;
  /** Absent: a new type runs, an existing one keeps its paused state. */
  paused?: boolean | undefined;
}

/** A job type as the API returns it. */
export interface JobType {
  name: string;
  delivery_strategy: DeliveryStrategy;
  attempts: number;
  concurrency: number | null;
  paused: boolean;
  rate_limit_per_s: number | null;
  priority_order: PriorityOrder;
  throttle: { key_field: string | null; limits: ThrottleBody['limits'] } | null;
  list_succeeded: boolean;
  visibility_timeout_s: number;
  timeout_s: number;
  retry:
    | { kind: 'none' }
    | { kind: 'fixed'; delay_s: number; retry_on: RetryOn | null }
    | { kind: 'exponential'; base_s: number; factor: number; max_s: number; jitter: number; retry_on: RetryOn | null }
    | { kind: 'custom'; name: string };
  target:
    | { kind: 'handler'; name: string }
    | { kind: 'http'; url: string; request_timeout_s: number; allow_link_local: boolean }
    | { kind: 'lambda'; function: string }
    | { kind: 'eventbridge'; bus: string; detail_type: string; source: string };
  time_windows: TimeWindow[] | null;
  created_at: string;
  updated_at: string;
}

/** `defineType`'s answer: the type, and an http target's HMAC key in the one answer that generated it. */
export interface DefinedJobType extends JobType {
  signing_secret?: string;
}

/** `getType`'s answer: the type with its live stats. */
export interface JobTypeWithStats extends JobType {
  stats: TypeStats;
}

/** A job to enqueue. Times are a `Date` or an ISO 8601 string with an offset. */
export interface EnqueueJob {
  data?: Json | undefined;
  /** When it is due; absent: now. */
  run_after?: Date | string | undefined;
  /** It never starts after this. */
  expires_at?: Date | string | null | undefined;
  /** 0 to 1000, lower first; default 100. */
  priority?: number | undefined;
  /** Its share of the type's concurrency; default 1, 0 for a critical job. */
  weight?: number | undefined;
  throttle_key?: string | null | undefined;
  time_windows?: TimeWindow[] | null | undefined;
  correlation_key?: string | undefined;
  /** At most 10 tags of 1 to 64 characters of A-Z a-z 0-9 _ . : = @ / -, none twice; fixed once enqueued. */
  tags?: string[] | null | undefined;
  /** Within `window_s` of the first enqueue with `key` on the type, another creates nothing and answers that first job. */
  dedup?: Dedup | undefined;
  /** While the job made with `key` waits, another enqueue with it replaces its data and moves it `delay_s` later. */
  debounce?: DebounceInput | undefined;
}

export interface AttemptError {
  class: string;
  message: string;
  trace?: string;
}

export interface Attempt {
  attempt: number;
  claimed_at: string | null;
  started_at: string | null;
  ended_at: string | null;
  outcome: AttemptOutcome;
  error: AttemptError | null;
  worker: { id: string; host: string } | null;
}

/** A value a `PATCH` changed; times as ISO 8601, an expiry null when there was or is none. */
export interface FieldChange<T> {
  from: T;
  to: T;
}

/** One `PATCH` of a queued job: when, by which key id, and each field it changed. */
export interface JobChange {
  at: string;
  by: string;
  run_after?: FieldChange<string>;
  priority?: FieldChange<number>;
  expires_at?: FieldChange<string | null>;
}

/** How far a running attempt got, as it last reported (a heartbeat's `progress`, or its handler's). */
export interface ProgressBody {
  /** 0 to 100. */
  percent?: number | undefined;
  /** At most 1 000 characters. */
  message?: string | undefined;
  data?: Json | undefined;
}

/** The latest report as the job keeps it: with the attempt that made it, and when. */
export interface JobProgress {
  percent: number | null;
  message: string | null;
  data: Json;
  attempt: number;
  at: string;
}

/**
 * A job as the API returns it, with its attempt history (oldest first). To a key without `read:` on the type
 * (the answers of cancel, change, replay and callbacks), what the job holds is withheld: `data`, `result`,
 * `progress`, `throttle_key`, `correlation_key` and `cancelled_by` are null, `history`, `changes` and `tags` empty.
 */
export interface Job {
  id: string;
  type: string;
  status: JobStatus;
  data: Json;
  attempt: number;
  max_attempts: number;
  delivery_strategy: DeliveryStrategy;
  run_after: string | null;
  expires_at: string | null;
  priority: number;
  weight: number;
  time_windows: TimeWindow[] | null;
  throttle_key: string | null;
  correlation_key: string | null;
  /** The schedule that made the job, or null. */
  schedule: string | null;
  /** The W3C traceparent of the request that enqueued it (a schedule's fire starts its own), or null. */
  traceparent: string | null;
  /** Its tags as enqueued; empty for none. */
  tags: string[];
  dedup: Dedup | null;
  debounce: Debounce | null;
  /** Enqueues a debounced job took in after its own. */
  debounce_count: number;
  created_at: string | null;
  updated_at: string | null;
  finished_at: string | null;
  /** Who cancelled it: the id of the key that asked, or of the bulk operation that did; null otherwise. */
  cancelled_by: string | null;
  /** When a cancel of its running attempt was asked: set from a `cancel` answered 202 until the job ends cancelled. */
  cancel_requested_at: string | null;
  result: Json;
  claimed_until: string | null;
  history: Attempt[];
  history_dropped: number;
  /** The latest progress report of an attempt; null until one reports. */
  progress: JobProgress | null;
  /** The changes made by `PATCH`, oldest first (the last 25). */
  changes: JobChange[];
  changes_dropped: number;
}

/**
 * What `cancel` answers: the job ended cancelled at once (it was queued or awaiting its callback), or it is
 * running and its worker is stopping it (`cancel_requested_at` set; it ends cancelled within seconds, whatever
 * its attempt comes to).
 */
export type CancelAnswer = JobWith<{ status: 'cancelled' }> | JobWith<{ status: 'running'; cancel_requested_at: string }>;

/** The job with some of its fields narrowed. */
type JobWith<Narrowed extends Partial<Job>> = { [Field in keyof Job]: Field extends keyof Narrowed ? Narrowed[Field] : Job[Field] };

export interface FieldIssue {
  /** Dotted path of the field, e.g. `retry.delay_s`, `jobs.3.priority` or `body`. */
  field: string;
  message: string;
}

/** The body of every error answer. */
export interface ErrorBody {
  error: { code: string; message: string; details: FieldIssue[]; request_id: string | null };
}

/** A batch item that was refused, and why (fields named from the body's root). */
export interface BatchItemError extends ErrorBody {
  index: number;
  id: string | null;
  status: number;
}

/** One item of a batch's answer: the job, or why it was refused. */
export type BatchItemResult = { index: number; id: string; status: 200 | 201; job: Job } | BatchItemError;

export interface BatchResult {
  results: BatchItemResult[];
}

export interface JobPage {
  jobs: Job[];
  /** Pass it as `cursor` for the next page; null on the last. */
  next_cursor: string | null;
}

/** A status callback's body: the attempt it reports on, and its result or error. */
export interface CompleteBody {
  attempt: number;
  result?: Json | undefined;
}

/** `PATCH /v1/jobs/{type}/{id}`: what to change of a queued job; at least one field. */
export interface JobChangeBody {
  /** When it is due: a `Date`, an ISO 8601 string with an offset, or `now`. */
  run_after?: Date | string | undefined;
  /** 0 to 1000, lower first. */
  priority?: number | undefined;
  /** null removes the expiry. */
  expires_at?: Date | string | null | undefined;
}

/** A heartbeat: the attempt it is for, how long to hold the claim from now, and how far the attempt got. */
export interface HeartbeatBody {
  attempt: number;
  extend_s?: number | undefined;
  progress?: ProgressBody | undefined;
}

/** A callback by correlation key: `attempt` is optional, the key names the job's open attempt. */
export interface CompleteByKeyBody {
  attempt?: number | undefined;
  result?: Json | undefined;
}

export interface FailByKeyBody extends Omit<FailBody, 'attempt'> {
  attempt?: number | undefined;
}

export interface FailBody {
  attempt: number;
  error?: { class?: string | undefined; message?: string | undefined; trace?: string | undefined } | undefined;
  /** false: no further attempt, whatever attempts remain. */
  retryable?: boolean | undefined;
}

/** An API key as the API shows it: never its secret. */
export interface ApiKey {
  id: string;
  name: string | null;
  scopes: string[];
  created_at: string;
  expires_at: string | null;
  last_used_at: string | null;
  revoked_at: string | null;
}

/** A key just created: its secret `key`, shown this once. */
export interface CreatedApiKey extends ApiKey {
  key: string;
}

/** `GET /openapi.json`: the API as OpenAPI 3.1. */
export interface OpenApiDocument {
  openapi: '3.1.0';
  info: { title: string; version: string; description: string };
  paths: Record<string, Record<string, unknown>>;
  components: { schemas: Record<string, unknown>; securitySchemes: Record<string, unknown> };
}
