/** The pure parts of the scheduling controls: claim order, slot planning and the token bucket's arithmetic. */
import { describe, expect, test } from 'vitest';
import type { DueEntry } from '../../../../lib/store/due-index.js';
import { padEpochMs } from '../../../../lib/store/keys.js';
import { orderDueEntries } from '../../../../lib/queue/poll/poll.js';
import { availableTokens } from '../../../../lib/domain/rate.js';
import { slotsFor, throttleKeyLimit } from '../../../../lib/domain/slots.js';

function entry(id: string, readyAtMs: number, priority: number, weight = 1): DueEntry {
  return { pk: `JOB#t#${id}`, sk: 'JOB', gsi1pk: 'Q#t#0#0', gsi1sk: `${padEpochMs(readyAtMs)}#${id}`, priority, weight };
}

describe('orderDueEntries', () => {
  const entries = [entry('late-urgent', 2_000, 0), entry('early-lax', 1_000, 500), entry('early-urgent', 1_000, 1)];

  test('time_first: ready time, then priority', () => {
    expect(orderDueEntries(entries, 'time_first').map((e) => e.pk)).toEqual(['JOB#t#early-urgent', 'JOB#t#early-lax', 'JOB#t#late-urgent']);
  });

  test('priority_first: priority, then ready time', () => {
    expect(orderDueEntries(entries, 'priority_first').map((e) => e.pk)).toEqual(['JOB#t#late-urgent', 'JOB#t#early-urgent', 'JOB#t#early-lax']);
  });

  test('critical jobs (weight 0) come first whatever the order', () => {
    const withCritical = [...entries, entry('critical', 9_000, 1000, 0)];
    expect(orderDueEntries(withCritical, 'time_first')[0]?.pk).toBe('JOB#t#critical');
  });

  test('an entry indexed before priority was projected counts as the default priority', () => {
    const { priority: _priority, ...unprojected } = entry('old', 1_000, 0);
    const ordered = orderDueEntries([entry('lax', 1_000, 101), unprojected, entry('urgent', 1_000, 99)], 'time_first');
    expect(ordered.map((e) => e.pk)).toEqual(['JOB#t#urgent', 'JOB#t#old', 'JOB#t#lax']);
  });
});

describe('throttle limits', () => {
  const jobType = {
    concurrency: 10,
    throttle: { limits: { east: { share: 0.4 }, north: { limit: 2 }, tiny: { share: 0.01 }, '*': { limit: 1 } } },
  };

  test('a share is that part of the concurrency, rounded down', () => {
    expect(throttleKeyLimit(jobType, 'east')).toBe(4);
  });

  test('a share always gets at least one slot', () => {
    expect(throttleKeyLimit(jobType, 'tiny')).toBe(1);
  });

  test('a key not named takes the * limit', () => {
    expect(throttleKeyLimit(jobType, 'south')).toBe(1);
  });

  test('without a * entry, a key not named is not limited', () => {
    expect(throttleKeyLimit({ concurrency: null, throttle: { limits: { east: { limit: 1 } } } }, 'west')).toBeUndefined();
  });

  test('a job takes the type and key slots that apply to it', () => {
    expect(slotsFor(jobType, { weight: 2, throttleKey: 'east' })).toEqual({ weight: 2, type: true, key: 'east' });
  });

  test('a critical job (weight 0) takes no slots', () => {
    expect(slotsFor(jobType, { weight: 0, throttleKey: 'east' })).toBeUndefined();
  });

  test('a job of an unlimited type without a limited key takes no slots', () => {
    expect(slotsFor({ concurrency: null, throttle: null }, { weight: 3 })).toBeUndefined();
  });
});

describe('availableTokens', () => {
  test('a bucket never written is full: one second of the rate', () => {
    expect(availableTokens(undefined, 20, 0)).toBe(20);
  });

  test('a bucket refills at the rate and never past one second of it', () => {
    expect(availableTokens({ tokens: 0, refilledAtMs: 1_000 }, 20, 1_250)).toBe(5);
    expect(availableTokens({ tokens: 0, refilledAtMs: 1_000 }, 20, 9_000)).toBe(20);
  });

  test('a rate below one a second still holds one whole token', () => {
    expect(availableTokens({ tokens: 0, refilledAtMs: 0 }, 0.5, 10_000)).toBe(1);
  });

  test('a refill stamped by a clock ahead of this one adds nothing', () => {
    expect(availableTokens({ tokens: 2, refilledAtMs: 5_000 }, 20, 3_000)).toBe(2);
  });
});
