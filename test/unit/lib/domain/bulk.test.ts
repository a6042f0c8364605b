/** Bulk operations free of storage: their ids, a new operation, which jobs one selects and where its listing may stop. */
import { describe, expect, test } from 'vitest';
import {
  OPERATION_ID_PATTERN,
  newOperation,
  operationIdOf,
  passedRange,
  replayIdOf,
  selects,
  type BulkOperation,
  type BulkRequest,
} from '../../../../lib/domain/bulk.js';
import type { Job } from '../../../../lib/domain/job.js';

function job(fields: Partial<Job>): Job {
  return {
    type: 't',
    id: 'j',
    status: 'failed',
    data: null,
    attempt: 1,
    maxAttempts: 1,
    deliveryStrategy: 'at_least_once',
    runAfterMs: 0,
    createdAtMs: 0,
    updatedAtMs: 0,
    history: [],
    historyDropped: 0,
    requestHash: '',
    priority: 100,
    weight: 1,
    ...fields,
  };
}

const RETRY: BulkRequest = { action: 'retry', status: 'failed' };
const CANCEL: BulkRequest = { action: 'cancel', status: 'queued' };

describe('ids', () => {
  test('an operation id is op_ and 32 hex digits, the same for the same type and request whatever the order of its fields', () => {
    const id = operationIdOf('t', { action: 'retry', status: 'failed', fromMs: 1, toMs: 2 });
    expect(id).toMatch(OPERATION_ID_PATTERN);
    expect(operationIdOf('t', { toMs: 2, fromMs: 1, status: 'failed', action: 'retry' })).toBe(id);
  });

  test('the same request on another type, or another request on the same type, is another operation', () => {
    const id = operationIdOf('t', RETRY);
    expect(operationIdOf('u', RETRY)).not.toBe(id);
    expect(operationIdOf('t', { ...RETRY, toMs: 5 })).not.toBe(id);
  });

  test("a replay's id is replay_ and 32 hex digits, fixed by the operation and the job", () => {
    const id = replayIdOf('op_1', 'job-1');
    expect(id).toMatch(/^replay_[0-9a-f]{32}$/);
    expect(replayIdOf('op_1', 'job-1')).toBe(id);
    expect(replayIdOf('op_1', 'job-2')).not.toBe(id);
    expect(replayIdOf('op_2', 'job-1')).not.toBe(id);
  });
});

describe('newOperation', () => {
  test('a new operation runs from zero pages and counts, started by the key that asked, now', () => {
    expect(newOperation('t', CANCEL, 'key-1', 5_000)).toStrictEqual({
      action: 'cancel',
      status: 'queued',
      id: operationIdOf('t', CANCEL),
      type: 't',
      by: 'key-1',
      state: 'running',
      createdAtMs: 5_000,
      updatedAtMs: 5_000,
      pages: 0,
      matched: 0,
      done: 0,
      skipped: 0,
      failed: 0,
    });
  });

  test('a retry without an end stops at the jobs finished by the time it starts', () => {
    expect(newOperation('t', RETRY, 'k', 5_000).toMs).toBe(5_000);
  });

  test('a retry keeps the end it was given', () => {
    expect(newOperation('t', { ...RETRY, toMs: 3_000 }, 'k', 5_000).toMs).toBe(3_000);
  });

  test('the id of a retry without an end is that of its request: the same request made later is the same operation', () => {
    expect(newOperation('t', RETRY, 'k', 5_000).id).toBe(newOperation('t', RETRY, 'k', 9_000).id);
  });
});

describe('selects', () => {
  test('a job in another status than the one asked for is not selected', () => {
    expect(selects(RETRY, job({ status: 'expired', finishedAtMs: 10 }))).toBe(false);
    expect(selects(RETRY, job({ status: 'failed', finishedAtMs: 10 }))).toBe(true);
  });

  test("a retry's bounds are inclusive, on the job's finish time", () => {
    const request = { ...RETRY, fromMs: 100, toMs: 200 };
    expect([99, 100, 200, 201].map((finishedAtMs) => selects(request, job({ finishedAtMs, runAfterMs: 150 })))).toEqual([false, true, true, false]);
  });

  test("a cancel's bounds are inclusive, on the job's ready time", () => {
    const request = { ...CANCEL, fromMs: 100, toMs: 200 };
    expect([99, 100, 200, 201].map((runAfterMs) => selects(request, job({ status: 'queued', runAfterMs, finishedAtMs: 150 })))).toEqual([
      false,
      true,
      true,
      false,
    ]);
  });

  test('a failed job without a finish time counts as finished at 0', () => {
    expect(selects({ ...RETRY, toMs: 0 }, job({}))).toBe(true);
    expect(selects({ ...RETRY, fromMs: 1 }, job({}))).toBe(false);
  });

  test('with a throttle key, only jobs of that key are selected', () => {
    const request = { ...CANCEL, throttleKey: 'east' };
    expect(selects(request, job({ status: 'queued', throttleKey: 'east' }))).toBe(true);
    expect(selects(request, job({ status: 'queued', throttleKey: 'west' }))).toBe(false);
    expect(selects(request, job({ status: 'queued' }))).toBe(false);
  });

  test('with a tag, only jobs holding that tag are selected', () => {
    const request = { ...CANCEL, tag: 'blue' };
    expect(selects(request, job({ status: 'queued', tags: ['red', 'blue'] }))).toBe(true);
    expect(selects(request, job({ status: 'queued', tags: ['red'] }))).toBe(false);
    expect(selects(request, job({ status: 'queued' }))).toBe(false);
  });
});

describe('passedRange', () => {
  const operation = (request: BulkRequest, createdAtMs = 0): BulkOperation => ({ ...newOperation('t', request, 'k', createdAtMs), ...request });

  test("a retry's listing, newest first, has passed its range at the first job finished before its start", () => {
    const retry = operation({ ...RETRY, fromMs: 100 });
    expect(passedRange(retry, job({ finishedAtMs: 99 }))).toBe(true);
    expect(passedRange(retry, job({ finishedAtMs: 100 }))).toBe(false);
  });

  test('a retry without a start reads its listing to the end', () => {
    expect(passedRange(operation(RETRY), job({ finishedAtMs: 0 }))).toBe(false);
  });

  test("a cancel of queued jobs has passed its range at the first job due after both its end and the operation's start", () => {
    const cancel = operation({ ...CANCEL, toMs: 200 }, 100);
    expect(passedRange(cancel, job({ status: 'queued', runAfterMs: 201 }))).toBe(true);
    expect(passedRange(cancel, job({ status: 'queued', runAfterMs: 200 }))).toBe(false);
  });

  test('a cancel that started after its end passes its range only after the start', () => {
    const cancel = operation({ ...CANCEL, toMs: 200 }, 500);
    expect(passedRange(cancel, job({ status: 'queued', runAfterMs: 500 }))).toBe(false);
    expect(passedRange(cancel, job({ status: 'queued', runAfterMs: 501 }))).toBe(true);
  });

  test('a cancel without an end reads its listing to the end', () => {
    expect(passedRange(operation(CANCEL), job({ status: 'queued', runAfterMs: 1e15 }))).toBe(false);
  });

  test('a cancel of started jobs reads its listing to the end: it is ordered by claim, not by ready time', () => {
    expect(passedRange(operation({ action: 'cancel', status: 'running', toMs: 200 }), job({ status: 'running', runAfterMs: 1e15 }))).toBe(false);
  });

  test("an operation on a tag reads the tag's entries to the end: they come by enqueue time", () => {
    expect(passedRange(operation({ ...RETRY, fromMs: 100, tag: 'blue' }), job({ finishedAtMs: 0 }))).toBe(false);
  });
});
