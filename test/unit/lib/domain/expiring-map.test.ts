/** The map both the api's job types and the local gateway's authorizer answers are kept in. */
import { expect, test } from 'vitest';
import { createExpiringMap } from '../../../../lib/domain/expiring-map.js';

function mapAt(options: { ttlMs: number; maxEntries: number }) {
  let nowMs = 1_000;
  const map = createExpiringMap<string>({ ...options, nowMs: () => nowMs });
  return { map, advance: (ms: number) => (nowMs += ms) };
}

test('a value is kept for ttlMs from when it was set, and not a moment longer', () => {
  const { map, advance } = mapAt({ ttlMs: 100, maxEntries: 10 });
  map.set('a', 'one');
  advance(99);
  expect(map.get('a')).toBe('one');
  advance(1);
  expect(map.get('a')).toBeUndefined();
});

test('setting a key again starts its time anew', () => {
  const { map, advance } = mapAt({ ttlMs: 100, maxEntries: 10 });
  map.set('a', 'one');
  map.set('b', 'other');
  advance(60);
  map.set('a', 'two');
  advance(60);
  expect([map.get('a'), map.get('b')]).toEqual(['two', undefined]);
});

test('when full, the entry set longest ago gives way', () => {
  const { map } = mapAt({ ttlMs: 100, maxEntries: 2 });
  map.set('a', '1');
  map.set('b', '2');
  map.set('c', '3');
  expect([map.get('a'), map.get('b'), map.get('c')]).toEqual([undefined, '2', '3']);
});
