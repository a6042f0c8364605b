/**
 * Bulk operations survive their runner: a runner that dies mid-page, or after acting on a page but before
 * counting it, leaves the page to the next runner, which finishes it with every job acted on exactly once and
 * counted once; two runners on one operation never double a page.
 */
import { PutCommand, ScanCommand, UpdateCommand, type ScanCommandOutput } from '@aws-sdk/lib-dynamodb';
import { beforeEach, describe, expect, test } from 'vitest';
import { BULK_PAGE_SIZE, MAX_PAGE_RUNS, replayIdOf, type BulkRequest } from '../../../../../lib/domain/bulk.js';
import { runOperationPage } from '../../../../../lib/queue/bulk/run-bulk-operations.js';
import { getOperation } from '../../../../../lib/queue/bulk/start-bulk-operation.js';
import { startBulkOperation } from '../../../../../lib/queue/bulk/start-bulk-operation.js';
import type { QueueContext } from '../../../../../lib/queue/context.js';
import { requireJobType } from '../../../../../lib/queue/catalog/job-types.js';
import { getJob } from '../../../../../lib/queue/read-job.js';
import { cancelJob } from '../../../../../lib/queue/attempt/cancel.js';
import type { JobType } from '../../../../../lib/domain/job-type.js';
import type { TestQueue } from '../../../../support/queue.js';
import { runToEnd, seedFinished, seedQueued } from '../../../../support/bulk-fixtures.js';
import { defineType, freshQueuePerTest, T0 } from '../../../../support/lib-fixtures.js';

const queue = freshQueuePerTest();
/** `BULK_SCALE=10000` runs the full size; the suite runs it smaller to stay fast on a shared machine. */
const LARGE = Number(process.env.BULK_SCALE ?? 1_000);
const JOBS = BULK_PAGE_SIZE * 3;
const RETRY: BulkRequest = { action: 'retry', status: 'failed' };
const CANCEL: BulkRequest = { action: 'cancel', status: 'queued' };

let jobType: JobType;
beforeEach(async () => {
  await defineType(queue().ctx, 'echo');
  jobType = await requireJobType(queue().ctx, 'echo');
  queue().clock.advance(60_000);
});

const sweeper = () => queue().as('sweeper');
const failedJobs = (count: number) => Array.from({ length: count }, (_, index) => ({ id: `f${index}`, status: 'failed' as const, finishedAtMs: T0 + index }));

/**
 * The sweeper's context, but the runner dies (its calls never return) at the first write matching `dies` after
 * `survives` of them went through; `died` settles then.
 */
function dyingRunner(ctx: QueueContext, survives: number, dies: (command: PutCommand | UpdateCommand) => boolean) {
  let left = survives;
  let markDead: () => void = () => undefined;
  const died = new Promise<void>((resolve) => (markDead = resolve));
  const db = Object.create(ctx.db) as QueueContext['db'];
  db.send = ((command: object) => {
    if ((command instanceof PutCommand || command instanceof UpdateCommand) && dies(command) && left-- <= 0) {
      markDead();
      return new Promise(() => undefined);
    }
    return ctx.db.send(command as never);
  }) as QueueContext['db']['send'];
  return { ctx: { ...ctx, db }, died };
}

const keyOf = (command: PutCommand | UpdateCommand): string => String((command instanceof PutCommand ? command.input.Item : command.input.Key)?.pk);
const jobWrite = (command: PutCommand | UpdateCommand) => keyOf(command).startsWith('JOB#');
const pageCount = (command: PutCommand | UpdateCommand) =>
  command instanceof UpdateCommand && keyOf(command).startsWith('OP#') && String(command.input.UpdateExpression).includes('matched');

/** The data ids of every replay in the table: one per replayed job, whatever ran. */
async function replayedIds(test: TestQueue): Promise<string[]> {
  const ids: string[] = [];
  let startKey: Record<string, unknown> | undefined;
  do {
    const page: ScanCommandOutput = await test.clients.db.send(
      new ScanCommand({
        TableName: test.tableName,
        FilterExpression: 'begins_with(pk, :replays)',
        ExpressionAttributeValues: { ':replays': 'JOB#echo#replay_' },
        ProjectionExpression: 'dataJson',
        ExclusiveStartKey: startKey,
      }),
    );
    for (const item of page.Items ?? []) ids.push((JSON.parse(String(item.dataJson)) as { id: string }).id);
    startKey = page.LastEvaluatedKey;
  } while (startKey);
  return ids.sort();
}

const sorted = (jobs: { id: string }[]): string[] => jobs.map((job) => job.id).sort();

test("a retry's replays are due just ahead, at the operation's pace, and a runner taking the page over later enqueues the same ones", async () => {
  const jobs = failedJobs(BULK_PAGE_SIZE);
  await seedFinished(queue(), jobType, jobs);
  const { operation } = await startBulkOperation(queue().ctx, jobType, RETRY, 'ops');
  const takenAtMs = queue().clock.nowMs();
  const dying = dyingRunner(sweeper(), 10, jobWrite);
  void runOperationPage(dying.ctx, operation.id);
  await dying.died;
  queue().clock.advance(30_000);
  await runToEnd(sweeper(), operation.id);
  expect(await getOperation(queue().ctx, operation.id)).toMatchObject({ state: 'succeeded', done: BULK_PAGE_SIZE, failed: 0 });
  const { pollIntervalMs, bulkJobsPerS } = queue().ctx.settings;
  const page = (await getOperation(queue().ctx, operation.id))!;
  const dueTimes = await Promise.all(
    jobs.map(async ({ id }) => (await getJob(queue().ctx, 'echo', replayIdOf(operation.id, id)))?.runAfterMs),
  );
  expect(Math.min(...(dueTimes as number[]))).toBe(takenAtMs + 2 * pollIntervalMs);
  expect(Math.max(...(dueTimes as number[]))).toBe(takenAtMs + 2 * pollIntervalMs + (BULK_PAGE_SIZE - 1) * Math.floor(1000 / bulkJobsPerS));
  expect(page.pending).toBeUndefined();
});

describe('a runner that dies', () => {
  test('mid-page of a retry: the next finishes the page, every job replayed once and counted once', async () => {
    const jobs = failedJobs(JOBS);
    await seedFinished(queue(), jobType, jobs);
    const { operation } = await startBulkOperation(queue().ctx, jobType, RETRY, 'ops');
    await runOperationPage(sweeper(), operation.id);
    const dying = dyingRunner(sweeper(), 10, jobWrite);
    void runOperationPage(dying.ctx, operation.id);
    await dying.died;
    expect(await runToEnd(sweeper(), operation.id)).toBe(2);
    expect(await getOperation(queue().ctx, operation.id)).toMatchObject({ state: 'succeeded', matched: JOBS, done: JOBS, skipped: 0, failed: 0 });
    expect(await replayedIds(queue())).toEqual(sorted(jobs));
  });

  test('mid-page of a cancel: the jobs it cancelled are counted done by the next, as its own', async () => {
    const jobs = Array.from({ length: JOBS }, (_, index) => ({ id: `q${index}` }));
    await seedQueued(queue().ctx, jobType, jobs);
    const { operation } = await startBulkOperation(queue().ctx, jobType, CANCEL, 'ops');
    const dying = dyingRunner(sweeper(), 10, jobWrite);
    void runOperationPage(dying.ctx, operation.id);
    await dying.died;
    await runToEnd(sweeper(), operation.id);
    expect(await getOperation(queue().ctx, operation.id)).toMatchObject({ state: 'succeeded', matched: JOBS, done: JOBS, skipped: 0 });
  });

  test('after acting on its page but before counting it: the next counts it once and replays nothing again', async () => {
    const jobs = failedJobs(JOBS);
    await seedFinished(queue(), jobType, jobs);
    const { operation } = await startBulkOperation(queue().ctx, jobType, RETRY, 'ops');
    const dying = dyingRunner(sweeper(), 0, pageCount);
    void runOperationPage(dying.ctx, operation.id);
    await dying.died;
    expect(await replayedIds(queue())).toHaveLength(BULK_PAGE_SIZE);
    await runToEnd(sweeper(), operation.id);
    expect(await getOperation(queue().ctx, operation.id)).toMatchObject({ state: 'succeeded', pages: 3, matched: JOBS, done: JOBS });
    expect(await replayedIds(queue())).toEqual(sorted(jobs));
  });

  test('before acting: a job cancelled by hand meanwhile is counted skipped, not done', async () => {
    await seedQueued(queue().ctx, jobType, [{ id: 'a' }, { id: 'b' }, { id: 'c' }]);
    const { operation } = await startBulkOperation(queue().ctx, jobType, CANCEL, 'ops');
    const dying = dyingRunner(sweeper(), 0, jobWrite);
    void runOperationPage(dying.ctx, operation.id);
    await dying.died;
    await cancelJob(queue().ctx, 'echo', 'b');
    await runToEnd(sweeper(), operation.id);
    expect(await getOperation(queue().ctx, operation.id)).toMatchObject({ state: 'succeeded', matched: 3, done: 2, skipped: 1 });
  });
});

describe('a job whose write keeps failing', () => {
  /** The sweeper's context, but every put of `replayId` fails as DynamoDB does once the SDK has given up. */
  function failingReplay(ctx: QueueContext, replayId: string): QueueContext {
    const db = Object.create(ctx.db) as QueueContext['db'];
    db.send = ((command: object) => {
      if (command instanceof PutCommand && keyOf(command) === `JOB#echo#${replayId}`) return Promise.reject(new Error('InternalServerError'));
      return ctx.db.send(command as never);
    }) as QueueContext['db']['send'];
    return { ...ctx, db };
  }

  test('leaves its page for a later round, which counts it done once the write goes through', async () => {
    await seedFinished(queue(), jobType, failedJobs(3));
    const { operation } = await startBulkOperation(queue().ctx, jobType, RETRY, 'ops');
    await runOperationPage(failingReplay(sweeper(), replayIdOf(operation.id, 'f1')), operation.id);
    expect(await getOperation(queue().ctx, operation.id)).toMatchObject({ state: 'running', pages: 0, matched: 0, pending: { failedRuns: 1 } });
    await runToEnd(sweeper(), operation.id);
    expect(await getOperation(queue().ctx, operation.id)).toMatchObject({ state: 'succeeded', matched: 3, done: 3, failed: 0 });
    expect(await replayedIds(queue())).toEqual(['f0', 'f1', 'f2']);
  });

  test(`is counted failed after ${MAX_PAGE_RUNS} runs of its page, and the operation ends failed`, async () => {
    await seedFinished(queue(), jobType, failedJobs(3));
    const { operation } = await startBulkOperation(queue().ctx, jobType, RETRY, 'ops');
    const failing = failingReplay(sweeper(), replayIdOf(operation.id, 'f1'));
    expect(await runToEnd(failing, operation.id)).toBe(MAX_PAGE_RUNS);
    expect(await getOperation(queue().ctx, operation.id)).toMatchObject({ state: 'failed', matched: 3, done: 2, failed: 1 });
    expect(await replayedIds(queue())).toEqual(['f0', 'f2']);
  });
});

test('two runners on one operation at once never double a page', async () => {
  const jobs = failedJobs(JOBS + 7);
  await seedFinished(queue(), jobType, jobs);
  const { operation } = await startBulkOperation(queue().ctx, jobType, RETRY, 'ops');
  while ((await getOperation(queue().ctx, operation.id))?.state === 'running') {
    await Promise.all([runOperationPage(sweeper(), operation.id), runOperationPage(sweeper(), operation.id)]);
  }
  expect(await getOperation(queue().ctx, operation.id)).toMatchObject({ state: 'succeeded', pages: 4, matched: jobs.length, done: jobs.length });
  expect(await replayedIds(queue())).toEqual(sorted(jobs));
});

test(`a bulk retry of ${LARGE} failed jobs killed halfway finishes with each replayed exactly once`, { timeout: 600_000 }, async () => {
  const jobs = failedJobs(LARGE);
  await seedFinished(queue(), jobType, jobs);
  const { operation } = await startBulkOperation(queue().ctx, jobType, RETRY, 'ops');
  const halfway = Math.floor(LARGE / BULK_PAGE_SIZE / 2);
  for (let page = 0; page < halfway; page++) await runOperationPage(sweeper(), operation.id);
  const dying = dyingRunner(sweeper(), BULK_PAGE_SIZE / 2, jobWrite);
  void runOperationPage(dying.ctx, operation.id);
  await dying.died;
  await runToEnd(sweeper(), operation.id, LARGE);
  expect(await getOperation(queue().ctx, operation.id)).toMatchObject({ state: 'succeeded', matched: LARGE, done: LARGE, skipped: 0, failed: 0 });
  expect(await replayedIds(queue())).toEqual(sorted(jobs));
});
