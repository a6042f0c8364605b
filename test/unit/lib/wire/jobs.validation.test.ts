import { describe, expect, test } from 'vitest';
import { detailsOf, fieldsOf } from '../../../support/validation.js';
import { jobTypeFromInput } from '../../../support/job-types.js';
import { MAX_WORKER_ATTEMPT_S } from '../../../../lib/domain/limits.js';
import { DEFAULT_RETRY } from '../../../../lib/domain/job-type.js';
import { jobInputFromBody, jobInputSchema, jobToApi } from '../../../../lib/wire/jobs.js';
import { jobTypeInputSchema } from '../../../../lib/wire/job-types.js';
import { parseWith } from '../../../../lib/wire/parse.js';
import type { Job } from '../../../../lib/domain/job.js';

const T0 = Date.parse('2026-11-21T10:00:00.000Z');
const TIMES = { createdAtMs: T0, updatedAtMs: T0 };
const TARGET = { kind: 'handler', name: 'echo' } as const;

describe('job type validation names the offending field', () => {
  test('an unknown field is named by itself', () => {
    const details = detailsOf(jobTypeInputSchema, { target: TARGET, colour: 'red' });
    expect(details).toEqual([{ field: 'colour', message: 'unknown field' }]);
  });

  test('each of several unknown fields is named, nested ones with their path', () => {
    const details = detailsOf(jobTypeInputSchema, {
      target: TARGET,
      colour: 'red',
      retry: { kind: 'fixed', delay_s: 1, delay_ms: 5 },
    });
    expect(fieldsOf(details).sort()).toEqual(['colour', 'retry.delay_ms']);
  });

  test('attempts out of range names attempts', () => {
    expect(fieldsOf(detailsOf(jobTypeInputSchema, { target: TARGET, attempts: 0 }))).toEqual(['attempts']);
    expect(fieldsOf(detailsOf(jobTypeInputSchema, { target: TARGET, attempts: 101 }))).toEqual(['attempts']);
    expect(fieldsOf(detailsOf(jobTypeInputSchema, { target: TARGET, attempts: 2.5 }))).toEqual(['attempts']);
  });

  test('at_most_once with attempts 3 names attempts', () => {
    const details = detailsOf(jobTypeInputSchema, { target: TARGET, delivery_strategy: 'at_most_once', attempts: 3 });
    expect(details).toEqual([{ field: 'attempts', message: 'must be 1 for at_most_once' }]);
  });

  test('a negative retry.delay_s names retry.delay_s', () => {
    const details = detailsOf(jobTypeInputSchema, { target: TARGET, retry: { kind: 'fixed', delay_s: -1 } });
    expect(fieldsOf(details)).toEqual(['retry.delay_s']);
  });

  test('a missing retry.delay_s names retry.delay_s; an unknown retry kind names retry.kind', () => {
    expect(fieldsOf(detailsOf(jobTypeInputSchema, { target: TARGET, retry: { kind: 'fixed' } }))).toEqual(['retry.delay_s']);
    expect(fieldsOf(detailsOf(jobTypeInputSchema, { target: TARGET, retry: { kind: 'sometimes' } }))).toEqual(['retry.kind']);
  });

  test('a body that is not an object is reported against body', () => {
    expect(fieldsOf(detailsOf(jobTypeInputSchema, 'not an object'))).toEqual(['body']);
  });

  test('a missing target names target', () => {
    expect(fieldsOf(detailsOf(jobTypeInputSchema, {}))).toEqual(['target']);
  });

  test('a timeout_s the worker function cannot run to the end names timeout_s for a lambda target', () => {
    const target = { kind: 'lambda', function: 'charge-card' };
    expect(jobTypeInputSchema.parse({ target, timeout_s: MAX_WORKER_ATTEMPT_S }).timeout_s).toBe(MAX_WORKER_ATTEMPT_S);
    expect(detailsOf(jobTypeInputSchema, { target, timeout_s: MAX_WORKER_ATTEMPT_S + 1 })).toEqual([
      { field: 'timeout_s', message: expect.stringContaining(`must be at most ${MAX_WORKER_ATTEMPT_S}`) },
    ]);
  });

  test.each([
    { kind: 'http', target: { kind: 'http', url: 'https://example.com/jobs' } },
    { kind: 'eventbridge', target: { kind: 'eventbridge', bus: 'default', detail_type: 'job.due' } },
    // The run itself is cut at MAX_WORKER_ATTEMPT_S by the worker; the rest is the wait for a callback.
    { kind: 'handler', target: TARGET },
  ])('a $kind target may have a timeout_s longer than the worker function runs: nothing waits for it there', ({ target }) => {
    expect(jobTypeInputSchema.parse({ target, timeout_s: 86_400 }).timeout_s).toBe(86_400);
  });

  test("an http target's request_timeout_s the worker function cannot wait out names target.request_timeout_s", () => {
    const target = (requestTimeoutS: number) => ({ kind: 'http', url: 'https://example.com/jobs', request_timeout_s: requestTimeoutS });
    expect(jobTypeInputSchema.parse({ target: target(MAX_WORKER_ATTEMPT_S) }).target).toMatchObject({ request_timeout_s: MAX_WORKER_ATTEMPT_S });
    expect(fieldsOf(detailsOf(jobTypeInputSchema, { target: target(MAX_WORKER_ATTEMPT_S + 1) }))).toEqual(['target.request_timeout_s']);
  });

  test('the error message lists each field with its problem', () => {
    try {
      parseWith(jobTypeInputSchema, { target: TARGET, attempts: 0 });
      expect.unreachable();
    } catch (error) {
      expect((error as Error).message).toMatch(/^attempts: /);
    }
  });
});

describe('job validation names the offending field', () => {
  test('run_after without an offset names run_after', () => {
    expect(fieldsOf(detailsOf(jobInputSchema, { run_after: '2026-11-21T10:00:00' }))).toEqual(['run_after']);
  });

  test('expires_at before run_after names expires_at', () => {
    const details = detailsOf(jobInputSchema, {
      run_after: '2026-11-21T10:00:00Z',
      expires_at: '2026-11-21T09:59:59Z',
    });
    expect(details).toEqual([{ field: 'expires_at', message: 'must be after run_after' }]);
  });

  test('expires_at equal to run_after names expires_at too: the job would have no moment to run', () => {
    const details = detailsOf(jobInputSchema, {
      run_after: '2026-11-21T10:00:00Z',
      expires_at: '2026-11-21T11:00:00+01:00',
    });
    expect(fieldsOf(details)).toEqual(['expires_at']);
  });

  test('an unknown field on a job is named', () => {
    expect(detailsOf(jobInputSchema, { data: {}, colour: 'red' })).toEqual([{ field: 'colour', message: 'unknown field' }]);
  });

  test('priority out of range names priority', () => {
    expect(fieldsOf(detailsOf(jobInputSchema, { priority: 1001 }))).toEqual(['priority']);
  });

  test('a throttle key with control characters names throttle_key', () => {
    expect(fieldsOf(detailsOf(jobInputSchema, { throttle_key: 'a\nb' }))).toEqual(['throttle_key']);
  });

  test('a throttle share without a concurrency names the share', () => {
    const body = { target: TARGET, throttle: { limits: { east: { share: 0.4 } } } };
    expect(fieldsOf(detailsOf(jobTypeInputSchema, body))).toEqual(['throttle.limits.east.share']);
  });

  test('a throttle limit that is neither a limit nor a share names the key', () => {
    const body = { target: TARGET, concurrency: 10, throttle: { limits: { east: { most: 3 } } } };
    expect(fieldsOf(detailsOf(jobTypeInputSchema, body))[0]).toMatch(/^throttle\.limits\.east/);
  });

  test('a share above 1 names the share', () => {
    const body = { target: TARGET, concurrency: 10, throttle: { limits: { east: { share: 1.5 } } } };
    expect(fieldsOf(detailsOf(jobTypeInputSchema, body))).toEqual(['throttle.limits.east.share']);
  });

  test('a rate limit of 0 names rate_limit_per_s', () => {
    expect(fieldsOf(detailsOf(jobTypeInputSchema, { target: TARGET, rate_limit_per_s: 0 }))).toEqual(['rate_limit_per_s']);
  });

  test('an unknown priority order names priority_order', () => {
    expect(fieldsOf(detailsOf(jobTypeInputSchema, { target: TARGET, priority_order: 'fifo' }))).toEqual(['priority_order']);
  });
});

describe('defaults', () => {
  test('a job type with only a target gets at_least_once, 3 attempts, the default retry, no limits and is not paused', () => {
    const jobType = jobTypeFromInput('emails', parseWith(jobTypeInputSchema, { target: TARGET }), TIMES);
    expect(jobType).toEqual({
      name: 'emails',
      deliveryStrategy: 'at_least_once',
      attempts: 3,
      concurrency: null,
      paused: false,
      rateLimitPerS: null,
      priorityOrder: 'time_first',
      throttle: null,
      listSucceeded: false,
      visibilityTimeoutS: 30,
      timeoutS: 60,
      retry: DEFAULT_RETRY,
      target: TARGET,
      ...TIMES,
    });
  });

  test('at_most_once without attempts gets exactly 1 attempt', () => {
    const input = parseWith(jobTypeInputSchema, { target: TARGET, delivery_strategy: 'at_most_once' });
    expect(jobTypeFromInput('charge', input, TIMES).attempts).toBe(1);
  });

  test('at_most_once with attempts 1 is accepted', () => {
    const input = parseWith(jobTypeInputSchema, { target: TARGET, delivery_strategy: 'at_most_once', attempts: 1 });
    expect(jobTypeFromInput('charge', input, TIMES).attempts).toBe(1);
  });

  test('exponential retry gets factor 2 and no jitter unless given; retry_on is kept', () => {
    const input = parseWith(jobTypeInputSchema, {
      target: TARGET,
      retry: { kind: 'exponential', base_s: 2, max_s: 60, retry_on: ['TimeoutError', 503] },
    });
    expect(jobTypeFromInput('t', input, TIMES).retry).toEqual({
      kind: 'exponential',
      baseS: 2,
      factor: 2,
      maxS: 60,
      jitter: 0,
      retryOn: ['TimeoutError', 503],
    });
  });

  test('a job body with nothing in it is due now with data null, priority 100, weight 1', () => {
    expect(jobInputFromBody(parseWith(jobInputSchema, {}))).toEqual({ data: null, priority: 100, weight: 1 });
  });

  test('run_after and expires_at with offsets become epoch milliseconds', () => {
    const input = jobInputFromBody(
      parseWith(jobInputSchema, { run_after: '2026-11-21T11:00:00+01:00', expires_at: '2026-11-21T10:30:00Z' }),
    );
    expect(input.runAfterMs).toBe(T0);
    expect(input.expiresAtMs).toBe(T0 + 30 * 60_000);
  });
});

describe('jobToApi', () => {
  const job: Job = {
    type: 'invoice-shipments',
    id: 'job_282227eb',
    status: 'failed',
    data: { shipmentId: 'shp_123' },
    attempt: 3,
    maxAttempts: 3,
    deliveryStrategy: 'at_least_once',
    runAfterMs: T0,
    priority: 100,
    weight: 1,
    createdAtMs: T0 - 60_000,
    updatedAtMs: T0 + 5_000,
    finishedAtMs: T0 + 5_000,
    history: [
      {
        attempt: 3,
        claimedAtMs: T0,
        startedAtMs: T0 + 1_000,
        endedAtMs: T0 + 5_000,
        outcome: 'failed',
        error: { class: 'TimeoutError', message: 'too slow', trace: 'at x' },
        worker: { id: 'w-1', host: 'host-a' },
      },
      { attempt: 2, claimedAtMs: T0, startedAtMs: null, endedAtMs: T0 + 30_000, outcome: 'timed_out' },
    ],
    historyDropped: 0,
    requestHash: 'secret-hash',
    claimToken: 'secret-token',
  };

  test('has every key of the job docs/reference/http-api.md shows, in snake_case', () => {
    const api = jobToApi(job);
    expect(Object.keys(api)).toEqual(
      expect.arrayContaining([
        'id',
        'type',
        'status',
        'data',
        'attempt',
        'max_attempts',
        'run_after',
        'expires_at',
        'priority',
        'weight',
        'throttle_key',
        'correlation_key',
        'created_at',
        'updated_at',
        'finished_at',
        'result',
        'history',
      ]),
    );
    for (const key of Object.keys(api)) expect(key).toMatch(/^[a-z_]+$/);
  });

  test('maps values: ISO times, null for absent ones, the data as given', () => {
    expect(jobToApi(job)).toMatchObject({
      id: 'job_282227eb',
      type: 'invoice-shipments',
      status: 'failed',
      data: { shipmentId: 'shp_123' },
      attempt: 3,
      max_attempts: 3,
      run_after: '2026-11-21T10:00:00.000Z',
      expires_at: null,
      priority: 100,
      weight: 1,
      throttle_key: null,
      correlation_key: null,
      created_at: '2026-11-21T09:59:00.000Z',
      updated_at: '2026-11-21T10:00:05.000Z',
      finished_at: '2026-11-21T10:00:05.000Z',
      result: null,
    });
  });

  test('each history entry has attempt, claimed_at, started_at, ended_at, outcome, error and worker', () => {
    const history = jobToApi(job).history as Record<string, unknown>[];
    expect(history).toEqual([
      {
        attempt: 3,
        claimed_at: '2026-11-21T10:00:00.000Z',
        started_at: '2026-11-21T10:00:01.000Z',
        ended_at: '2026-11-21T10:00:05.000Z',
        outcome: 'failed',
        error: { class: 'TimeoutError', message: 'too slow', trace: 'at x' },
        worker: { id: 'w-1', host: 'host-a' },
      },
      {
        attempt: 2,
        claimed_at: '2026-11-21T10:00:00.000Z',
        started_at: null,
        ended_at: '2026-11-21T10:00:30.000Z',
        outcome: 'timed_out',
        error: null,
        worker: null,
      },
    ]);
  });

  test('does not expose the claim token or the request hash', () => {
    const text = JSON.stringify(jobToApi(job));
    expect(text).not.toContain('secret-token');
    expect(text).not.toContain('secret-hash');
  });

  test('a succeeded job returns its result', () => {
    expect(jobToApi({ ...job, status: 'succeeded', result: { ok: true } }).result).toEqual({ ok: true });
  });
});
