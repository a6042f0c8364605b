/**
 * A throttle key with no room holds back only its own jobs, however many of them are due ahead of other keys'
 * in a shard (more than a poll's page), and its backlog is read once, not at every poll.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { expect, test } from 'vitest';
import type { BlockedRuns } from '../../../../../lib/queue/poll/blocked-runs.js';
import type { QueueContext } from '../../../../../lib/queue/context.js';
import { pollOnce } from '../../../../../lib/queue/poll/poll.js';
import { type SettledGaps } from '../../../../../lib/queue/poll/poll-state.js';
import { type CursorCache } from '../../../../../lib/queue/poll/poll-state.js';
import type { JobType } from '../../../../../lib/domain/job-type.js';
import { runWorkerBatch } from '../../../../../lib/queue/attempt/run-batch.js';
import { asFunction } from '../../../../support/queue.js';
import { defineType, enqueue, freshQueuePerTest, RecordingInvoker, T0, WORKER } from '../../../../support/lib-fixtures.js';

const PAGE = 5;
const queue = freshQueuePerTest({ settings: { claimPageSize: PAGE, shards: 1 } });

/** One poller's memory across its polls, as the loop keeps it, the entries its queries returned and its calls by command. */
function poller(ctx: QueueContext) {
  const memory = { cursors: new Map() as CursorCache, blockedRuns: new Map() as BlockedRuns, settledGaps: new Map() as SettledGaps };
  const read = { entries: 0, calls: new Map<string, number>() };
  const pollerCtx = asFunction(ctx, 'poller');
  const countingDb = {
    send: async (command: unknown) => {
      const name = (command as object).constructor.name;
      read.calls.set(name, (read.calls.get(name) ?? 0) + 1);
      const answer = await pollerCtx.db.send(command as QueryCommand);
      if (command instanceof QueryCommand && command.input.IndexName) read.entries += (answer as { Items?: unknown[] }).Items?.length ?? 0;
      return answer;
    },
  } as unknown as DynamoDBDocumentClient;
  const counted: QueueContext = { ...pollerCtx, db: countingDb };
  return {
    read,
    memory,
    poll: (jobTypes: JobType[], invoker = new RecordingInvoker()) => pollOnce(counted, { jobTypes, invoker, ...memory }),
    /** The calls by command one poll makes. */
    async callsOf(jobTypes: JobType[], invoker = new RecordingInvoker()): Promise<Record<string, number>> {
      read.calls.clear();
      await pollOnce(counted, { jobTypes, invoker, ...memory });
      return Object.fromEntries(read.calls);
    },
  };
}

async function enqueueBacklog(ctx: QueueContext, jobType: JobType, region: string, count: number, firstDueMs: number): Promise<void> {
  for (let i = 0; i < count; i++) await enqueue(ctx, jobType, `${region}-${i}`, { data: { region }, runAfterMs: firstDueMs + i });
}

test("a key at limit 0 with more than a page of older due jobs does not hide another key's later ones", async () => {
  const { ctx, clock } = queue();
  const regional = await defineType(ctx, 'regional', { throttle: { key_field: 'region', limits: { east: { limit: 0 } } } });
  await enqueueBacklog(ctx, regional, 'east', 3 * PAGE + 2, T0 - 60_000);
  await enqueueBacklog(ctx, regional, 'west', 2, T0 - 1_000);
  clock.advance(1);
  const invoker = new RecordingInvoker();

  const result = await poller(ctx).poll([regional], invoker);

  expect(invoker.jobs.map((job) => job.id).sort()).toEqual(['west-0', 'west-1']);
  expect(result.saturated).toBe(false);
});

test('a full key (at its limit, not 0) with a backlog holds back only its own jobs, and its next job starts once a slot frees', async () => {
  const { ctx, clock } = queue();
  const regional = await defineType(ctx, 'regional', { throttle: { key_field: 'region', limits: { east: { limit: 1 } } } });
  await enqueueBacklog(ctx, regional, 'east', 2 * PAGE + 1, T0 - 60_000);
  await enqueueBacklog(ctx, regional, 'west', 1, T0 - 1_000);
  clock.advance(1);
  const { poll } = poller(ctx);
  const first = new RecordingInvoker();

  await poll([regional], first);
  expect(first.jobs.map((job) => job.id).sort()).toEqual(['east-0', 'west-0']);

  await runWorkerBatch(asFunction(ctx, 'worker'), first.batches[0]!, { registry: { handlers: { regional: () => 'ok' }, retryPolicies: {} }, worker: WORKER });
  const second = new RecordingInvoker();
  await poll([regional], second);
  expect(second.jobs.map((job) => job.id)).toEqual(['east-1']);
});

test("a blocked key's backlog is read once: later polls read past it while the key stays blocked", async () => {
  const { ctx, clock } = queue();
  const regional = await defineType(ctx, 'regional', { throttle: { key_field: 'region', limits: { east: { limit: 0 } } } });
  await enqueueBacklog(ctx, regional, 'east', 4 * PAGE, T0 - 60_000);
  clock.advance(1);
  const { poll, read } = poller(ctx);

  await poll([regional]);
  expect(read.entries).toBe(4 * PAGE);
  await enqueue(ctx, regional, 'west-late', { data: { region: 'west' } });
  const invoker = new RecordingInvoker();
  await poll([regional], invoker);

  expect(read.entries).toBe(4 * PAGE + 1);
  expect(invoker.jobs.map((job) => job.id)).toEqual(['west-late']);
});

test('raising a blocked key\'s limit makes its backlog claimable at the next poll', async () => {
  const { ctx, clock } = queue();
  const limits = (limit: number) => ({ throttle: { key_field: 'region', limits: { east: { limit } } } });
  const blocked = await defineType(ctx, 'regional', limits(0));
  await enqueueBacklog(ctx, blocked, 'east', 2 * PAGE, T0 - 60_000);
  clock.advance(1);
  const { poll } = poller(ctx);
  await poll([blocked]);

  const raised = await defineType(ctx, 'regional', limits(2));
  const invoker = new RecordingInvoker();
  await poll([raised], invoker);
  expect(invoker.jobs.map((job) => job.id).sort()).toEqual(['east-0', 'east-1']);
});

const HOURS = 3_600_000;

test('a blocked backlog left for hours costs each later poll the calls of an idle lane', async () => {
  const { ctx, clock } = queue();
  const regional = await defineType(ctx, 'regional', { throttle: { key_field: 'region', limits: { east: { limit: 0 } } } });
  const quiet = await defineType(ctx, 'quiet');
  await enqueueBacklog(ctx, regional, 'east', 2 * PAGE, T0 - 60_000);
  clock.advance(1);
  const blocked = poller(ctx);
  const idle = poller(ctx);
  await blocked.poll([regional]);
  clock.advance(3 * HOURS);
  // The first polls after the wait walk the buckets since (the blocked lane's once, the idle lane's as its cursor moves).
  await blocked.poll([regional]);
  await idle.poll([quiet]);
  clock.advance(1_000);

  const idleCalls = await idle.callsOf([quiet]);
  expect(await blocked.callsOf([regional])).toEqual(idleCalls);
});

test("a full key's freed slot does not make the next poll walk every bucket since its backlog", async () => {
  const { ctx, clock } = queue();
  const regional = await defineType(ctx, 'regional', { throttle: { key_field: 'region', limits: { east: { limit: 1 } } } });
  await enqueueBacklog(ctx, regional, 'east', 2 * PAGE, T0 - 60_000);
  clock.advance(1);
  const { poll, callsOf } = poller(ctx);
  const finish = (invoker: RecordingInvoker) =>
    runWorkerBatch(asFunction(ctx, 'worker'), invoker.batches[0]!, { registry: { handlers: { regional: () => 'ok' }, retryPolicies: {} }, worker: WORKER });
  const first = new RecordingInvoker();
  await poll([regional], first);
  await finish(first);
  clock.advance(3 * HOURS);
  // This poll reads from the cursor, held at the backlog, and walks the three hours of buckets after it once.
  const second = new RecordingInvoker();
  await poll([regional], second);
  await finish(second);
  const third = new RecordingInvoker();

  const calls = await callsOf([regional], third);

  expect(third.jobs.map((job) => job.id)).toEqual(['east-2']);
  // The backlog's pages and the buckets not yet settled: not one query per bucket of the three hours.
  expect(calls.QueryCommand).toBeLessThan(10);
});

test('the next poller goes past the settled empty buckets the last one recorded on the cursor', async () => {
  const { ctx, clock } = queue();
  const regional = await defineType(ctx, 'regional', { throttle: { key_field: 'region', limits: { east: { limit: 0 } } } });
  await enqueueBacklog(ctx, regional, 'east', 2 * PAGE, T0 - 60_000);
  clock.advance(1);
  await poller(ctx).poll([regional]);
  clock.advance(3 * HOURS);
  await poller(ctx).poll([regional]);
  clock.advance(60_000);

  const calls = await poller(ctx).callsOf([regional]);

  // It reads the cursor and the backlog again, to know it blocked, but not the hours of empty buckets after it.
  expect(calls.QueryCommand).toBeLessThan(10);
});

test('a job that landed late in a gap is claimed once the backlog ahead of it clears and the cursor reaches it', async () => {
  const { ctx, clock } = queue();
  const limits = (limit: number) => ({ throttle: { key_field: 'region', limits: { east: { limit } } } });
  const blocked = await defineType(ctx, 'regional', limits(0));
  await enqueueBacklog(ctx, blocked, 'east', 2, T0 - 60_000);
  clock.advance(1);
  const { poll } = poller(ctx);
  await poll([blocked]);
  clock.advance(3 * HOURS);
  await poll([blocked]);
  // A write from a writer whose clock ran an hour slow lands in a bucket the polls found empty and settled.
  const slowWriter: QueueContext = { ...ctx, nowMs: () => T0 + HOURS };
  await enqueue(slowWriter, blocked, 'west-late', { data: { region: 'west' }, runAfterMs: T0 + HOURS });

  const raised = await defineType(ctx, 'regional', limits(10));
  const claimed: string[] = [];
  for (let round = 0; round < 3; round++) {
    const invoker = new RecordingInvoker();
    await poll([raised], invoker);
    claimed.push(...invoker.jobs.map((job) => job.id));
    clock.advance(1_000);
  }
  expect(claimed.sort()).toEqual(['east-0', 'east-1', 'west-late']);
});
