/**
 * The rules of an attempt's end, free of storage: where the job goes next, what
 * its history records, and the job as the end leaves it.
 */
import {
  HISTORY_LIMIT,
  MAX_ERROR_CLASS_BYTES,
  MAX_ERROR_MESSAGE_BYTES,
  MAX_TRACE_BYTES,
  type AttemptError,
  type AttemptOutcome,
  type AttemptRecord,
  type Job,
  type WorkerIdentity,
} from './job.js';
import type { JobType } from './job-type.js';
import { dynamoValueBytes, truncateUtf8 } from './json-size.js';
import { decideRetry, type AttemptFailure, type CustomRetryPolicies } from './retry.js';
import { earliestStartMs, effectiveWindows } from './windows.js';

/** The clock and randomness a decision depends on, injected so tests control them. */
export interface Clock {
  nowMs: () => number;
  random: () => number;
}

/** The claim a write must still hold: the token and attempt it was given. */
export type ClaimGuard = Pick<Job, 'type' | 'id' | 'attempt'> & { claimToken: string };

export function guardOf(job: Job): ClaimGuard {
  if (job.claimToken === undefined) throw new Error(`job ${job.type}/${job.id} holds no claim`);
  return { type: job.type, id: job.id, attempt: job.attempt, claimToken: job.claimToken };
}

/** How an attempt ended, as the worker, a callback or the sweeper saw it. */
export type AttemptEnding =
  | { outcome: 'succeeded'; result?: unknown }
  | { outcome: 'failed' | 'timed_out'; failure: AttemptFailure }
  | { outcome: 'expired' }
  /** `by`: the id of the key that asked, or of the bulk operation. */
  | { outcome: 'cancelled'; by?: string | undefined };

export interface EndAttemptOptions {
  ending: AttemptEnding;
  jobType: Pick<JobType, 'retry' | 'timeWindows' | 'listSucceeded'>;
  customPolicies: CustomRetryPolicies;
  startedAtMs?: number;
  worker?: WorkerIdentity;
  /** The sweeper ends only the claim it saw expire, not one a heartbeat has since extended. */
  expectedClaimedUntilMs?: number;
}

/** Where the job goes once an attempt ends: a terminal status, or queued again for a retry. */
export type NextState =
  | { status: 'succeeded' | 'failed' | 'expired'; outcome: AttemptOutcome }
  /** A cancel asked while the attempt ran: whatever the attempt came to, the job ends cancelled. */
  | { status: 'cancelled'; outcome: 'cancelled' }
  | { status: 'queued'; outcome: AttemptOutcome; runAfterMs: number };

export function planNextState(clock: Clock, job: Job, options: EndAttemptOptions): NextState {
  const { ending } = options;
  if (ending.outcome === 'succeeded') return { status: 'succeeded', outcome: 'succeeded' };
  if (ending.outcome === 'expired') return { status: 'expired', outcome: 'expired' };
  if (ending.outcome === 'cancelled') return { status: 'cancelled', outcome: 'cancelled' };
  const decision = decideRetry({
    policy: options.jobType.retry,
    job,
    failure: ending.failure,
    random: clock.random,
    customPolicies: options.customPolicies,
  });
  if (!decision.retry) return { status: 'failed', outcome: ending.outcome };
  const runAfterMs = earliestStartMs(effectiveWindows(job, options.jobType), clock.nowMs() + decision.delayMs);
  if (job.expiresAtMs !== undefined && runAfterMs >= job.expiresAtMs) return { status: 'expired', outcome: ending.outcome };
  return { status: 'queued', outcome: ending.outcome, runAfterMs };
}

/** The error as the job keeps it and its events carry it: class, message and trace each cut to their bytes. */
export function boundedError(error: AttemptError): AttemptError {
  return {
    class: truncateUtf8(error.class, MAX_ERROR_CLASS_BYTES),
    message: truncateUtf8(error.message, MAX_ERROR_MESSAGE_BYTES),
    ...(error.trace ? { trace: truncateUtf8(error.trace, MAX_TRACE_BYTES) } : {}),
  };
}

/** The ending with its failure's error bounded (boundedError); any other ending as it is. */
export function boundedEnding(ending: AttemptEnding): AttemptEnding {
  if (ending.outcome !== 'failed' && ending.outcome !== 'timed_out') return ending;
  return { ...ending, failure: { ...ending.failure, error: boundedError(ending.failure.error) } };
}

/** The history entry of the attempt that ends at `endedAtMs` with `outcome`. */
export function attemptRecordOf(
  job: Job,
  options: Pick<EndAttemptOptions, 'ending' | 'startedAtMs' | 'worker'>,
  outcome: AttemptOutcome,
  endedAtMs: number,
): AttemptRecord {
  const { ending } = options;
  const worker = options.worker ?? job.worker;
  return {
    attempt: job.attempt,
    claimedAtMs: job.claimedAtMs ?? endedAtMs,
    startedAtMs: options.startedAtMs ?? job.startedAtMs ?? null,
    endedAtMs,
    outcome,
    ...(ending.outcome === 'failed' || ending.outcome === 'timed_out' ? { error: boundedError(ending.failure.error) } : {}),
    ...(ending.outcome === 'cancelled' ? { error: cancelledError(ending.by) } : {}),
    ...(worker ? { worker } : {}),
  };
}

/** What the history of a cancelled attempt says of it: who cancelled it, where the error of a failed one would be. */
export function cancelledError(by: string | undefined): AttemptError {
  return { class: 'JobCancelledError', message: by === undefined ? 'the job was cancelled' : `cancelled by ${by}` };
}

/** What a DynamoDB list costs besides its elements. */
const LIST_BYTES = 3;

/**
 * The history with this attempt appended: the newest entries that fit in `maxBytes` (as DynamoDB counts the
 * list) and are among the last HISTORY_LIMIT, the older ones dropped and counted. The newest entry is kept
 * whatever its size: the item's budget leaves room for it (store/job-writes.ts).
 */
export function appendHistory(
  job: Pick<Job, 'history' | 'historyDropped'>,
  record: AttemptRecord,
  maxBytes: number,
): { history: AttemptRecord[]; historyDropped: number } {
  const all = [...job.history, record];
  let bytes = LIST_BYTES;
  let kept = 0;
  for (let index = all.length - 1; index >= 0 && kept < HISTORY_LIMIT; index--) {
    const entryBytes = 1 + dynamoValueBytes(all[index]);
    if (kept > 0 && bytes + entryBytes > maxBytes) break;
    bytes += entryBytes;
    kept++;
  }
  const dropped = all.length - kept;
  return { history: all.slice(dropped), historyDropped: job.historyDropped + dropped };
}

/** What ending an attempt writes: the next state, the history, and when. */
export interface AttemptEnd {
  next: NextState;
  endedAtMs: number;
  history: AttemptRecord[];
  historyDropped: number;
  ending: AttemptEnding;
}

/** The job as an attempt's end leaves it, built where the write returns no new image (a transaction). */
export function jobAfterEnd(job: Job, end: AttemptEnd): Job {
  const {
    claimToken: _claimToken,
    claimedAtMs: _claimedAtMs,
    claimedUntilMs: _claimedUntilMs,
    startedAtMs: _startedAtMs,
    startToken: _startToken,
    worker: _worker,
    heldSlots: _heldSlots,
    cancelRequestedAtMs: _cancelRequestedAtMs,
    ...unclaimed
  } = job;
  const { next } = end;
  const ended: Job = {
    ...unclaimed,
    status: next.status,
    updatedAtMs: end.endedAtMs,
    history: end.history,
    historyDropped: end.historyDropped,
  };
  if (next.status === 'queued') return { ...ended, runAfterMs: next.runAfterMs };
  const result = end.ending.outcome === 'succeeded' ? end.ending.result : undefined;
  const cancelledBy = end.ending.outcome === 'cancelled' ? (end.ending.by ?? job.cancelledBy) : undefined;
  return { ...ended, finishedAtMs: end.endedAtMs, ...(result !== undefined ? { result } : {}), ...(cancelledBy !== undefined ? { cancelledBy } : {}) };
}

/** What a worker's run of a claimed job came to. */
export type JobRunOutcome =
  | 'succeeded'
  | 'failed'
  | 'retrying'
  | 'awaiting_callback'
  | 'expired'
  /** It reached the worker outside its time windows: handed back, due when they next open, no attempt counted. */
  | 'rescheduled'
  /** The claim was taken back before the worker got to it; another attempt owns the job now. */
  | 'claim_lapsed'
  /** A job this claim already started (a duplicate delivery). */
  | 'already_started'
  /** A cancel was asked while it was claimed or ran: it ended cancelled (queue/attempt/cancel.ts). */
  | 'cancelled'
  /** The outcome could not be recorded: another worker, callback or sweep got there first. */
  | 'stale';

/** An attempt's outcome reported from outside the worker: a status callback. */
export interface CallbackInput {
  status: 'succeeded' | 'failed';
  /** Absent: the attempt that is open when the job is read (a correlation callback's caller may not know it). */
  attempt?: number;
  /** For a failure: false ends the job whatever attempts remain. @default true */
  retryable?: boolean;
  error?: Partial<AttemptError>;
  result?: unknown;
}
