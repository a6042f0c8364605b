import { expect, test } from 'vitest';
import { readQueueSettings } from '../../../../lib/queue/settings.js';
import { ConfigError } from '../../../../lib/domain/errors.js';

test('a missing TABLE_NAME is reported by name', () => {
  expect(() => readQueueSettings({})).toThrow(new ConfigError('TABLE_NAME environment variable is not set'));
});

test('a setting out of range names the variable and the value', () => {
  expect(() => readQueueSettings({ TABLE_NAME: 't', SHARDS: '0' })).toThrow(/SHARDS must be an integer from 1 to 256, got "0"/);
  expect(() => readQueueSettings({ TABLE_NAME: 't', POLL_INTERVAL_MS: 'fast' })).toThrow(/POLL_INTERVAL_MS/);
});

test('CLAIM_SHARDS is SHARDS unless set, and out of range names itself', () => {
  expect(readQueueSettings({ TABLE_NAME: 't', SHARDS: '8' }).claimShards).toBe(8);
  expect(readQueueSettings({ TABLE_NAME: 't', SHARDS: '8', CLAIM_SHARDS: '16' })).toMatchObject({ shards: 8, claimShards: 16 });
  expect(() => readQueueSettings({ TABLE_NAME: 't', CLAIM_SHARDS: '0' })).toThrow(/CLAIM_SHARDS must be an integer from 1 to 256, got "0"/);
  expect(() => readQueueSettings({ TABLE_NAME: 't', CLAIM_SHARDS: 'many' })).toThrow(/CLAIM_SHARDS must be an integer from 1 to 256, got "many"/);
});

test('defaults apply when settings are absent', () => {
  const settings = readQueueSettings({ TABLE_NAME: 'jobs' });
  expect(settings).toMatchObject({ bucketMs: 60_000, shards: 4, retentionDays: 30, pollIntervalMs: 500, cursorSafetyMarginMs: 60_000 });
});
