/** The end of an attempt, free of storage: where the job goes next, what its history records, the job it leaves (lib/domain/attempts.ts). */
import { describe, expect, test } from 'vitest';
import {
  attemptRecordOf,
  boundedEnding,
  cancelledError,
  guardOf,
  jobAfterEnd,
  planNextState,
  type AttemptEnding,
  type EndAttemptOptions,
} from '../../../../lib/domain/attempts.js';
import { MAX_ERROR_MESSAGE_BYTES } from '../../../../lib/domain/job.js';
import { utf8Bytes } from '../../../../lib/domain/json-size.js';
import { runningJob, T0 } from '../../../support/jobs.js';

const clock = { nowMs: () => T0, random: () => 0.5 };
const FIXED_10S = { kind: 'fixed', delayS: 10 } as const;
const failed = (retryable = true): AttemptEnding => ({ outcome: 'failed', failure: { error: { class: 'Error', message: 'boom' }, retryable } });

function options(ending: AttemptEnding, jobType: Partial<EndAttemptOptions['jobType']> = {}): EndAttemptOptions {
  return { ending, jobType: { retry: FIXED_10S, listSucceeded: false, ...jobType }, customPolicies: {} };
}

describe('guardOf', () => {
  test("a claimed job's guard is its type, id, attempt and claim token", () => {
    expect(guardOf(runningJob({ attempt: 2, claimToken: 'tok' }))).toStrictEqual({ type: 'emails', id: 'job_1', attempt: 2, claimToken: 'tok' });
  });

  test('a job without a claim has no guard', () => {
    expect(() => guardOf(runningJob())).toThrow('job emails/job_1 holds no claim');
  });
});

describe('planNextState', () => {
  test('a success, an expiry and a cancel end the job in that status', () => {
    const job = runningJob();
    expect(planNextState(clock, job, options({ outcome: 'succeeded' }))).toStrictEqual({ status: 'succeeded', outcome: 'succeeded' });
    expect(planNextState(clock, job, options({ outcome: 'expired' }))).toStrictEqual({ status: 'expired', outcome: 'expired' });
    expect(planNextState(clock, job, options({ outcome: 'cancelled' }))).toStrictEqual({ status: 'cancelled', outcome: 'cancelled' });
  });

  test("a retryable failure with attempts left is queued again after the policy's delay", () => {
    expect(planNextState(clock, runningJob(), options(failed()))).toStrictEqual({ status: 'queued', outcome: 'failed', runAfterMs: T0 + 10_000 });
  });

  test('a timeout is retried like a failure, and keeps its own outcome', () => {
    const ending: AttemptEnding = { outcome: 'timed_out', failure: { error: { class: 'TimeoutError', message: 'late' }, retryable: true } };
    expect(planNextState(clock, runningJob(), options(ending))).toStrictEqual({ status: 'queued', outcome: 'timed_out', runAfterMs: T0 + 10_000 });
  });

  test('a failure the policy does not retry ends the job failed', () => {
    expect(planNextState(clock, runningJob(), options(failed(false)))).toStrictEqual({ status: 'failed', outcome: 'failed' });
  });

  test('a retry that would start at or after the job expires ends it expired instead', () => {
    expect(planNextState(clock, runningJob({ expiresAtMs: T0 + 10_000 }), options(failed()))).toStrictEqual({ status: 'expired', outcome: 'failed' });
    expect(planNextState(clock, runningJob({ expiresAtMs: T0 + 10_001 }), options(failed())).status).toBe('queued');
  });

  test("a retry is due when the job's time windows next open after the delay", () => {
    // Windows of one hour a day, from 12:00 UTC: a retry due at 10:00:10 waits for 12:00.
    const next = planNextState(clock, runningJob(), options(failed(), { timeWindows: [{ start: '12:00', end: '13:00', tz: 'UTC' }] }));
    expect(next).toStrictEqual({ status: 'queued', outcome: 'failed', runAfterMs: Date.parse('2026-11-21T12:00:00.000Z') });
  });
});

describe('attemptRecordOf', () => {
  test('a succeeded attempt records when it was claimed, started and ended, and by which worker', () => {
    const job = runningJob({ attempt: 2, claimedAtMs: T0 + 1, startedAtMs: T0 + 2, worker: { id: 'w', host: 'h' } });
    expect(attemptRecordOf(job, { ending: { outcome: 'succeeded' } }, 'succeeded', T0 + 9)).toStrictEqual({
      attempt: 2,
      claimedAtMs: T0 + 1,
      startedAtMs: T0 + 2,
      endedAtMs: T0 + 9,
      outcome: 'succeeded',
      worker: { id: 'w', host: 'h' },
    });
  });

  test('the start and worker the ending reports replace those on the job', () => {
    const job = runningJob({ startedAtMs: T0 + 2, worker: { id: 'old', host: 'h' } });
    const record = attemptRecordOf(job, { ending: { outcome: 'succeeded' }, startedAtMs: T0 + 5, worker: { id: 'new', host: 'h' } }, 'succeeded', T0 + 9);
    expect(record).toMatchObject({ startedAtMs: T0 + 5, worker: { id: 'new', host: 'h' } });
  });

  test('an attempt that never started records a null start, its end as its claim when the claim is unknown, and no worker', () => {
    expect(attemptRecordOf(runningJob(), { ending: { outcome: 'expired' } }, 'expired', T0 + 9)).toStrictEqual({
      attempt: 1,
      claimedAtMs: T0 + 9,
      startedAtMs: null,
      endedAtMs: T0 + 9,
      outcome: 'expired',
    });
  });

  test('a failed or timed-out attempt records its error, cut to its bytes', () => {
    const long = 'x'.repeat(MAX_ERROR_MESSAGE_BYTES * 2);
    const ending: AttemptEnding = { outcome: 'timed_out', failure: { error: { class: 'TimeoutError', message: long }, retryable: true } };
    const record = attemptRecordOf(runningJob(), { ending }, 'timed_out', T0);
    expect(record.error?.class).toBe('TimeoutError');
    expect(utf8Bytes(record.error!.message)).toBeLessThanOrEqual(MAX_ERROR_MESSAGE_BYTES);
    expect(attemptRecordOf(runningJob(), { ending: failed() }, 'failed', T0).error).toStrictEqual({ class: 'Error', message: 'boom' });
  });

  test('a cancelled attempt records who cancelled it where the error would be', () => {
    expect(attemptRecordOf(runningJob(), { ending: { outcome: 'cancelled', by: 'key-1' } }, 'cancelled', T0).error).toStrictEqual({
      class: 'JobCancelledError',
      message: 'cancelled by key-1',
    });
  });
});

describe('cancelledError', () => {
  test('a cancel by no one known says only that the job was cancelled', () => {
    expect(cancelledError(undefined)).toStrictEqual({ class: 'JobCancelledError', message: 'the job was cancelled' });
  });
});

describe('boundedEnding', () => {
  test("a failure's error is cut to its bytes", () => {
    const ending: AttemptEnding = { outcome: 'failed', failure: { error: { class: 'E', message: 'x'.repeat(MAX_ERROR_MESSAGE_BYTES + 10) }, retryable: false } };
    const bounded = boundedEnding(ending);
    expect(bounded.outcome === 'failed' && utf8Bytes(bounded.failure.error.message)).toBeLessThanOrEqual(MAX_ERROR_MESSAGE_BYTES);
    expect(bounded.outcome === 'failed' && bounded.failure.retryable).toBe(false);
  });

  test("a timeout's error is cut too", () => {
    const ending: AttemptEnding = { outcome: 'timed_out', failure: { error: { class: 'E', message: 'x'.repeat(MAX_ERROR_MESSAGE_BYTES + 10) }, retryable: true } };
    const bounded = boundedEnding(ending);
    expect(bounded.outcome === 'timed_out' && utf8Bytes(bounded.failure.error.message)).toBeLessThanOrEqual(MAX_ERROR_MESSAGE_BYTES);
  });

  test('any other ending is returned as it is', () => {
    const ending: AttemptEnding = { outcome: 'succeeded', result: { ok: true } };
    expect(boundedEnding(ending)).toBe(ending);
  });
});

describe('jobAfterEnd', () => {
  const claimed = runningJob({
    claimToken: 'tok',
    claimedAtMs: T0,
    claimedUntilMs: T0 + 30_000,
    startedAtMs: T0,
    startToken: 's',
    worker: { id: 'w', host: 'h' },
    heldSlots: { weight: 1, type: true },
    cancelRequestedAtMs: T0,
  });
  const end = (next: Parameters<typeof jobAfterEnd>[1]['next'], ending: AttemptEnding) => ({
    next,
    endedAtMs: T0 + 5,
    history: [],
    historyDropped: 3,
    ending,
  });
  const CLAIM_FIELDS = ['claimToken', 'claimedAtMs', 'claimedUntilMs', 'startedAtMs', 'startToken', 'worker', 'heldSlots', 'cancelRequestedAtMs'];

  test('a job queued for a retry holds no claim, and is due when the retry is', () => {
    const job = jobAfterEnd(claimed, end({ status: 'queued', outcome: 'failed', runAfterMs: T0 + 10_000 }, failed()));
    expect(job).toMatchObject({ status: 'queued', runAfterMs: T0 + 10_000, updatedAtMs: T0 + 5, historyDropped: 3 });
    expect(Object.keys(job)).not.toContain('finishedAtMs');
    for (const field of CLAIM_FIELDS) expect(Object.keys(job)).not.toContain(field);
  });

  test('a succeeded job is finished when the attempt ended, and keeps its result', () => {
    const job = jobAfterEnd(claimed, end({ status: 'succeeded', outcome: 'succeeded' }, { outcome: 'succeeded', result: { sent: 1 } }));
    expect(job).toMatchObject({ status: 'succeeded', finishedAtMs: T0 + 5, result: { sent: 1 } });
    for (const field of CLAIM_FIELDS) expect(Object.keys(job)).not.toContain(field);
  });

  test('a job that ended without a result holds no result field', () => {
    const job = jobAfterEnd(claimed, end({ status: 'failed', outcome: 'failed' }, failed()));
    expect(job.status).toBe('failed');
    expect(Object.keys(job)).not.toContain('result');
    expect(Object.keys(job)).not.toContain('cancelledBy');
  });

  test('a cancelled job records who cancelled it: the ending says, or else the job already did', () => {
    const cancelled = { status: 'cancelled', outcome: 'cancelled' } as const;
    expect(jobAfterEnd(claimed, end(cancelled, { outcome: 'cancelled', by: 'key-1' })).cancelledBy).toBe('key-1');
    expect(jobAfterEnd({ ...claimed, cancelledBy: 'op_1' }, end(cancelled, { outcome: 'cancelled' })).cancelledBy).toBe('op_1');
    expect(Object.keys(jobAfterEnd(claimed, end(cancelled, { outcome: 'cancelled' })))).not.toContain('cancelledBy');
  });

  test("a job that ended otherwise than cancelled does not take the ending's cancel", () => {
    const job = jobAfterEnd({ ...claimed, cancelledBy: 'op_1' }, end({ status: 'succeeded', outcome: 'succeeded' }, { outcome: 'succeeded' }));
    expect(job.cancelledBy).toBe('op_1');
  });
});
