/**
 * Changing a job that waits (`PATCH /v1/jobs/{type}/{id}`), free of storage: the values it takes, checked
 * as an enqueue checks them, and the record of the change.
 */
import { ValidationError } from './errors.js';
import { CHANGES_LIMIT, type FieldChange, type Job, type JobChangeRecord } from './job.js';
import type { JobType } from './job-type.js';
import { earliestStartMs, effectiveWindows } from './windows.js';

/** A validated change: each field absent is left as it is; `expiresAtMs` null removes the expiry. */
export interface JobChangeInput {
  runAfter?: number | 'now';
  priority?: number;
  expiresAtMs?: number | null;
}

/** The values a change writes, and its record. */
export interface PlannedChange {
  runAfterMs: number;
  priority: number;
  expiresAtMs: number | undefined;
  record: JobChangeRecord;
}

function changed<T>(from: T, to: T): FieldChange<T> | undefined {
  return from === to ? undefined : { from, to };
}

/**
 * What `input` makes of the queued `job` at `nowMs`: a new run_after is moved to the first instant inside the
 * job's time windows, as at enqueue; `now` never moves a job that is already due later. Undefined when nothing
 * would change. An expiry at or before the resulting run_after is a ValidationError naming the field given.
 */
export function planJobChange(
  job: Job,
  jobType: Pick<JobType, 'timeWindows'>,
  input: JobChangeInput,
  by: string,
  nowMs: number,
): PlannedChange | undefined {
  let runAfterMs = job.runAfterMs;
  if (input.runAfter !== undefined) {
    const requestedMs = input.runAfter === 'now' ? Math.min(nowMs, job.runAfterMs) : input.runAfter;
    runAfterMs = earliestStartMs(effectiveWindows(job, jobType), requestedMs);
  }
  const priority = input.priority ?? job.priority;
  const expiresAtMs = input.expiresAtMs === undefined ? job.expiresAtMs : (input.expiresAtMs ?? undefined);
  if (expiresAtMs !== undefined && expiresAtMs <= runAfterMs) {
    const field = input.expiresAtMs !== undefined ? 'expires_at' : 'run_after';
    const message =
      field === 'expires_at'
        ? `must be after ${new Date(runAfterMs).toISOString()}, when the job would be due`
        : `would make the job due at ${new Date(runAfterMs).toISOString()}, not before its expires_at ${new Date(expiresAtMs).toISOString()}`;
    throw new ValidationError([{ field, message }]);
  }
  const runAfterChange = changed(job.runAfterMs, runAfterMs);
  const priorityChange = changed(job.priority, priority);
  const expiryChange = changed(job.expiresAtMs ?? null, expiresAtMs ?? null);
  if (!runAfterChange && !priorityChange && !expiryChange) return undefined;
  return {
    runAfterMs,
    priority,
    expiresAtMs,
    record: {
      atMs: nowMs,
      by,
      ...(runAfterChange ? { runAfterMs: runAfterChange } : {}),
      ...(priorityChange ? { priority: priorityChange } : {}),
      ...(expiryChange ? { expiresAtMs: expiryChange } : {}),
    },
  };
}

/** The kept changes with `record` appended, capped at the last CHANGES_LIMIT. */
export function appendChange(job: Pick<Job, 'changes'>, record: JobChangeRecord): JobChangeRecord[] {
  return [...(job.changes ?? []), record].slice(-CHANGES_LIMIT);
}
