/** Byte sizes as DynamoDB and EventBridge count them, and the budget that keeps a job item under 400 KB. */
import { EventBridgeClient, PutEventsCommand } from '@aws-sdk/client-eventbridge';
import { jobTypeFromInput } from '../../../support/job-types.js';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, test } from 'vitest';
import { appendHistory, attemptRecordOf, boundedError, planNextState, type EndAttemptOptions } from '../../../../lib/domain/attempts.js';
import {
  MAX_DATA_BYTES,
  MAX_ERROR_CLASS_BYTES,
  MAX_ERROR_MESSAGE_BYTES,
  MAX_RESULT_BYTES,
  MAX_TRACE_BYTES,
  type AttemptRecord,
  type Job,
} from '../../../../lib/domain/job.js';
import { DYNAMODB_ITEM_LIMIT_BYTES, dynamoItemBytes, dynamoValueBytes, truncateUtf8, utf8Bytes } from '../../../../lib/domain/json-size.js';
import { historyRoomBytes, JOB_ITEM_BUDGET_BYTES } from '../../../../lib/store/job-writes.js';
import { PUT_EVENTS_MAX_BYTES } from '../../../../lib/aws/eventbridge.js';
import { runEventBridgeTarget } from '../../../../lib/targets/eventbridge.js';
import { jobTypeInputSchema } from '../../../../lib/wire/job-types.js';
import { parseWith } from '../../../../lib/wire/parse.js';
import { runningJob, T0 } from '../../../support/jobs.js';

describe('truncateUtf8', () => {
  test('leaves text that fits as it is', () => {
    expect(truncateUtf8('x'.repeat(10), 10)).toBe('x'.repeat(10));
  });

  test('cuts text in a wide script to its bytes, not its characters, ending in an ellipsis', () => {
    const cut = truncateUtf8('€'.repeat(1_000), 1_000);
    expect(utf8Bytes(cut)).toBeLessThanOrEqual(1_000);
    expect(cut).toMatch(/^€+…$/);
    expect(cut.length).toBeGreaterThan(300);
  });

  test('never splits a character made of a surrogate pair', () => {
    const cut = truncateUtf8('😀'.repeat(100), 10);
    expect(cut).toBe('😀…');
  });
});

describe('dynamoItemBytes', () => {
  test('counts each attribute’s name and value: strings in UTF-8, numbers by their digits, lists and maps with their overhead', () => {
    // "s" + "€x" (4), "n" + 12345 (3 digits' bytes + 1 = 4), "b" + true (1), "l" + [1, "ab"] (3 + 1+2 + 1+2),
    // "m" + {k: null} (3 + 1 + "k" + 1)
    expect(dynamoItemBytes({ s: '€x', n: 12_345, b: true, l: [1, 'ab'], m: { k: null } })).toBe(1 + 4 + 1 + 4 + 1 + 1 + 1 + 9 + 1 + 6);
  });

  test('counts nothing for an attribute left undefined, as the document client does not write it', () => {
    expect(dynamoItemBytes({ a: 'x', gone: undefined })).toBe(2);
  });
});

const record = (attempt: number, message = ''): AttemptRecord => ({
  attempt,
  claimedAtMs: T0,
  startedAtMs: T0,
  endedAtMs: T0,
  outcome: 'failed',
  error: { class: 'Error', message },
});

describe('appendHistory within bytes', () => {
  test('drops the oldest entries that do not fit, and counts them', () => {
    const history = [record(1, 'a'.repeat(500)), record(2, 'b'.repeat(500)), record(3, 'c'.repeat(500))];
    const newest = record(4, 'd'.repeat(500));
    const twoEntries = 3 + 2 * (1 + dynamoValueBytes(newest));
    const next = appendHistory({ history, historyDropped: 7 }, newest, twoEntries);
    expect(next.history.map((entry) => entry.attempt)).toEqual([3, 4]);
    expect(next.historyDropped).toBe(9);
  });

  test('keeps the newest entry even when it alone passes the bytes', () => {
    const next = appendHistory({ history: [record(1)], historyDropped: 0 }, record(2, 'x'.repeat(1_000)), 10);
    expect(next.history.map((entry) => entry.attempt)).toEqual([2]);
    expect(next.historyDropped).toBe(1);
  });
});

describe('boundedError', () => {
  test('cuts class, message and trace to their bytes', () => {
    const error = boundedError({ class: 'É'.repeat(200), message: '€'.repeat(5_000), trace: '€'.repeat(5_000) });
    expect(utf8Bytes(error.class)).toBeLessThanOrEqual(MAX_ERROR_CLASS_BYTES);
    expect(utf8Bytes(error.message)).toBeLessThanOrEqual(MAX_ERROR_MESSAGE_BYTES);
    expect(utf8Bytes(error.trace!)).toBeLessThanOrEqual(MAX_TRACE_BYTES);
  });
});

describe('the job item’s budget', () => {
  test('stays under DynamoDB’s item limit', () => {
    expect(JOB_ITEM_BUDGET_BYTES).toBeLessThan(DYNAMODB_ITEM_LIMIT_BYTES);
  });

  test('a job with every other field at its largest still has room for its newest history entry of the largest kind', () => {
    const wide = (chars: number) => '€'.repeat(chars);
    const job: Job = runningJob({
      type: 't'.repeat(64),
      id: 'i'.repeat(128),
      data: 'd'.repeat(MAX_DATA_BYTES - 2),
      maxAttempts: 100,
      attempt: 100,
      expiresAtMs: Number.MAX_SAFE_INTEGER,
      throttleKey: wide(128),
      correlationKey: 'c'.repeat(256),
      schedule: `${'s'.repeat(64)}@2026-11-21T10:00:00Z`,
      timeWindows: Array.from({ length: 24 }, () => ({ start: '00:00', end: '23:59', tz: 'z'.repeat(64) })),
      requestHash: 'h'.repeat(43),
      endToken: 'e'.repeat(36),
      changeCount: Number.MAX_SAFE_INTEGER,
      claimToken: 'k'.repeat(36),
      claimedAtMs: T0,
    });
    const options: EndAttemptOptions = {
      ending: { outcome: 'succeeded', result: 'r'.repeat(MAX_RESULT_BYTES - 2) },
      jobType: { retry: { kind: 'none' }, listSucceeded: true },
      customPolicies: {},
      worker: { id: 'w'.repeat(64), host: 'h'.repeat(255) },
    };
    const next = planNextState({ nowMs: () => T0, random: () => 0.5 }, job, options);
    const failure = { class: wide(MAX_ERROR_CLASS_BYTES), message: wide(MAX_ERROR_MESSAGE_BYTES), trace: wide(MAX_TRACE_BYTES) };
    const largestRecord = attemptRecordOf(job, { ...options, ending: { outcome: 'failed', failure: { error: failure, retryable: true } } }, 'failed', T0);
    const room = historyRoomBytes(job, { next, endedAtMs: T0, ending: options.ending });
    expect(room).toBeGreaterThanOrEqual(3 + 1 + dynamoValueBytes(largestRecord));
  });
});

describe('eventbridge target and the entry limit', () => {
  const eventBridge = mockClient(EventBridgeClient);
  beforeEach(() => eventBridge.reset());
  const target = { bus: 'orders', detailType: 'order.due', source: 'shop' };
  const jobType = jobTypeFromInput(
    'emails',
    parseWith(jobTypeInputSchema, { target: { kind: 'eventbridge', bus: 'orders', detail_type: 'order.due' } }),
    { createdAtMs: T0, updatedAtMs: T0 },
  );

  test('an event that PutEvents would refuse for size fails the attempt without retry, and is not sent', async () => {
    const run = {
      job: runningJob({ data: 'x'.repeat(PUT_EVENTS_MAX_BYTES) }),
      jobType,
      signal: new AbortController().signal,
      heartbeat: async () => undefined,
      progress: async () => undefined,
      nowMs: () => T0,
    };
    const outcome = await runEventBridgeTarget(run, target, new EventBridgeClient({}));
    expect(outcome).toMatchObject({ kind: 'failed', failure: { error: { class: 'EventTooLargeError' }, retryable: false } });
    expect(eventBridge.commandCalls(PutEventsCommand)).toHaveLength(0);
  });
});
