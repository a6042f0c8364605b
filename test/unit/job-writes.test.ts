/**
 * The job writes are pure builders: given the time, tokens and index keys, each
 * gives the same command input, so what a write does is read here without a table.
 */
import { describe, expect, test } from 'vitest';
import type { AttemptEnd } from '../../lib/domain/attempts.js';
import { claimParams, endAttemptParams, releaseClaimParams } from '../../lib/store/job-writes.js';
import { claimIndexKeys, queuedIndexKeys } from '../../lib/store/keys.js';

const layout = { bucketMs: 60_000, shards: 4 };
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
    const params = endAttemptParams(guard, { ...ended({ status: 'queued', outcome: 'failed', runAfterMs: 90_000 }), index, purgeAtS: 0 });
    expect(params.UpdateExpression).toContain('runAfterMs = :runAfter');
    expect(params.UpdateExpression).toContain('gsi1pk = :gsi1pk');
    expect(params.UpdateExpression).not.toContain('finishedAtMs');
  });

  test('a success that is not listed leaves the index, and keeps its result', () => {
    const params = endAttemptParams(guard, { ...ended({ status: 'succeeded', outcome: 'succeeded' }, { outcome: 'succeeded', result: { ok: 1 } }), index: undefined, purgeAtS: 9 });
    expect(params.UpdateExpression).toMatch(/REMOVE .*gsi1pk, gsi1sk/);
    expect(params.ExpressionAttributeValues).toMatchObject({ ':resultJson': '{"ok":1}', ':purgeAtS': 9 });
  });

  test('the sweeper ends only the claim it saw lapse', () => {
    const params = endAttemptParams(guard, { ...ended({ status: 'failed', outcome: 'timed_out' }), index, purgeAtS: 0, expectedClaimedUntilMs: 5 });
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
  test('a release hands the claim back unstarted only, under the claim guard', () => {
    const params = releaseClaimParams(guard, 0, 1_000, index);
    expect(params.ConditionExpression).toBe(
      'claimToken = :token AND attempt = :attempt AND #status IN (:running, :awaiting) AND attribute_not_exists(startedAtMs)',
    );
  });
});
