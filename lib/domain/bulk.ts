/**
 * Bulk operations on one job type's jobs, free of storage: what a request selects, the operation's id (the same
 * request is the same operation), the id a retry gives each job's replay, and the state it runs through.
 */
import { createHash } from 'node:crypto';
import stringify from 'safe-stable-stringify';
import type { Job, JobStatus } from './job.js';

export const BULK_ACTIONS = ['retry', 'cancel'] as const;
export type BulkAction = (typeof BULK_ACTIONS)[number];

/**
 * The statuses each action may select: a retry replays finished jobs that did not succeed, a cancel stops waiting
 * ones, and started ones when it includes running jobs (RUNNING_STATUSES).
 */
export const BULK_STATUSES = { retry: ['failed', 'expired'], cancel: ['queued', 'running', 'awaiting_callback'] } as const satisfies Record<BulkAction, readonly JobStatus[]>;

/** The statuses a cancel selects only when asked to include running jobs (`includeRunning`). */
export const RUNNING_STATUSES: readonly JobStatus[] = ['running', 'awaiting_callback'];

/**
 * A page whose write failed for some job (DynamoDB still failing after the SDK's retries) is run again by a later
 * round, up to this many runs in all, before those jobs are counted failed and the operation goes on without them.
 */
export const MAX_PAGE_RUNS = 3;

/** Jobs one page acts on: small enough that a page ends well within a sweep and its ids fit on the operation's item. */
export const BULK_PAGE_SIZE = 25;

export interface BulkRequest {
  action: BulkAction;
  status: JobStatus;
  /** Inclusive bounds on the job's finish time (retry) or ready time (cancel). */
  fromMs?: number;
  toMs?: number;
  throttleKey?: string;
  /** Only jobs with this tag: the operation walks the tag's entries, not the status's listing. */
  tag?: string;
  /**
   * A cancel only: jobs that have started are cancelled too (running ones asked to stop, ones awaiting their
   * callback ended), whether selected by a started status or started since they were listed. Present only when true.
   */
  includeRunning?: true;
}

export const OPERATION_STATES = ['running', 'succeeded', 'failed'] as const;
export type OperationState = (typeof OPERATION_STATES)[number];

/** A page whose jobs were chosen but whose outcome is not yet counted: a runner that finds one finishes it first. */
export interface PendingPage {
  ids: string[];
  /**
   * A retry's replays are due from this time on, one every `replaySpacingMs` in the order of `ids`: recorded with
   * the page so that whichever runner acts on it enqueues the same replays.
   */
  replaysFromMs?: number;
  replaySpacingMs?: number;
  /** Where the listing goes on after this page; absent: this is the last page. */
  nextCursor?: string;
  /** Runs of the page that could not act on every job; absent before the first such run. */
  failedRuns?: number;
}

export interface BulkOperation extends BulkRequest {
  id: string;
  type: string;
  /** Who started it: the API key's id. */
  by: string;
  state: OperationState;
  createdAtMs: number;
  updatedAtMs: number;
  finishedAtMs?: number;
  /** Pages counted so far: the version each page's write is conditioned on. */
  pages: number;
  /** Where the listing goes on; absent before the first page. */
  cursor?: string;
  pending?: PendingPage;
  /** Jobs selected; each is then done, skipped (no longer in the status when acted on) or failed. */
  matched: number;
  done: number;
  skipped: number;
  failed: number;
}

export const OPERATION_ID_PATTERN = /^op_[0-9a-f]{32}$/;

const sha256Hex = (text: string): string => createHash('sha256').update(text).digest('hex');

/** The same type and request, dates compared as instants, is the same operation. */
export function operationIdOf(type: string, request: BulkRequest): string {
  return `op_${sha256Hex(stringify({ type, ...request }) ?? '').slice(0, 32)}`;
}

/**
 * A retried job's replay has an id fixed by the operation and the job, so replaying it again (a page re-run after a
 * crash, two runners on one page, the same operation started again) finds the replay there rather than making a second.
 */
export function replayIdOf(operationId: string, jobId: string): string {
  return `replay_${sha256Hex(`${operationId}/${jobId}`).slice(0, 32)}`;
}

/** A new operation; a retry without `to` stops at the jobs finished by now, so replays that fail again are not retried by it. */
export function newOperation(type: string, request: BulkRequest, by: string, nowMs: number): BulkOperation {
  const toMs = request.toMs ?? (request.action === 'retry' ? nowMs : undefined);
  return {
    ...request,
    ...(toMs !== undefined ? { toMs } : {}),
    id: operationIdOf(type, request),
    type,
    by,
    state: 'running',
    createdAtMs: nowMs,
    updatedAtMs: nowMs,
    pages: 0,
    matched: 0,
    done: 0,
    skipped: 0,
    failed: 0,
  };
}

/** The time a job is selected by: when it finished (retry) or when it is due (cancel). */
const selectionTimeMs = (operation: BulkRequest, job: Job): number => (operation.action === 'retry' ? (job.finishedAtMs ?? 0) : job.runAfterMs);

/** Whether a listed job is one the operation acts on. */
export function selects(operation: BulkRequest, job: Job): boolean {
  const atMs = selectionTimeMs(operation, job);
  return (
    job.status === operation.status &&
    (operation.fromMs === undefined || atMs >= operation.fromMs) &&
    (operation.toMs === undefined || atMs <= operation.toMs) &&
    (operation.throttleKey === undefined || job.throttleKey === operation.throttleKey) &&
    (operation.tag === undefined || job.tags?.includes(operation.tag) === true)
  );
}

/**
 * Whether the listing has passed every job the operation may select. Finished jobs are listed newest first: once
 * one finished before `from`, every later one did too. Queued jobs are listed by bucket, then ready time, and a job
 * sits in the bucket of its ready time or, when that had passed, of its enqueue (or last move): once one is due
 * after both `to` and the operation's start, any later one due by `to` was enqueued after the operation started,
 * which it leaves alone, as a retry leaves the jobs that fail after it started.
 */
export function passedRange(operation: BulkOperation, job: Job): boolean {
  // A tag's entries come by enqueue time, which bounds neither a finish nor a ready time.
  if (operation.tag !== undefined) return false;
  const atMs = selectionTimeMs(operation, job);
  if (operation.action === 'retry') return operation.fromMs !== undefined && atMs < operation.fromMs;
  // Started jobs are listed by when their claim runs out, not by when they were due: the listing goes to its end.
  if (operation.status !== 'queued') return false;
  return operation.toMs !== undefined && atMs > Math.max(operation.toMs, operation.createdAtMs);
}
