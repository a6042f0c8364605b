import { expect, test } from 'vitest';
import type { Job } from '../../lib/model.js';
import { BatchBuilder } from '../../lib/poller.js';
import { runningJob } from '../support/jobs.js';

test('a batch is handed over the moment it is full, before the rest of the poll is claimed', () => {
  const handedOver: string[][] = [];
  const builder = new BatchBuilder(2, 900 * 1024, (jobs: Job[]) => handedOver.push(jobs.map((job) => job.id)));
  builder.add(runningJob({ id: 'a' }));
  expect(handedOver).toEqual([]);
  builder.add(runningJob({ id: 'b' }));
  expect(handedOver).toEqual([['a', 'b']]);
  builder.add(runningJob({ id: 'c' }));
  builder.flush();
  expect(handedOver).toEqual([['a', 'b'], ['c']]);
});

test('flushing with nothing pending hands over nothing', () => {
  const handedOver: Job[][] = [];
  const builder = new BatchBuilder(2, 900 * 1024, (jobs) => handedOver.push(jobs));
  builder.flush();
  expect(handedOver).toEqual([]);
});
