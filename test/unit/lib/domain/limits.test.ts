/** The longest one DynamoDB call may take, every try and backoff included (lib/domain/limits.ts). */
import { expect, test } from 'vitest';
import { maxDynamoCallMs } from '../../../../lib/domain/limits.js';

const limits = (maxAttempts: number, connectionTimeout: number, requestTimeout: number) => ({
  maxAttempts,
  requestHandler: { connectionTimeout, requestTimeout, throwOnRequestTimeout: true as const },
});

test('one try takes at most its connection and request timeouts, with no backoff', () => {
  expect(maxDynamoCallMs(limits(1, 2_000, 5_000))).toBe(7_000);
});

test('each retry adds a try and the backoff before it, doubling from 1 s', () => {
  // 5 tries of 7 s, and backoffs of 1, 2, 4 and 8 s before the four retries.
  expect(maxDynamoCallMs(limits(5, 2_000, 5_000))).toBe(5 * 7_000 + 1_000 + 2_000 + 4_000 + 8_000);
});

test('a backoff never exceeds the SDK’s 20 s', () => {
  // Backoffs of 1, 2, 4, 8, 16, then 20 s (not 32).
  expect(maxDynamoCallMs(limits(7, 0, 0))).toBe(1_000 + 2_000 + 4_000 + 8_000 + 16_000 + 20_000);
});
