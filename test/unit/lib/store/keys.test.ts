import { describe, expect, test } from 'vitest';
import { directoryKey } from '../../../../lib/store/keys.js';
import { apiKeyKey, bucketOf, bucketStartMs, claimSortKey, correlationItemKey, cursorKey, dueUpToSortKey, jobKey, jobTypeKey, lanePartition, metricsKey, padEpochMs, PARTITION_PREFIX, parseClaimSortKey, parseJobPk, queuedSortKey, rosterKey, shardOf, type ItemKey, type PartitionFamily } from '../../../../lib/store/keys.js';
import { rateBucketKey } from '../../../../lib/store/keys.js';
import { keyCounterKey, typeCounterKey } from '../../../../lib/store/keys.js';

const BUCKET_MS = 60_000;
const T0 = Date.parse('2026-11-21T10:00:00.000Z');

describe('buckets', () => {
  test('a bucket covers [start, start + bucketMs): its first and last millisecond share it, the next ms does not', () => {
    const bucket = bucketOf(T0, BUCKET_MS);
    expect(bucketOf(T0 + BUCKET_MS - 1, BUCKET_MS)).toBe(bucket);
    expect(bucketOf(T0 + BUCKET_MS, BUCKET_MS)).toBe(bucket + 1);
    expect(bucketOf(T0 - 1, BUCKET_MS)).toBe(bucket - 1);
  });

  test('bucketStartMs is the first millisecond of the bucket that holds a time', () => {
    for (const t of [0, 1, T0, T0 + 12_345, T0 + BUCKET_MS - 1, 1_799_999_999_999]) {
      const start = bucketStartMs(bucketOf(t, BUCKET_MS), BUCKET_MS);
      expect(start).toBeLessThanOrEqual(t);
      expect(t).toBeLessThan(start + BUCKET_MS);
      expect(start % BUCKET_MS).toBe(0);
    }
  });

  test('bucketOf is floor division, so epoch 0 is bucket 0', () => {
    expect(bucketOf(0, BUCKET_MS)).toBe(0);
    expect(bucketOf(59_999, BUCKET_MS)).toBe(0);
    expect(bucketOf(60_000, BUCKET_MS)).toBe(1);
  });
});

describe('shardOf', () => {
  test('is stable: the same id always lands in the same shard', () => {
    for (const id of ['a', 'job_01', 'shp_123', 'x'.repeat(128)]) {
      expect(shardOf(id, 16)).toBe(shardOf(id, 16));
    }
  });

  test('is always an integer in [0, shards)', () => {
    for (const shards of [1, 2, 4, 7, 256]) {
      for (let i = 0; i < 500; i++) {
        const shard = shardOf(`job-${i}`, shards);
        expect(Number.isInteger(shard)).toBe(true);
        expect(shard).toBeGreaterThanOrEqual(0);
        expect(shard).toBeLessThan(shards);
      }
    }
  });

  test('spreads ids over every shard', () => {
    const counts = new Array<number>(8).fill(0);
    for (let i = 0; i < 2_000; i++) counts[shardOf(`job-${i}`, 8)]! += 1;
    // 250 expected per shard; a usable hash stays well inside this band.
    for (const count of counts) {
      expect(count).toBeGreaterThan(150);
      expect(count).toBeLessThan(350);
    }
  });
});

describe('padEpochMs', () => {
  test('string order equals numeric order', () => {
    const times = [0, 1, 9, 10, 99, 100, 59_999, 60_000, 1e12, T0, T0 + 1, 9.99e14, 999_999_999_999_999];
    const numeric = [...times].sort((a, b) => a - b);
    // Plain string sort (code-unit order), which is what DynamoDB does with sort keys.
    const byString = [...times].reverse().map(padEpochMs).sort();
    expect(byString).toEqual(numeric.map(padEpochMs));
    expect(byString.map(Number)).toEqual(numeric);
  });

  test('pads to a fixed width and drops fractions', () => {
    expect(padEpochMs(T0)).toHaveLength(15);
    expect(padEpochMs(0)).toBe('000000000000000');
    expect(padEpochMs(1.9)).toBe('000000000000001');
  });

  test('clamps negative times to zero rather than producing a "-" that sorts wrongly', () => {
    expect(padEpochMs(-5)).toBe('000000000000000');
  });

  test('a queued sort key sorts by ready time first, and dueUpToSortKey includes everything due at now and nothing later', () => {
    const due = queuedSortKey(T0, 'zzz');
    const dueEarlier = queuedSortKey(T0 - 1, 'zzz');
    const later = queuedSortKey(T0 + 1, 'aaa');
    const upTo = dueUpToSortKey(T0);
    expect(dueEarlier < due).toBe(true);
    expect(due <= upTo).toBe(true);
    expect(later > upTo).toBe(true);
  });
});

describe('job keys', () => {
  test('jobKey and parseJobPk round trip', () => {
    for (const [type, id] of [
      ['invoice-shipments', 'job_282227eb'],
      ['a.b_c', 'x:y:z'],
      ['t', 'id#with#hashes'],
    ] as const) {
      const key = jobKey(type, id);
      expect(key.sk).toBe('JOB');
      expect(key.pk).toBe(`JOB#${type}#${id}`);
      expect(parseJobPk(key.pk)).toEqual({ type, id });
    }
  });

  test('parseJobPk rejects keys that are not job keys', () => {
    expect(() => parseJobPk('TYPE#emails')).toThrow(/not a job key/);
    expect(() => parseJobPk('JOB#emails')).toThrow(/not a job key/);
    expect(() => parseJobPk('CURSOR#Q#emails#0')).toThrow(/not a job key/);
  });

  test('lane partitions name the lane, bucket and shard', () => {
    expect(lanePartition({ kind: 'queued', type: 'emails' }, 42, 3)).toBe('Q#emails#42#3');
    expect(lanePartition({ kind: 'claims' }, 42, 3)).toBe('C#42#3');
  });
});

describe('claim sort keys', () => {
  test('claimSortKey and parseClaimSortKey round trip', () => {
    for (const [until, type, id] of [
      [T0 + 30_000, 'emails', 'job_1'],
      [0, 'a', 'b'],
      [T0, 'type.x', 'id#with#hash'],
    ] as const) {
      expect(parseClaimSortKey(claimSortKey(until, type, id))).toEqual({ claimedUntilMs: until, type, id });
    }
  });

  test('claim sort keys sort by claimedUntil', () => {
    expect(claimSortKey(T0, 'zz', 'zz') < claimSortKey(T0 + 1, 'aa', 'aa')).toBe(true);
  });

  test('parseClaimSortKey rejects malformed keys', () => {
    expect(() => parseClaimSortKey('000000000000001')).toThrow(/not a claim sort key/);
    expect(() => parseClaimSortKey('000000000000001#emails')).toThrow(/not a claim sort key/);
  });
});

describe('partition families', () => {
  const built: [PartitionFamily, ItemKey][] = [
    ['job', jobKey('emails', 'a#b')],
    ['jobType', jobTypeKey('emails')],
    ['jobType', typeCounterKey('emails')],
    ['jobType', keyCounterKey('emails', 'eu')],
    ['jobType', rateBucketKey('emails')],
    ['apiKey', apiKeyKey('k1')],
    ['roster', rosterKey('poller#p1')],
    ['metrics', metricsKey('emails', 29_000_000)],
    ['cursor', cursorKey({ kind: 'claims' }, 0)],
    ['correlation', correlationItemKey('emails', 'order-7')],
    ['directory', directoryKey({ kind: 'queued', type: 'emails' }, 100)],
  ];

  test.each(built)('a %s key starts with its family prefix, which the stack grants by', (family, key) => {
    expect(key.pk.startsWith(PARTITION_PREFIX[family])).toBe(true);
  });

  test('no family prefix is a prefix of another, so a grant of one never covers another', () => {
    const prefixes = Object.values(PARTITION_PREFIX);
    for (const a of prefixes) for (const b of prefixes) if (a !== b) expect(b.startsWith(a)).toBe(false);
  });
});
