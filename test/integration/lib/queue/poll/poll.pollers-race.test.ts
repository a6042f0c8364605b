/**
 * Two pollers over the same shards at once, on the real clock, against
 * DynamoDB Local: the conditional claim lets exactly one of them have each job.
 */
import { setTimeout as delay } from 'node:timers/promises';
import pLimit from 'p-limit';
import { expect, test } from 'vitest';
import { getJob } from '../../../../../lib/queue/read-job.js';
import { pollOnce } from '../../../../../lib/queue/poll/poll.js';
import { type CursorCache } from '../../../../../lib/queue/poll/poll-state.js';
import type { JobHandler } from '../../../../../lib/queue/attempt/run-batch.js';
import { asFunction, realClock } from '../../../../support/queue.js';
import { RunningInvoker, defineType, enqueue, freshQueuePerTest } from '../../../../support/lib-fixtures.js';

const JOBS = 1_000;

const queue = freshQueuePerTest({ clock: () => realClock });

test(`two pollers racing over the same shards start each of ${JOBS} jobs exactly once`, async () => {
  const { ctx } = queue();
  // A visibility timeout far longer than the test, so no claim can lapse and legitimately run twice.
  const race = await defineType(ctx, 'race', { visibility_timeout_s: 600 });
  const limit = pLimit(50);
  const ids = Array.from({ length: JOBS }, (_, i) => `race-${i}`);
  await Promise.all(ids.map((id) => limit(() => enqueue(ctx, race, id))));

  const starts = new Map<string, number>();
  const handler: JobHandler = (data) => {
    const { id } = data as { id: string };
    starts.set(id, (starts.get(id) ?? 0) + 1);
    return id;
  };
  const workers = [
    new RunningInvoker(ctx, { race: handler }, {}, { id: 'worker-a', host: 'host-a' }),
    new RunningInvoker(ctx, { race: handler }, {}, { id: 'worker-b', host: 'host-b' }),
  ];
  const succeeded = (): number =>
    workers.reduce((sum, worker) => sum + worker.results.reduce((s, result) => s + result.succeeded, 0), 0);

  const deadline = Date.now() + 40_000;
  const pollers = await Promise.all(
    workers.map(async (invoker) => {
      const cursors: CursorCache = new Map();
      const totals = { claimed: 0, lostRaces: 0, polls: 0 };
      while (succeeded() < JOBS && Date.now() < deadline) {
        const result = await pollOnce(asFunction(ctx, 'poller'), { jobTypes: [race], invoker, cursors });
        totals.claimed += result.claimed;
        totals.lostRaces += result.lostRaces;
        totals.polls++;
        // An idle poller's pause between polls, as its poll interval would be.
        if (result.claimed === 0) await delay(20);
      }
      return totals;
    }),
  );

  expect(workers.flatMap((worker) => worker.errors)).toEqual([]);
  expect(succeeded()).toBe(JOBS);
  expect(pollers[0]!.claimed + pollers[1]!.claimed).toBe(JOBS);
  // Both pollers really took part.
  expect(pollers[0]!.claimed).toBeGreaterThan(0);
  expect(pollers[1]!.claimed).toBeGreaterThan(0);

  expect(starts.size).toBe(JOBS);
  const startedTwice = [...starts].filter(([, count]) => count !== 1);
  expect(startedTwice).toEqual([]);

  const jobs = await Promise.all(ids.map((id) => limit(() => getJob(ctx, 'race', id))));
  const notSucceeded = jobs.filter((job) => job?.status !== 'succeeded' || job.attempt !== 1 || job.history.length !== 1);
  expect(notSucceeded).toEqual([]);
}, 90_000);
