/** Jobs and job types built in memory, for unit tests of the pure parts of lib/. */
import type { Job } from '../../lib/domain/job.js';
import { DEFAULT_RETRY, type JobType } from '../../lib/domain/job-type.js';

export const T0 = Date.parse('2026-11-21T10:00:00.000Z');

export function runningJob(overrides: Partial<Job> = {}): Job {
  return {
    type: 'emails',
    id: 'job_1',
    status: 'running',
    data: { to: 'a@example.com' },
    attempt: 1,
    maxAttempts: 3,
    deliveryStrategy: 'at_least_once',
    runAfterMs: T0,
    priority: 100,
    weight: 1,
    createdAtMs: T0,
    updatedAtMs: T0,
    history: [],
    historyDropped: 0,
    requestHash: 'h',
    ...overrides,
  };
}

/** A job type as stored: at_least_once, 3 attempts, no limits, a handler target; `overrides` changes any of it. */
export function jobTypeWith(overrides: Partial<JobType> = {}): JobType {
  return {
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
    timeoutS: 30,
    retry: DEFAULT_RETRY,
    target: { kind: 'handler', name: 'h' },
    createdAtMs: 0,
    updatedAtMs: 0,
    ...overrides,
  };
}
