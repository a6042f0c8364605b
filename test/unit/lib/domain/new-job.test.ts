/** A new job, free of storage: its id, its throttle key, the job as first stored and what an enqueue may not ask (lib/domain/new-job.ts). */
import { describe, expect, test } from 'vitest';
import { PayloadTooLargeError, ValidationError } from '../../../../lib/domain/errors.js';
import type { JobType, Throttle } from '../../../../lib/domain/job-type.js';
import { MAX_DATA_BYTES, type JobInput } from '../../../../lib/domain/job.js';
import { newJob, newJobId, throttleKeyOf } from '../../../../lib/domain/new-job.js';
import { jobTypeWith, T0 } from '../../../support/jobs.js';

function jobType(fields: Partial<JobType> = {}): JobType {
  return jobTypeWith({ deliveryStrategy: 'at_most_once', attempts: 4, ...fields });
}

const INPUT: JobInput = { data: { to: 'a@example.com' }, priority: 100, weight: 1 };

function refusal(call: () => unknown): { field: string; message: string } | undefined {
  try {
    call();
  } catch (error) {
    if (error instanceof ValidationError) return error.details[0];
    throw error;
  }
  return undefined;
}

describe('newJobId', () => {
  test('an id is job_ and a lower-case ULID, and ids made later sort later', () => {
    const first = newJobId(T0);
    const later = newJobId(T0 + 1);
    expect(first).toMatch(/^job_[0-9a-hjkmnp-tv-z]{26}$/);
    expect([later, first].sort()).toEqual([first, later]);
  });
});

describe('throttleKeyOf', () => {
  const byField = (keyField: string): Pick<JobType, 'throttle'> => ({ throttle: { keyField, limits: {} } satisfies Throttle });

  test("a job's own throttle key wins over its type's key field", () => {
    expect(throttleKeyOf(byField('region'), { throttleKey: 'own', data: { region: 'east' } })).toBe('own');
  });

  test('without a key of its own, a job takes the string, number or boolean at its type\'s dotted key field', () => {
    expect(throttleKeyOf(byField('customer.region'), { data: { customer: { region: 'east' } } })).toBe('east');
    expect(throttleKeyOf(byField('shard'), { data: { shard: 7 } })).toBe('7');
    expect(throttleKeyOf(byField('vip'), { data: { vip: false } })).toBe('false');
  });

  test('a type without a key field, or without throttle, gives a job no key', () => {
    expect(throttleKeyOf({ throttle: { limits: {} } }, { data: { region: 'east' } })).toBeUndefined();
    expect(throttleKeyOf({ throttle: null }, { data: { region: 'east' } })).toBeUndefined();
  });

  test('a key field that leads to an object, an array, null or nothing gives no key', () => {
    expect(throttleKeyOf(byField('a'), { data: { a: { b: 1 } } })).toBeUndefined();
    expect(throttleKeyOf(byField('a.0'), { data: { a: ['x'] } })).toBeUndefined();
    expect(throttleKeyOf(byField('a.b'), { data: { a: null } })).toBeUndefined();
    expect(throttleKeyOf(byField('a.b'), { data: { a: 'text' } })).toBeUndefined();
    expect(throttleKeyOf(byField('missing'), { data: {} })).toBeUndefined();
  });

  test('a key field names only the data\'s own fields, never a member every object has', () => {
    expect(throttleKeyOf(byField('constructor.name'), { data: {} })).toBeUndefined();
  });

  test('a value of 1 to 128 characters is a key; an empty one, a longer one or one with an unpaired surrogate is none', () => {
    expect(throttleKeyOf(byField('k'), { data: { k: 'x' } })).toBe('x');
    expect(throttleKeyOf(byField('k'), { data: { k: 'y'.repeat(128) } })).toBe('y'.repeat(128));
    expect(throttleKeyOf(byField('k'), { data: { k: '' } })).toBeUndefined();
    expect(throttleKeyOf(byField('k'), { data: { k: 'z'.repeat(129) } })).toBeUndefined();
    expect(throttleKeyOf(byField('k'), { data: { k: 'a\uD800' } })).toBeUndefined();
  });
});

describe('newJob', () => {
  test('a new job is queued for its first attempt, due now, with its type\'s attempts and delivery', () => {
    expect(newJob(jobType(), 'job-1', INPUT, T0)).toStrictEqual({
      type: 'emails',
      id: 'job-1',
      status: 'queued',
      data: { to: 'a@example.com' },
      attempt: 0,
      maxAttempts: 4,
      deliveryStrategy: 'at_most_once',
      runAfterMs: T0,
      priority: 100,
      weight: 1,
      createdAtMs: T0,
      updatedAtMs: T0,
      history: [],
      historyDropped: 0,
      requestHash: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
    });
  });

  test('a job keeps the choices it was enqueued with', () => {
    const choices = {
      runAfterMs: T0 + 5_000,
      expiresAtMs: T0 + 60_000,
      throttleKey: 'east',
      timeWindows: [{ start: '00:00', end: '23:59', tz: 'UTC' }],
      correlationKey: 'order-1',
      schedule: 'nightly',
      traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
      tags: ['blue'],
    };
    expect(newJob(jobType(), 'job-1', { ...INPUT, ...choices }, T0)).toMatchObject({ ...choices, runAfterMs: T0 + 5_000 });
  });

  test('a deduplicated job keeps its dedup', () => {
    expect(newJob(jobType(), 'job-1', { ...INPUT, dedup: { key: 'd', windowS: 60 } }, T0).dedup).toStrictEqual({ key: 'd', windowS: 60 });
  });

  test('a debounced job is due its delay after the enqueue, and keeps its debounce', () => {
    const job = newJob(jobType(), 'job-1', { ...INPUT, debounce: { key: 'b', delayS: 10 } }, T0);
    expect(job.runAfterMs).toBe(T0 + 10_000);
    expect(job.debounce).toStrictEqual({ key: 'b', delayS: 10 });
  });

  test("a job without a throttle key of its own takes the one its type's key field finds", () => {
    expect(newJob(jobType({ throttle: { keyField: 'to', limits: {} } }), 'job-1', INPUT, T0).throttleKey).toBe('a@example.com');
  });

  test('the same body is the same request hash; another body, another hash', () => {
    const hash = newJob(jobType(), 'a', INPUT, T0).requestHash;
    expect(newJob(jobType(), 'b', { ...INPUT }, T0 + 1).requestHash).toBe(hash);
    for (const other of [
      { ...INPUT, data: { to: 'b@example.com' } },
      { ...INPUT, runAfterMs: T0 },
      { ...INPUT, expiresAtMs: T0 + 1 },
      { ...INPUT, priority: 1 },
      { ...INPUT, weight: 2 },
      { ...INPUT, throttleKey: 'k' },
      { ...INPUT, timeWindows: [{ start: '00:00', end: '23:59', tz: 'UTC' }] },
      { ...INPUT, correlationKey: 'c' },
      { ...INPUT, schedule: 's' },
      { ...INPUT, tags: ['t'] },
      { ...INPUT, dedup: { key: 'd', windowS: 1 } },
      { ...INPUT, debounce: { key: 'b', delayS: 1 } },
    ]) {
      expect(newJob(jobType(), 'c', other, T0).requestHash, JSON.stringify(other)).not.toBe(hash);
    }
  });

  test('another ready time or expiry is another request hash', () => {
    const at = (fields: Partial<JobInput>) => newJob(jobType(), 'j', { ...INPUT, ...fields }, T0).requestHash;
    expect(at({ runAfterMs: T0 + 1 })).not.toBe(at({ runAfterMs: T0 + 2 }));
    expect(at({ expiresAtMs: T0 + 1 })).not.toBe(at({ expiresAtMs: T0 + 2 }));
  });

  test("a job is due at the first instant inside its time windows", () => {
    const job = newJob(jobType({ timeWindows: [{ start: '12:00', end: '13:00', tz: 'UTC' }] }), 'job-1', INPUT, T0);
    expect(job.runAfterMs).toBe(Date.parse('2026-11-21T12:00:00.000Z'));
  });

  test('an expiry at or before the time windows first open is refused naming expires_at; one after passes', () => {
    const windowed = jobType({ timeWindows: [{ start: '12:00', end: '13:00', tz: 'UTC' }] });
    const opens = Date.parse('2026-11-21T12:00:00.000Z');
    expect(refusal(() => newJob(windowed, 'job-1', { ...INPUT, expiresAtMs: opens }, T0))).toStrictEqual({
      field: 'expires_at',
      message: "must be after 2026-11-21T12:00:00.000Z, when the job's time windows first let it run",
    });
    expect(refusal(() => newJob(windowed, 'job-1', { ...INPUT, expiresAtMs: opens + 1 }, T0))).toBeUndefined();
  });

  test('without time windows, an expiry is not checked against the ready time', () => {
    expect(refusal(() => newJob(jobType(), 'job-1', { ...INPUT, expiresAtMs: T0 }, T0))).toBeUndefined();
  });

  test("a weight above the type's concurrency is refused; one equal to it, or on an unlimited or paused type, passes", () => {
    expect(refusal(() => newJob(jobType({ concurrency: 2 }), 'j', { ...INPUT, weight: 3 }, T0))).toStrictEqual({
      field: 'weight',
      message: "must not exceed the type's concurrency (2)",
    });
    expect(refusal(() => newJob(jobType({ concurrency: 2 }), 'j', { ...INPUT, weight: 2 }, T0))).toBeUndefined();
    expect(refusal(() => newJob(jobType({ concurrency: null }), 'j', { ...INPUT, weight: 30 }, T0))).toBeUndefined();
    expect(refusal(() => newJob(jobType({ concurrency: 0 }), 'j', { ...INPUT, weight: 3 }, T0))).toBeUndefined();
  });

  test('data over its limit is too large, naming data', () => {
    expect(() => newJob(jobType(), 'j', { ...INPUT, data: 'x'.repeat(MAX_DATA_BYTES) }, T0)).toThrow(PayloadTooLargeError);
  });

  test('tags are checked, naming the whole list or the one tag at fault', () => {
    expect(refusal(() => newJob(jobType(), 'j', { ...INPUT, tags: ['ok', 'not ok'] }, T0))?.field).toBe('tags.1');
    expect(refusal(() => newJob(jobType(), 'j', { ...INPUT, tags: Array.from({ length: 11 }, (_, i) => `t${i}`) }, T0))?.field).toBe('tags');
  });

  test('dedup and debounce together are refused', () => {
    expect(refusal(() => newJob(jobType(), 'j', { ...INPUT, dedup: { key: 'd', windowS: 1 }, debounce: { key: 'b', delayS: 1 } }, T0))?.field).toBe('debounce');
  });
});
