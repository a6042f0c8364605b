/**
 * Where a key held back by its rate is read from in a blocked run (queue/poll/blocked-runs.ts): just before its
 * oldest job not yet claimed, so it is never read behind another key's backlog.
 */
import { expect, test } from 'vitest';
import { jobTypeFromInput } from '../../../../support/job-types.js';
import { extendBlockedRun, nextPlaceOfKey, placesToRead } from '../../../../../lib/queue/poll/blocked-runs.js';
import type { DueEntry } from '../../../../../lib/store/due-index.js';
import { jobKey, lanePartition, queuedSortKey } from '../../../../../lib/store/keys.js';
import { jobTypeInputSchema } from '../../../../../lib/wire/job-types.js';

const BUCKET = 100;

function entry(id: string, throttleKey: string, readyAtMs: number): DueEntry {
  return { ...jobKey('paced', id), gsi1pk: lanePartition({ kind: 'queued', type: 'paced' }, BUCKET, 0), gsi1sk: queuedSortKey(readyAtMs, id), throttleKey };
}

const body = { target: { kind: 'handler', name: 'paced' }, throttle: { limits: { hot: { rate_per_s: 1 }, slow: { rate_per_s: 1 }, full: { limit: 0 } } } };
const paced = jobTypeFromInput('paced', jobTypeInputSchema.parse(body), { createdAtMs: 0, updatedAtMs: 0 });
const page = [entry('hot-0', 'hot', 1), entry('slow-0', 'slow', 2), entry('hot-1', 'hot', 3), entry('slow-1', 'slow', 4)];

test('a key joining a run read from the cursor is read from the cursor; one joining later, from just before its first job there', () => {
  const { run } = extendBlockedRun(paced, undefined, page, new Set(['hot', 'slow']));
  expect(run?.rateFrom.get('hot')).toBeNull();
  expect(run?.rateFrom.get('slow')).toEqual({ entry: page[0], bucket: BUCKET });
});

test('a key limited only in flight has no place of its own in the run', () => {
  const { run } = extendBlockedRun(paced, undefined, [entry('full-0', 'full', 1), ...page], new Set(['full', 'hot', 'slow']));
  expect(run?.keys.has('full')).toBe(true);
  expect(run?.rateFrom.has('full')).toBe(false);
});

test("a key's place moves to just before its first job not seen claimed, and past the page when all were", () => {
  const claimed = new Set(['hot-0']);
  const seenClaimed = (read: DueEntry): boolean => claimed.has(read.pk.slice(read.pk.lastIndexOf('#') + 1));
  expect(nextPlaceOfKey(page, 'hot', null, seenClaimed)).toEqual({ entry: page[1], bucket: BUCKET });
  claimed.add('hot-1');
  expect(nextPlaceOfKey(page, 'hot', null, seenClaimed)).toEqual({ entry: page[3], bucket: BUCKET });
  expect(nextPlaceOfKey([], 'hot', null, seenClaimed)).toBeNull();
});

test('places are read oldest first, the cursor before any entry, and keys at one place share its read', () => {
  const later = { entry: page[2]!, bucket: BUCKET };
  const earlier = { entry: page[0]!, bucket: BUCKET };
  const places = placesToRead([{ key: 'a', from: later }, { key: 'b', from: earlier }, { key: 'c', from: null }, { key: 'd', from: earlier }], 4);
  expect(places).toEqual([{ from: null, keys: ['c'] }, { from: earlier, keys: ['b', 'd'] }, { from: later, keys: ['a'] }]);
  expect(placesToRead([{ key: 'a', from: later }, { key: 'c', from: null }], 1)).toEqual([{ from: null, keys: ['c'] }]);
});
