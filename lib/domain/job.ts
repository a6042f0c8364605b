/** Jobs as stored: the source of truth for their status, data, attempts and history. */
import type { DeliveryStrategy } from './job-type.js';
import type { JobProgress } from './progress.js';
import type { TimeWindow } from './windows.js';

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

/** The in-flight counters a claim added its weight to, so the attempt's end takes exactly that weight back. */
export interface HeldSlots {
  weight: number;
  /** The type-wide counter. */
  type: boolean;
  /** The throttle key's counter. */
  key?: string;
  /**
   * The epoch of the type's counter the weight was reserved in, and of the key's: its return lowers that epoch's
   * part of the counter (queue/limits/counter-reconcile.ts). Absent on claims made before epochs were recorded.
   */
  typeEpoch?: number;
  keyEpoch?: number;
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

export const ATTEMPT_OUTCOMES = ['succeeded', 'failed', 'timed_out', 'expired', 'cancelled'] as const;
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

/** A value a `PATCH` changed, as it was and as it became. */
export interface FieldChange<T> {
  from: T;
  to: T;
}

/** One `PATCH` of a queued job: who made it, when, and each value it changed (expiry null: none). */
export interface JobChangeRecord {
  atMs: number;
  /** The id of the API key that made it. */
  by: string;
  runAfterMs?: FieldChange<number>;
  priority?: FieldChange<number>;
  expiresAtMs?: FieldChange<number | null>;
}

/** Within `windowS` of the job's enqueue, another enqueue of its type with `key` creates nothing and answers this job (domain/dedup-debounce.ts). */
export interface JobDedup {
  key: string;
  windowS: number;
}

/**
 * While the job waits unstarted, another enqueue of its type with `key` replaces its data and moves it to
 * `delayS` after that enqueue, never past `maxWaitS` after this job's own enqueue.
 */
export interface JobDebounce {
  key: string;
  delayS: number;
  maxWaitS?: number;
}

/** What a producer chooses about a job, stored as given (the throttle key may come from the data instead). */
interface JobChoices {
  expiresAtMs?: number;
  priority: number;
  weight: number;
  /** Given by the producer; otherwise taken from the data by the type's `throttle.key_field`. */
  throttleKey?: string;
  /** The job's own windows, replacing its type's; absent: its type's. */
  timeWindows?: TimeWindow[];
  /** Unique among the type's jobs that are not terminal; an item of the key's `CORR#<key>` partition points at the job holding it. */
  correlationKey?: string;
  /** The schedule that made the job, at one of its fire times; absent on every other job, so they cost nothing more. */
  schedule?: string;
  /**
   * The W3C `traceparent` of the request that enqueued it (a schedule's fire starts a trace of its own); each attempt
   * runs as a span of that trace (domain/trace-context.ts). Not part of what makes a repeated enqueue the same job.
   */
  traceparent?: string;
  /** Its tags, as given at enqueue and never changed after; each has an entry in its (type, tag) partition (domain/tags.ts). */
  tags?: string[];
  /** Enqueues of its type with the key within the window answer this job (queue/enqueue/dedup.ts); a `DEDUP#` item points at it. */
  dedup?: JobDedup;
  /** Enqueues of its type with the key while it waits unstarted fold into it (queue/enqueue/debounce.ts); a `DEBOUNCE#` item points at it. */
  debounce?: JobDebounce;
}

/** A job as stored: the source of truth for its status, data, attempts and history. */
export interface Job extends JobChoices {
  type: string;
  id: string;
  status: JobStatus;
  data: unknown;
  attempt: number;
  maxAttempts: number;
  deliveryStrategy: DeliveryStrategy;
  runAfterMs: number;
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
  /** Written by the write that ended the last attempt: a retried end recognises its own by it. */
  endToken?: string;
  worker?: WorkerIdentity;
  /** Present while the current claim holds concurrency slots. */
  heldSlots?: HeldSlots;
  /** The latest progress an attempt reported (a heartbeat's, or its handler's); kept once the attempt ends. */
  progress?: JobProgress;
  /** The last CHANGES_LIMIT changes made by `PATCH`, oldest first; absent until the first. */
  changes?: JobChangeRecord[];
  /** Every change ever made, those no longer kept included: the version a change is conditioned on. */
  changeCount?: number;
  /**
   * Who cancelled it: the id of the key that asked, or of the bulk operation that did. Set with
   * `cancelRequestedAtMs` when the cancel of a running job is asked, before the job ends cancelled.
   */
  cancelledBy?: string;
  /** Enqueues a debounced job took in after its own; absent: none. */
  debounceCount?: number;
  /**
   * When a cancel of the running attempt was asked: from then on the attempt can only end cancelled
   * (queue/attempt/cancel.ts). Absent on every job no one cancelled while it ran.
   */
  cancelRequestedAtMs?: number;
}

export const HISTORY_LIMIT = 25;
export const CHANGES_LIMIT = 25;
/** Priorities run from 0 to 1000, lower first. */
export const DEFAULT_PRIORITY = 100;
export const MAX_DATA_BYTES = 256 * 1024;
/** A result is kept on the job item beside data and history, all within DynamoDB's 400 KB item limit. */
export const MAX_RESULT_BYTES = 64 * 1024;
/** An attempt's error as its history entry keeps it, in UTF-8 bytes, so a full history's size is known whatever the script. */
export const MAX_ERROR_CLASS_BYTES = 128;
export const MAX_ERROR_MESSAGE_BYTES = 1_000;
export const MAX_TRACE_BYTES = 2_000;

/** `@` too: a schedule's jobs are `<schedule>@<fire time>`; a client may not enqueue such an id (reservedIdMessage), but may still name one. */
export const JOB_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,127}$/;
/**
 * Correlation keys travel as a path segment of `POST /v1/callbacks/{key}`, so
 * only characters that need no URL encoding and survive every proxy are allowed.
 */
export const CORRELATION_KEY_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.:@=~-]{0,255}$/;
/** A validated enqueue request, in the units the store uses. */
export interface JobInput extends JobChoices {
  data: unknown;
  /** Absent: due now. */
  runAfterMs?: number;
}

export function isTerminal(status: JobStatus): boolean {
  return TERMINAL_STATUSES.includes(status);
}

/** A batch holds at most this many jobs. */
export const MAX_BATCH_JOBS = 100;

export interface BatchJob {
  /** The job's place in the request, which its outcome carries back. */
  index: number;
  id: string;
  input: JobInput;
}

/** Jobs listed by status come in pages of at most MAX_PAGE_SIZE. */
export const MAX_PAGE_SIZE = 100;
export const DEFAULT_PAGE_SIZE = 50;
