/** The weighted-mix bench reads the in-flight weight and the wait for a free slot back from the handler's spans. */
import { expect, test } from 'vitest';
import { analyseMix, type AttemptSpan } from '../../../bench/mix-analysis.js';

const span = (key: string, weight: number, startedAtMs: number, endedAtMs: number, readyAtMs = 0): AttemptSpan => ({ key, weight, readyAtMs, startedAtMs, endedAtMs });

test('the most weight in flight is taken over the type and each key, a slot freed and taken at one instant counted once', () => {
  const analysis = analyseMix([span('east', 2, 0, 10), span('east', 2, 10, 20), span('west', 3, 5, 15)], { typeLimit: 10, keyLimits: {} });
  expect(analysis.maxWeight).toBe(5);
  expect(analysis.maxWeightByKey).toEqual({ east: 2, west: 3 });
});

test("a key's next job waits from when its key's slot frees until it starts", () => {
  const analysis = analyseMix([span('east', 1, 0, 100), span('east', 1, 340, 400)], { typeLimit: 10, keyLimits: { east: 1 } });
  expect(analysis.freeSlotWaitsMs).toEqual([0, 240]);
});

test('room in the key is not a free slot while the type is full', () => {
  const spans = [span('east', 1, 0, 100), span('west', 1, 0, 200), span('east', 1, 250, 300)];
  const analysis = analyseMix(spans, { typeLimit: 1, keyLimits: { east: 1 } });
  // East's second job had its key's room from 100 but the type's only from 200.
  expect(analysis.freeSlotWaitsMs.at(-1)).toBe(50);
});

test('a job not yet due is not waiting for a slot', () => {
  const analysis = analyseMix([span('east', 1, 0, 100), span('east', 1, 520, 600, 500)], { typeLimit: 10, keyLimits: { east: 1 } });
  expect(analysis.freeSlotWaitsMs).toEqual([0, 20]);
});

test('a heavier next job waits only from when its whole weight fits', () => {
  const spans = [span('east', 1, 0, 100), span('east', 1, 0, 200), span('east', 2, 260, 300)];
  const analysis = analyseMix(spans, { typeLimit: 10, keyLimits: { east: 2 } });
  expect(analysis.freeSlotWaitsMs.at(-1)).toBe(60);
});
