/** The in-memory publisher of lifecycle events, which the local runtime and the tests subscribe to (lib/domain/lifecycle-events.ts). */
import { expect, test } from 'vitest';
import { createMemoryPublisher, discardLifecycleEvents, type LifecycleEvent } from '../../lib/domain/lifecycle-events.js';

const event = (id: string): LifecycleEvent => ({ name: 'job.succeeded', type: 't', id, attempt: 1, outcome: 'succeeded', status: 'succeeded', atMs: 0 });

test('the memory publisher keeps every event in order, and hands each to its subscriber', async () => {
  const seen: string[] = [];
  const publisher = createMemoryPublisher((published) => seen.push(published.id));
  await publisher.publish([event('a'), event('b')]);
  await publisher.publish([event('c')]);
  expect(publisher.events.map((kept) => kept.id)).toEqual(['a', 'b', 'c']);
  expect(seen).toEqual(['a', 'b', 'c']);
});

test('the memory publisher keeps only the newest events past its limit', async () => {
  const publisher = createMemoryPublisher(undefined, 2);
  await publisher.publish([event('a'), event('b')]);
  expect(publisher.events.map((kept) => kept.id)).toEqual(['a', 'b']);
  await publisher.publish([event('c')]);
  expect(publisher.events.map((kept) => kept.id)).toEqual(['b', 'c']);
});

test('the discarding publisher takes events and keeps nothing', async () => {
  await expect(discardLifecycleEvents.publish([event('a')])).resolves.toBeUndefined();
});
