/** Which rate a throttle key is held to, when a type's claims go through counters, and when an idle bucket may go. */
import { expect, test } from 'vitest';
import type { JobType, ThrottleLimit } from '../../../../lib/domain/job-type.js';
import { hasKeyRates, idleBucketPurgeAtS, throttleKeyRatePerS } from '../../../../lib/domain/rate.js';
import { hasSlotLimits, throttleKeyLimit } from '../../../../lib/domain/slots.js';

const typeWith = (limits: Record<string, ThrottleLimit>, concurrency: number | null = null): Pick<JobType, 'throttle' | 'concurrency'> => ({
  concurrency,
  throttle: { limits },
});

test('a key is held to its own rate, and a key not named to the rate of "*"', () => {
  const jobType = typeWith({ east: { ratePerS: 5 }, '*': { ratePerS: 1 } });
  expect(throttleKeyRatePerS(jobType, 'east')).toBe(5);
  expect(throttleKeyRatePerS(jobType, 'west')).toBe(1);
});

test('a named key without a rate has none, whatever "*" says: its entry replaces that of "*" whole', () => {
  const jobType = typeWith({ vip: { limit: 3 }, '*': { ratePerS: 1 } });
  expect(throttleKeyRatePerS(jobType, 'vip')).toBeUndefined();
  expect(throttleKeyLimit(jobType, 'vip')).toBe(3);
});

test.each(['constructor', 'toString', '__proto__', 'hasOwnProperty'])('a key named %j finds the rate of "*", never a member every object has', (key) => {
  expect(throttleKeyRatePerS(typeWith({ '*': { ratePerS: 2 } }), key)).toBe(2);
  expect(throttleKeyRatePerS(typeWith({ east: { ratePerS: 2 } }), key)).toBeUndefined();
});

test('a type whose keys have rates only keeps no in-flight counters; a limit or a share on any key does', () => {
  expect(hasSlotLimits(typeWith({ east: { ratePerS: 5 }, '*': { ratePerS: 1 } }))).toBe(false);
  expect(hasKeyRates(typeWith({ east: { ratePerS: 5 } }))).toBe(true);
  expect(hasSlotLimits(typeWith({ east: { ratePerS: 5 }, west: { limit: 2 } }))).toBe(true);
  expect(hasSlotLimits(typeWith({ east: { share: 0.5, ratePerS: 5 } }, 10))).toBe(true);
  expect(hasKeyRates(typeWith({ east: { limit: 2 } }))).toBe(false);
});

test('an idle bucket may be removed an hour after it would be full again', () => {
  const nowMs = 1_800_000_000_000;
  expect(idleBucketPurgeAtS(0, 2, nowMs)).toBe(Math.ceil((nowMs + 1_000 + 3_600_000) / 1000));
  expect(idleBucketPurgeAtS(2, 2, nowMs)).toBe(Math.ceil((nowMs + 3_600_000) / 1000));
});

test('a bucket of the slowest rate is removed within about a year, at a time DynamoDB can store', () => {
  const nowMs = 1_800_000_000_000;
  const purgeAtS = idleBucketPurgeAtS(0, 0.000_001, nowMs);
  expect(purgeAtS).toBeLessThanOrEqual(Math.ceil((nowMs + 367 * 86_400_000) / 1000));
  expect(Number.isSafeInteger(purgeAtS)).toBe(true);
});
