/** A running job built in memory, for unit tests of the pure parts of lib/. */
import type { Job } from '../../lib/domain/job.js';

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
