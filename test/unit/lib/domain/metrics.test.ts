/** The metrics history's maths: log-scaled lag buckets, merging histograms and nearest-rank percentiles. */
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { finishedOutcomeOf, finishedOutcomeOfStatus, LAG_BUCKET_COUNT, lagBucketOf, lagBucketValueMs, lagPercentileMs, mergeHistogramInto, type LagHistogram } from '../../../../lib/domain/metrics.js';

const histogramOf = (lagsMs: number[]): LagHistogram => {
  const histogram: LagHistogram = new Map();
  for (const lagMs of lagsMs) histogram.set(lagBucketOf(lagMs), (histogram.get(lagBucketOf(lagMs)) ?? 0) + 1);
  return histogram;
};

describe('lag buckets', () => {
  test('lags under 1 ms, negative ones and NaN fall in bucket 0, which stands for 0 ms', () => {
    for (const lagMs of [0, 0.5, -20, Number.NaN]) expect(lagBucketOf(lagMs)).toBe(0);
    expect(lagBucketValueMs(0)).toBe(0);
  });

  test('buckets are four per doubling: 1 ms is bucket 1, 2 ms bucket 5, 1024 ms bucket 41', () => {
    expect(lagBucketOf(1)).toBe(1);
    expect(lagBucketOf(2)).toBe(5);
    expect(lagBucketOf(1024)).toBe(41);
    expect(lagBucketOf(1023)).toBe(40);
  });

  test('a bucket stands for a value within 19 % of any lag it holds from 1 ms up', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 100_000_000 }), (lagMs) => {
        const value = lagBucketValueMs(lagBucketOf(lagMs));
        expect(Math.abs(value - lagMs) / lagMs).toBeLessThanOrEqual(0.19);
      }),
    );
  });

  test('bucket order is lag order', () => {
    fc.assert(
      fc.property(fc.double({ min: 0, max: 1e9, noNaN: true }), fc.double({ min: 0, max: 1e9, noNaN: true }), (a, b) => {
        if (a <= b) expect(lagBucketOf(a)).toBeLessThanOrEqual(lagBucketOf(b));
      }),
    );
  });

  test('lags beyond a day and a half share the last bucket', () => {
    expect(lagBucketOf(1e12)).toBe(LAG_BUCKET_COUNT - 1);
    expect(lagBucketOf(Infinity)).toBe(LAG_BUCKET_COUNT - 1);
  });
});

describe('percentiles', () => {
  test('an empty histogram has none', () => {
    expect(lagPercentileMs(new Map(), 0.5)).toBeNull();
  });

  test('p50 and p99 are the buckets of the nearest-rank samples', () => {
    // 98 fast claims and two slow ones: p50 is fast, p99 (the 99th of 100) is slow.
    const histogram = histogramOf([...Array.from({ length: 98 }, () => 10), 5_000, 5_000]);
    expect(lagPercentileMs(histogram, 0.5)).toBe(lagBucketValueMs(lagBucketOf(10)));
    expect(lagPercentileMs(histogram, 0.99)).toBe(lagBucketValueMs(lagBucketOf(5_000)));
  });

  test('one slow claim in a hundred does not move p99; two do', () => {
    const one = histogramOf([...Array.from({ length: 99 }, () => 10), 60_000]);
    expect(lagPercentileMs(one, 0.99)).toBe(lagBucketValueMs(lagBucketOf(10)));
    const two = histogramOf([...Array.from({ length: 98 }, () => 10), 60_000, 60_000]);
    expect(lagPercentileMs(two, 0.99)).toBe(lagBucketValueMs(lagBucketOf(60_000)));
  });

  test('a percentile of merged histograms is the percentile of all their samples together', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 1_000_000 }), { minLength: 1, maxLength: 50 }),
        fc.array(fc.integer({ min: 0, max: 1_000_000 }), { maxLength: 50 }),
        fc.constantFrom(0.5, 0.9, 0.99),
        (a, b, q) => {
          const merged = histogramOf(a);
          mergeHistogramInto(merged, histogramOf(b));
          const all = [...a, ...b].sort((x, y) => x - y);
          const exact = all[Math.max(1, Math.ceil(q * all.length)) - 1]!;
          expect(lagPercentileMs(merged, q)).toBe(lagBucketValueMs(lagBucketOf(exact)));
        },
      ),
    );
  });
});

describe('finished outcomes', () => {
  test('succeeded, failed and expired count as themselves, retrying as retried, the rest not at all', () => {
    expect(finishedOutcomeOf('succeeded')).toBe('succeeded');
    expect(finishedOutcomeOf('failed')).toBe('failed');
    expect(finishedOutcomeOf('expired')).toBe('expired');
    expect(finishedOutcomeOf('retrying')).toBe('retried');
    for (const outcome of ['awaiting_callback', 'rescheduled', 'claim_lapsed', 'already_started', 'stale'] as const) {
      expect(finishedOutcomeOf(outcome)).toBeUndefined();
    }
  });
});

describe('finished outcomes of a status callback', () => {
  test('a terminal status counts as itself, queued again as retried, the rest not at all', () => {
    expect(finishedOutcomeOfStatus('succeeded')).toBe('succeeded');
    expect(finishedOutcomeOfStatus('failed')).toBe('failed');
    expect(finishedOutcomeOfStatus('expired')).toBe('expired');
    expect(finishedOutcomeOfStatus('queued')).toBe('retried');
    for (const status of ['running', 'awaiting_callback', 'cancelled'] as const) expect(finishedOutcomeOfStatus(status)).toBeUndefined();
  });
});
