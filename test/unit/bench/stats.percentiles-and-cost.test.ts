import { describe, expect, test } from 'vitest';
import { dollarsPerMillionJobs, lambdaDollarsPerMonth, perHour, readDollarsPerMonth } from '../../../bench/cost.js';
import { median, percentile, summariseLag } from '../../../bench/stats.js';
import { scannedBuckets } from '../../../bench/workloads.js';

describe('percentile', () => {
  const hundred = Array.from({ length: 100 }, (_, i) => i + 1);

  test('is the nearest-rank value', () => {
    expect(percentile(hundred, 50)).toBe(50);
    expect(percentile(hundred, 99)).toBe(99);
    expect(percentile([10, 20, 30], 50)).toBe(20);
  });

  test('of 100 is the largest value and of 0 the smallest', () => {
    expect(percentile(hundred, 100)).toBe(100);
    expect(percentile(hundred, 0)).toBe(1);
  });

  test('of no samples is undefined', () => {
    expect(percentile([], 99)).toBeUndefined();
  });
});

test('summariseLag sorts the samples before taking percentiles', () => {
  expect(summariseLag([300, 100, 200])).toEqual({ p50: 200, p95: 300, p99: 300, max: 300 });
});

describe('median', () => {
  test('is the middle value of an odd count and the mean of the middle two of an even count', () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 3, 2])).toBe(2.5);
  });

  test('ignores missing values', () => {
    expect(median([undefined, 5, undefined])).toBe(5);
    expect(median([undefined])).toBeUndefined();
  });
});

describe('cost', () => {
  test('prices units per job as units per million jobs at the on-demand list price', () => {
    const cost = dollarsPerMillionJobs({ writeUnits: 7, readUnits: 1, workerInvocations: 0.1 });
    expect(cost.writes).toBeCloseTo(4.375);
    expect(cost.reads).toBeCloseTo(0.125);
    expect(cost.lambdaRequests).toBeCloseTo(0.02);
    expect(cost.total).toBeCloseTo(4.52);
  });

  test('perHour scales units measured over an interval to an hour', () => {
    expect(perHour(10, 10_000)).toBe(3_600);
    expect(() => perHour(1, 0)).toThrow(RangeError);
  });

  test('readDollarsPerMonth prices a steady read rate over the 730 hours AWS bills a month by', () => {
    expect(readDollarsPerMonth(1_000_000 / 730)).toBeCloseTo(0.125);
  });

  test('lambdaDollarsPerMonth prices a steady duration at the arm64 rate the stack deploys its functions on', () => {
    expect(lambdaDollarsPerMonth(1_000_000 / 730)).toBeCloseTo(13.3334);
  });
});

describe('scannedBuckets', () => {
  test('is two when the safety margin equals the bucket width: the previous bucket is never settled before the current one ends', () => {
    expect(scannedBuckets({ bucketMs: 60_000, cursorSafetyMarginMs: 60_000 })).toBe(2);
  });

  test('is one without a safety margin and grows with it', () => {
    expect(scannedBuckets({ bucketMs: 60_000, cursorSafetyMarginMs: 0 })).toBe(1);
    expect(scannedBuckets({ bucketMs: 60_000, cursorSafetyMarginMs: 90_000 })).toBe(3);
  });
});
