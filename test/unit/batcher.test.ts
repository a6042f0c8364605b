import { expect, test } from 'vitest';
import type { Job } from '../../lib/model.js';
import { createBatcher } from '../../lib/poller.js';
import { runningJob } from '../support/jobs.js';

test('a batch is handed over the moment it is full, before the rest of the poll is claimed', () => {
  const handedOver: string[][] = [];
  const batcher = createBatcher(2, (jobs: Job[]) => handedOver.push(jobs.map((job) => job.id)));
  batcher.add(runningJob({ id: 'a' }));
  expect(handedOver).toEqual([]);
  batcher.add(runningJob({ id: 'b' }));
  expect(handedOver).toEqual([['a', 'b']]);
  batcher.add(runningJob({ id: 'c' }));
  batcher.close();
  expect(handedOver).toEqual([['a', 'b'], ['c']]);
});

test('closing with nothing pending hands over nothing', () => {
  const handedOver: Job[][] = [];
  const batcher = createBatcher(2, (jobs) => handedOver.push(jobs));
  batcher.close();
  expect(handedOver).toEqual([]);
});
