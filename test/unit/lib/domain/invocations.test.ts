/** What one function hands another: the event a wake sends, and how a started function tells a wake from its tick (lib/domain/invocations.ts). */
import { expect, test } from 'vitest';
import { startKindOf, wakeEventOf } from '../../../../lib/domain/invocations.js';

test("a poller's wake names the shards of the partition it wakes", () => {
  expect(wakeEventOf({ role: 'poller', shards: [2, 3] })).toStrictEqual({ wake: true, shards: [2, 3] });
});

test("the sweeper's wake names no shards", () => {
  expect(wakeEventOf({ role: 'sweeper' })).toStrictEqual({ wake: true });
});

test('an event made by a wake starts a wake', () => {
  expect(startKindOf(wakeEventOf({ role: 'sweeper' }))).toBe('wake');
  expect(startKindOf(wakeEventOf({ role: 'poller', shards: [0] }))).toBe('wake');
});

test.each([{}, { shards: [0, 1] }, { wake: 'true' }, { wake: 1 }, null, undefined, 'wake', true])('the event %j is a tick', (event) => {
  expect(startKindOf(event)).toBe('tick');
});
