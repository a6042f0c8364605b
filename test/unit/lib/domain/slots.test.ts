/** Concurrency slots: which counters a job's claim takes, and when its weight can never fit (lib/domain/slots.ts). */
import { expect, test } from 'vitest';
import type { JobType, Throttle } from '../../../../lib/domain/job-type.js';
import { jobTypeWith } from '../../../support/jobs.js';
import { hasSlotLimits, limitTooSmall, olderInFlight, slotsFor, throttleEntry } from '../../../../lib/domain/slots.js';

function jobType(concurrency: number | null, throttle: Throttle | null = null): JobType {
  return jobTypeWith({ name: 't', attempts: 1, concurrency, throttle });
}

test('a type without throttle holds no key to any entry', () => {
  expect(throttleEntry(jobType(5), 'east')).toBeUndefined();
});

test('a job whose key is limited by a rate only takes the type slot, and no key slot', () => {
  const slots = slotsFor(jobType(5, { limits: { east: { ratePerS: 2 } } }), { weight: 1, throttleKey: 'east' });
  expect(slots).toStrictEqual({ weight: 1, type: true });
});

test('a job without a key takes the type slot and names no key', () => {
  expect(slotsFor(jobType(5, { limits: { '*': { limit: 1 } } }), { weight: 1 })).toStrictEqual({ weight: 1, type: true });
});

test('a job of an unlimited type with a limited key takes the key slot only', () => {
  expect(slotsFor(jobType(null, { limits: { east: { limit: 2 } } }), { weight: 1, throttleKey: 'east' })).toStrictEqual({
    weight: 1,
    type: false,
    key: 'east',
  });
});

test('a type with a concurrency limit and no throttle goes through the counters', () => {
  expect(hasSlotLimits(jobType(5))).toBe(true);
});

test('an unlimited type without throttle keeps no counters', () => {
  expect(hasSlotLimits(jobType(null))).toBe(false);
});

test('an unlimited type whose key has a share of the concurrency keeps counters', () => {
  expect(hasSlotLimits(jobType(null, { limits: { east: { share: 0.5 } } }))).toBe(true);
});

test('a job heavier than its type concurrency can never be claimed: the type is too small', () => {
  expect(limitTooSmall(jobType(3), { weight: 4, type: true })).toBe('type');
});

test('a job exactly as heavy as its type concurrency fits', () => {
  expect(limitTooSmall(jobType(3), { weight: 3, type: true })).toBeUndefined();
});

test('a job that takes no type slot is not held to the type concurrency', () => {
  expect(limitTooSmall(jobType(3, { limits: { east: { limit: 10 } } }), { weight: 4, type: false, key: 'east' })).toBeUndefined();
});

test('a job heavier than its key limit can never be claimed: the key is too small', () => {
  expect(limitTooSmall(jobType(10, { limits: { east: { limit: 2 } } }), { weight: 3, type: true, key: 'east' })).toBe('key');
});

test('a job exactly as heavy as its key limit fits', () => {
  expect(limitTooSmall(jobType(10, { limits: { east: { limit: 2 } } }), { weight: 2, type: true, key: 'east' })).toBeUndefined();
});

test('the weight held for earlier epochs is the counter less what the current epoch reserved', () => {
  expect(olderInFlight({ inFlight: 7, epoch: 2, epochAtMs: 1_000, epochInFlight: 3, settledEpoch: 1 })).toBe(4);
});
