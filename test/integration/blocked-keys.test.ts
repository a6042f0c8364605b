/**
 * A throttle key with no room holds back only its own jobs, however many of them are due ahead of other keys'
 * in a shard (more than a poll's page), and its backlog is read once, not at every poll.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { expect, test } from 'vitest';
import type { BlockedRuns } from '../../lib/queue/blocked-runs.js';
import type { QueueContext } from '../../lib/queue/context.js';
import { pollOnce, type CursorCache } from '../../lib/queue/poll-once.js';
import type { JobType } from '../../lib/domain/job-type.js';
import { runWorkerBatch } from '../../lib/queue/worker.js';
import { asFunction } from '../support/queue.js';
import { defineType, enqueue, freshQueuePerTest, RecordingInvoker, T0, WORKER } from './lib-fixtures.js';

const PAGE = 5;
const queue = freshQueuePerTest({ settings: { claimPageSize: PAGE, shards: 1 } });

/** One poller's memory across its polls, as the loop keeps it, and the entries its queries returned. */
function poller(ctx: QueueContext) {
  const memory = { cursors: new Map() as CursorCache, blockedRuns: new Map() as BlockedRuns };
  const read = { entries: 0 };
  const pollerCtx = asFunction(ctx, 'poller');
  const countingDb = {
    send: async (command: unknown) => {
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
