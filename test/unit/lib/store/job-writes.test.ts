/**
 * The job writes are pure builders: given the time, tokens and index keys, each
 * gives the same command input, so what a write does is read here without a table.
 */
import { describe, expect, test } from 'vitest';
import type { AttemptEnd } from '../../../../lib/domain/attempts.js';
import { claimParams, endAttemptParams, releaseClaimParams, requestCancelParams } from '../../../../lib/store/job-writes.js';
import { claimIndexKeys, queuedIndexKeys } from '../../../../lib/store/keys.js';
import { changeQueuedJobParams } from '../../../../lib/store/job-change-writes.js';

const layout = { bucketMs: 60_000, shards: 4, claimShards: 4 };
const ref = { type: 'email', id: 'j1' };
const guard = { ...ref, attempt: 1, claimToken: 'token-1' };
const index = { gsi1pk: 'Q#email#1#0', gsi1sk: '000000000060000#j1' };

function ended(next: AttemptEnd['next'], ending: AttemptEnd['ending'] = { outcome: 'succeeded' }): AttemptEnd {
  return { next, endedAtMs: 120_000, history: [], historyDropped: 0, ending };
}

describe('claimParams', () => {
  test('claims only a queued job that is due, has attempts left and has not expired, at the time it is given', () => {
    const params = claimParams(ref, { claimToken: 't', nowMs: 1_000, claimedUntilMs: 31_000, index });
    expect(params.ConditionExpression).toBe(
      '#status = :queued AND runAfterMs <= :now AND attempt < maxAttempts AND (attribute_not_exists(expiresAtMs) OR expiresAtMs > :now)',
    );
    expect(params.ExpressionAttributeValues).toMatchObject({ ':now': 1_000, ':until': 31_000, ':token': 't', ':gsi1pk': index.gsi1pk });
  });

  test('records the slots a claim takes, and removes those of an earlier claim when it takes none', () => {
    const slots = { weight: 2, type: true };
    expect(claimParams(ref, { claimToken: 't', nowMs: 0, claimedUntilMs: 1, index, slots }).UpdateExpression).toContain('heldSlots = :slots');
    expect(claimParams(ref, { claimToken: 't', nowMs: 0, claimedUntilMs: 1, index }).UpdateExpression).toMatch(/REMOVE .*heldSlots/);
  });
});

describe('endAttemptParams', () => {
  test('a retry moves the job back into its lane at its new ready time', () => {
    const params = endAttemptParams(guard, { ...ended({ status: 'queued', outcome: 'failed', runAfterMs: 90_000 }), index, purgeAtS: 0, endToken: 'e' });
    expect(params.UpdateExpression).toContain('runAfterMs = :runAfter');
    expect(params.UpdateExpression).toContain('gsi1pk = :gsi1pk');
    expect(params.UpdateExpression).not.toContain('finishedAtMs');
  });

  test('a success that is not listed leaves the index, and keeps its result', () => {
    const params = endAttemptParams(guard, { ...ended({ status: 'succeeded', outcome: 'succeeded' }, { outcome: 'succeeded', result: { ok: 1 } }), index: undefined, purgeAtS: 9, endToken: 'e' });
    expect(params.UpdateExpression).toMatch(/REMOVE .*gsi1pk, gsi1sk/);
    expect(params.ExpressionAttributeValues).toMatchObject({ ':resultJson': '{"ok":1}', ':purgeAtS': 9 });
  });

  test('an end writes its own token, so a retried end tells its own write from another end of the attempt', () => {
    const params = endAttemptParams(guard, { ...ended({ status: 'failed', outcome: 'failed' }), index, purgeAtS: 0, endToken: 'mine' });
    expect(params.UpdateExpression).toContain('endToken = :endToken');
    expect(params.ExpressionAttributeValues).toMatchObject({ ':endToken': 'mine' });
  });

  test('the sweeper ends only the claim it saw lapse', () => {
    const params = endAttemptParams(guard, { ...ended({ status: 'failed', outcome: 'timed_out' }), index, purgeAtS: 0, expectedClaimedUntilMs: 5, endToken: 'e' });
    expect(params.ConditionExpression).toContain('claimedUntilMs = :seenUntil');
    expect(params.ExpressionAttributeValues).toMatchObject({ ':seenUntil': 5 });
  });
});

describe('index keys', () => {
  test('a job due in the past lands in the current bucket, never behind the cursor', () => {
    expect(queuedIndexKeys(layout, ref, 0, 600_000).gsi1pk).toMatch(/^Q#email#10#\d$/);
  });

  test('a claim sits in the bucket of its deadline', () => {
    expect(claimIndexKeys(layout, ref, 125_000).gsi1pk).toMatch(/^C#2#\d$/);
  });
});

describe('releaseClaimParams', () => {
  test('a release hands the claim back unstarted only, under the claim guard, and never once a cancel was asked', () => {
    const params = releaseClaimParams(guard, 0, 1_000, index);
    expect(params.ConditionExpression).toBe(
      'claimToken = :token AND attempt = :attempt AND #status IN (:running, :awaiting) AND attribute_not_exists(startedAtMs) AND attribute_not_exists(cancelRequestedAtMs)',
    );
  });
});

describe('a cancel of a running job', () => {
  test('is asked only of the running attempt the guard names, once', () => {
    const params = requestCancelParams(guard, 5_000, 'key-1');
    expect(params.ConditionExpression).toBe('claimToken = :token AND attempt = :attempt AND #status = :running AND attribute_not_exists(cancelRequestedAtMs)');
    expect(params.UpdateExpression).toBe('SET cancelRequestedAtMs = :now, updatedAtMs = :now, cancelledBy = :by');
  });

  test('leaves any other end of the attempt unwritable: it must end cancelled', () => {
    const success = endAttemptParams(guard, { ...ended({ status: 'succeeded', outcome: 'succeeded' }), index: undefined, purgeAtS: 0, endToken: 'e' });
    expect(success.ConditionExpression).toContain('attribute_not_exists(cancelRequestedAtMs)');
    const cancelled = endAttemptParams(guard, {
      ...ended({ status: 'cancelled', outcome: 'cancelled' }, { outcome: 'cancelled', by: 'key-1' }),
      index,
      purgeAtS: 0,
      endToken: 'e',
    });
    expect(cancelled.ConditionExpression).not.toContain('cancelRequestedAtMs');
    expect(cancelled.UpdateExpression).toContain('cancelledBy = :by');
    expect(cancelled.UpdateExpression).toMatch(/REMOVE .*cancelRequestedAtMs/);
  });
});

describe('changeQueuedJobParams', () => {
  const write = { nowMs: 5_000, runAfterMs: 1_000, priority: 5, expiresAtMs: undefined, changes: [] };

  test('writes only over the job as read: queued, at its attempt, index entry and change version', () => {
    const first = changeQueuedJobParams({ job: { ...ref, attempt: 0 }, index }, { ...write, index: undefined });
    expect(first.ConditionExpression).toBe('#status = :queued AND attempt = :attempt AND gsi1pk = :seenPk AND gsi1sk = :seenSk AND attribute_not_exists(changeCount)');
    const later = changeQueuedJobParams({ job: { ...ref, attempt: 0, changeCount: 3 }, index }, { ...write, index: undefined });
    expect(later.ConditionExpression).toContain('changeCount = :seenCount');
    expect(later.ExpressionAttributeValues).toMatchObject({ ':seenCount': 3, ':count': 4, ':seenPk': index.gsi1pk, ':seenSk': index.gsi1sk });
  });

  test('moves the index entry in the same write only when the ready time changes', () => {
    const moved = queuedIndexKeys(layout, ref, 1_000, 5_000);
    const params = changeQueuedJobParams({ job: { ...ref, attempt: 0 }, index }, { ...write, index: moved });
    expect(params.UpdateExpression).toContain('gsi1pk = :gsi1pk, gsi1sk = :gsi1sk');
    expect(params.ExpressionAttributeValues).toMatchObject({ ':gsi1pk': moved.gsi1pk, ':gsi1sk': moved.gsi1sk });
    expect(changeQueuedJobParams({ job: { ...ref, attempt: 0 }, index }, { ...write, index: undefined }).UpdateExpression).not.toContain('gsi1pk');
  });

  test('sets an expiry given, and removes it when none is left', () => {
    const params = (expiresAtMs: number | undefined) => changeQueuedJobParams({ job: { ...ref, attempt: 0 }, index }, { ...write, expiresAtMs, index: undefined });
    expect(params(9_000).UpdateExpression).toContain('expiresAtMs = :expiresAt');
    expect(params(undefined).UpdateExpression).toMatch(/REMOVE expiresAtMs$/);
  });
});
