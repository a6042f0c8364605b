/** The bench's worker process runs a fixed number of jobs at once, counted by job, not by batch. */
import { expect, test } from 'vitest';
import { createJobGate } from '../../../bench/job-gate.js';

function deferred() {
  let finish!: () => void;
  const done = new Promise<void>((resolve) => (finish = resolve));
  return { done, finish };
}

test('one-job batches fill the gate one place each', async () => {
  const gate = createJobGate(4);
  const held = Array.from({ length: 4 }, () => deferred());
  const started: number[] = [];
  const runs = held.map((each, index) => gate.run(1, async () => (started.push(index), each.done)));
  await Promise.resolve();
  expect(started).toEqual([0, 1, 2, 3]);
  expect(gate.waiting).toBe(0);
  held.forEach((each) => each.finish());
  await Promise.all(runs);
});

test('a batch waits until its places are free, and later ones wait behind it', async () => {
  const gate = createJobGate(4);
  const first = deferred();
  const started: string[] = [];
  const runs = [
    gate.run(3, async () => (started.push('three'), first.done)),
    gate.run(2, async () => void started.push('two')),
    gate.run(1, async () => void started.push('one')),
  ];
  await Promise.resolve();
  expect(started).toEqual(['three']);
  expect(gate.waiting).toBe(2);
  first.finish();
  await Promise.all(runs);
  expect(started).toEqual(['three', 'two', 'one']);
});

test('a batch wider than the gate runs alone rather than never', async () => {
  const gate = createJobGate(2);
  await expect(gate.run(5, async () => 'ran')).resolves.toBe('ran');
});
