import { expect, test } from 'vitest';
import { readQueueSettings } from '../../lib/queue/context.js';
import { ConfigError } from '../../lib/domain/errors.js';

test('a missing TABLE_NAME is reported by name', () => {
  expect(() => readQueueSettings({})).toThrow(new ConfigError('TABLE_NAME environment variable is not set'));
});

test('a setting out of range names the variable and the value', () => {
  expect(() => readQueueSettings({ TABLE_NAME: 't', SHARDS: '0' })).toThrow(/SHARDS must be an integer from 1 to 256, got "0"/);
  expect(() => readQueueSettings({ TABLE_NAME: 't', POLL_INTERVAL_MS: 'fast' })).toThrow(/POLL_INTERVAL_MS/);
});

test('defaults apply when settings are absent', () => {
  const settings = readQueueSettings({ TABLE_NAME: 'jobs' });
  expect(settings).toMatchObject({ bucketMs: 60_000, shards: 4, retentionDays: 30, pollIntervalMs: 500, cursorSafetyMarginMs: 60_000 });
});
