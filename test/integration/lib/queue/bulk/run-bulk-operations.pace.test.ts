/**
 * The sweeper's bulk rounds keep to BULK_JOBS_PER_S: a page of 25 jobs at most every 25 / BULK_JOBS_PER_S
 * seconds, on the real clock, so a large operation cannot crowd out the other types' jobs.
 */
import { expect, test } from 'vitest';
import { BULK_PAGE_SIZE, replayIdOf } from '../../../../../lib/domain/bulk.js';
import { runBulkOperations } from '../../../../../lib/queue/bulk/run-bulk-operations.js';
import { getOperation } from '../../../../../lib/queue/bulk/start-bulk-operation.js';
import { startBulkOperation } from '../../../../../lib/queue/bulk/start-bulk-operation.js';
import { requireJobType } from '../../../../../lib/queue/catalog/job-types.js';
import { getJob } from '../../../../../lib/queue/read-job.js';
import { realClock } from '../../../../support/queue.js';
import { seedFinished } from '../../../../support/bulk-fixtures.js';
import { defineType, freshQueuePerTest } from '../../../../support/lib-fixtures.js';

const JOBS_PER_S = 50;
const queue = freshQueuePerTest({ settings: { bulkJobsPerS: JOBS_PER_S }, clock: () => realClock });

test('a round of pages lasting 1.5 s runs at most a page per 0.5 s at 50 jobs a second', async () => {
  const { ctx } = queue();
  await defineType(ctx, 'echo');
  const jobType = await requireJobType(ctx, 'echo');
  const failed = Array.from({ length: BULK_PAGE_SIZE * 10 }, (_, index) => ({ id: `f${index}`, status: 'failed' as const, finishedAtMs: Date.now() - 60_000 + index }));
  await seedFinished(queue(), jobType, failed);
  const { operation } = await startBulkOperation(ctx, jobType, { action: 'retry', status: 'failed' }, 'ops');
  const runMs = 1_500;
  const jobs = await runBulkOperations(queue().as('sweeper'), { untilMs: Date.now() + runMs });
  const pagesRun = (await getOperation(ctx, operation.id))?.pages ?? 0;
  // The first page starts at once; each later one waits its share of a second, so a slow machine runs fewer, never more.
  expect(pagesRun).toBeGreaterThanOrEqual(1);
  expect(pagesRun).toBeLessThanOrEqual(1 + Math.floor(runMs / ((BULK_PAGE_SIZE * 1000) / JOBS_PER_S)));
  expect(jobs).toBe(pagesRun * BULK_PAGE_SIZE);
});

test('a page acts on its jobs spread over its share of a second, not in one burst', async () => {
  const { ctx } = queue();
  await defineType(ctx, 'echo');
  const jobType = await requireJobType(ctx, 'echo');
  const failed = Array.from({ length: BULK_PAGE_SIZE }, (_, index) => ({ id: `f${index}`, status: 'failed' as const, finishedAtMs: Date.now() - 60_000 + index }));
  await seedFinished(queue(), jobType, failed);
  const { operation } = await startBulkOperation(ctx, jobType, { action: 'retry', status: 'failed' }, 'ops');
  await runBulkOperations(queue().as('sweeper'), { untilMs: Date.now() + 1 });
  const replays = await Promise.all(failed.map(({ id }) => getJob(ctx, 'echo', replayIdOf(operation.id, id))));
  const createdAtMs = replays.map((replay) => replay?.createdAtMs ?? Number.NaN);
  const spacingMs = 1000 / JOBS_PER_S;
  // Each replay is written no sooner than its place in the page allows: a burst would put all of them within a few ms.
  expect(Math.max(...createdAtMs) - Math.min(...createdAtMs)).toBeGreaterThanOrEqual((BULK_PAGE_SIZE - 1) * spacingMs - spacingMs);
});
