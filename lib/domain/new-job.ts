/**
 * A new job, free of storage: its server-assigned id, its throttle key, the
 * hash that makes a repeated enqueue the same job, and the job as first stored.
 */
import { createHash } from 'node:crypto';
import stringify from 'safe-stable-stringify';
import { monotonicFactory } from 'ulid';
import { assertDedupDebounceFits } from './dedup-debounce.js';
import { ValidationError } from './errors.js';
import { assertJsonSize, isWellFormedText } from './json-size.js';
import { MAX_DATA_BYTES, type Job, type JobInput } from './job.js';
import type { JobType } from './job-type.js';
import { ownEntry } from './own.js';
import { tagsProblem } from './tags.js';
import { earliestStartMs, effectiveWindows } from './windows.js';

const ulid = monotonicFactory();

/** A server-assigned id: time-ordered, so ids sort by creation. */
export function newJobId(nowMs: number): string {
  return `job_${ulid(nowMs).toLowerCase()}`;
}

/** Hash of the normalised enqueue body: the same body again is the same job. */
function requestHashOf(input: JobInput): string {
  const normalised = stringify({
    data: input.data,
    runAfterMs: input.runAfterMs ?? null,
    expiresAtMs: input.expiresAtMs ?? null,
    priority: input.priority,
    weight: input.weight,
    ...(input.throttleKey !== undefined ? { throttleKey: input.throttleKey } : {}),
    // Only when given, so the hashes of jobs stored before windows existed still match their bodies.
    ...(input.timeWindows ? { timeWindows: input.timeWindows } : {}),
    // Only when given, so the hashes of jobs stored before correlation keys existed stay the same.
    ...(input.correlationKey !== undefined ? { correlationKey: input.correlationKey } : {}),
    ...(input.schedule !== undefined ? { schedule: input.schedule } : {}),
    // Only when given, so the hashes of jobs without tags stay the same.
    ...(input.tags !== undefined ? { tags: input.tags } : {}),
    ...(input.dedup !== undefined ? { dedup: input.dedup } : {}),
    ...(input.debounce !== undefined ? { debounce: input.debounce } : {}),
  });
  return createHash('sha256').update(normalised ?? '').digest('base64url');
}

/**
 * The throttle key a job runs under: its own, or the value at the type's `key_field` in its data when that is
 * a string, number or boolean. A job without one counts only against the type's concurrency.
 */
export function throttleKeyOf(jobType: Pick<JobType, 'throttle'>, input: Pick<JobInput, 'throttleKey' | 'data'>): string | undefined {
  if (input.throttleKey !== undefined) return input.throttleKey;
  const keyField = jobType.throttle?.keyField;
  if (keyField === undefined) return undefined;
  let value: unknown = input.data;
  for (const name of keyField.split('.')) {
    value = typeof value === 'object' && value !== null && !Array.isArray(value) ? ownEntry(value as Record<string, unknown>, name) : undefined;
  }
  if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean') return undefined;
  const key = String(value);
  // Keys index counters in the table: a value no producer could give as throttle_key (too long, or an unpaired surrogate) is no key.
  return key.length >= 1 && key.length <= 128 && isWellFormedText(key) ? key : undefined;
}

/** Tags are validated on the wire; these reach here from schedules, replays and lib callers too, and become keys. */
function assertTags(tags: readonly string[] | undefined): void {
  const problem = tags === undefined ? undefined : tagsProblem(tags);
  if (problem) throw new ValidationError([{ field: problem.index === undefined ? 'tags' : `tags.${problem.index}`, message: problem.message }]);
}

/** A weight above the type's concurrency could never be claimed. */
function assertWeightFits(jobType: Pick<JobType, 'concurrency'>, weight: number): void {
  if (jobType.concurrency !== null && jobType.concurrency > 0 && weight > jobType.concurrency) {
    throw new ValidationError([{ field: 'weight', message: `must not exceed the type's concurrency (${jobType.concurrency})` }]);
  }
}

/**
 * The job as an enqueue of `input` stores it at `nowMs`. It is due at the first instant inside its time windows
 * at or after the requested `run_after` (or now); bad input is a ValidationError or PayloadTooLargeError.
 */
export function newJob(jobType: JobType, id: string, input: JobInput, nowMs: number): Job {
  assertJsonSize('data', input.data, MAX_DATA_BYTES);
  assertWeightFits(jobType, input.weight);
  assertDedupDebounceFits(input);
  const windows = effectiveWindows(input, jobType);
  // A debounced job waits its delay for more enqueues to fold into it (wire/jobs.ts refuses run_after beside it).
  const requestedMs = input.debounce ? nowMs + input.debounce.delayS * 1000 : (input.runAfterMs ?? nowMs);
  const runAfterMs = earliestStartMs(windows, requestedMs);
  if (windows && input.expiresAtMs !== undefined && input.expiresAtMs <= runAfterMs) {
    const opensAt = new Date(runAfterMs).toISOString();
    throw new ValidationError([{ field: 'expires_at', message: `must be after ${opensAt}, when the job's time windows first let it run` }]);
  }
  const throttleKey = throttleKeyOf(jobType, input);
  assertTags(input.tags);
  return {
    type: jobType.name,
    id,
    status: 'queued',
    data: input.data,
    attempt: 0,
    maxAttempts: jobType.attempts,
    deliveryStrategy: jobType.deliveryStrategy,
    runAfterMs,
    ...(input.expiresAtMs !== undefined ? { expiresAtMs: input.expiresAtMs } : {}),
    priority: input.priority,
    weight: input.weight,
    ...(throttleKey !== undefined ? { throttleKey } : {}),
    ...(input.timeWindows ? { timeWindows: input.timeWindows } : {}),
    ...(input.correlationKey !== undefined ? { correlationKey: input.correlationKey } : {}),
    ...(input.schedule !== undefined ? { schedule: input.schedule } : {}),
    ...(input.traceparent !== undefined ? { traceparent: input.traceparent } : {}),
    ...(input.tags !== undefined ? { tags: input.tags } : {}),
    ...(input.dedup !== undefined ? { dedup: input.dedup } : {}),
    ...(input.debounce !== undefined ? { debounce: input.debounce } : {}),
    createdAtMs: nowMs,
    updatedAtMs: nowMs,
    history: [],
    historyDropped: 0,
    requestHash: requestHashOf(input),
  };
}
