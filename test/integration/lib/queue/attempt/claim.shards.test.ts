/**
 * The claim lane's own shard count (CLAIM_SHARDS): claims spread over more partitions than a type's queue lane,
 * and everything that reads the claim lane (the sweeper, stats, listings) reads all of them.
 */
import { describe, expect, test } from 'vitest';
import { getJob } from '../../../../../lib/queue/read-job.js';
import { listJobs } from '../../../../../lib/queue/read/list-jobs.js';
import { statsOfType } from '../../../../../lib/queue/read/type-stats.js';
import { sweepOnce } from '../../../../../lib/queue/sweep/sweep.js';
import { claimJob } from '../../../../../lib/queue/attempt/claim.js';
import { bucketOf, lanePartition, shardOf } from '../../../../../lib/store/keys.js';
import type { QueueContext } from '../../../../../lib/queue/context.js';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { asFunction, createTestQueue } from '../../../../support/queue.js';
import { DyingInvoker, RecordingInvoker, T0, defineType, enqueue, freshQueuePerTest, poll, readItem } from '../../../../support/lib-fixtures.js';

const SHARDS = 1;
const CLAIM_SHARDS = 8;
const queue = freshQueuePerTest({ settings: { shards: SHARDS, claimShards: CLAIM_SHARDS } });

/** An id whose claim lands in the last claim shard, which no queue lane of one shard has. */
function idInLastClaimShard(): string {
  for (let i = 0; ; i++) if (shardOf(`job-${i}`, CLAIM_SHARDS) === CLAIM_SHARDS - 1) return `job-${i}`;
}

describe(`claims at SHARDS=${SHARDS}, CLAIM_SHARDS=${CLAIM_SHARDS}`, () => {
  test('a claim is filed in the claim-lane shard its id hashes to among CLAIM_SHARDS', async () => {
    const q = queue();
    const emails = await defineType(q.ctx, 'emails', { visibility_timeout_s: 30 });
    const id = idInLastClaimShard();
    await enqueue(q.ctx, emails, id);
    expect(await poll(q.ctx, [emails], new RecordingInvoker())).toMatchObject({ claimed: 1 });
    expect((await readItem(q, 'emails', id))?.gsi1pk).toBe(lanePartition({ kind: 'claims' }, bucketOf(T0 + 30_000, 60_000), CLAIM_SHARDS - 1));
  });

  test('the sweeper takes back a lapsed claim from a claim shard past SHARDS', async () => {
    const q = queue();
    const emails = await defineType(q.ctx, 'emails', { visibility_timeout_s: 30, attempts: 3, retry: { kind: 'fixed', delay_s: 5 } });
    const id = idInLastClaimShard();
    await enqueue(q.ctx, emails, id);
    await poll(q.ctx, [emails], new DyingInvoker(q.ctx));
    q.clock.set(T0 + 30_000);
    expect(await sweepOnce(asFunction(q.ctx, 'sweeper'), { customPolicies: {} })).toMatchObject({ requeued: 1 });
    expect(await getJob(q.ctx, 'emails', id)).toMatchObject({ status: 'queued', attempt: 1 });
  });

  test('stats count, and the listing of running jobs shows, a claim in a claim shard past SHARDS', async () => {
    const q = queue();
    const emails = await defineType(q.ctx, 'emails', { visibility_timeout_s: 30 });
    const id = idInLastClaimShard();
    await enqueue(q.ctx, emails, id);
    await poll(q.ctx, [emails], new RecordingInvoker());
    expect(await statsOfType(q.ctx, emails)).toMatchObject({ running: 1, due: 0 });
    expect((await listJobs(q.ctx, emails, { status: 'running', limit: 10 })).jobs.map((job) => job.id)).toEqual([id]);
  });
});

/** Counts the reads `client` sends from now on, by command. */
function countReads(client: DynamoDBClient): { queries: number; gets: number } {
  const counted = { queries: 0, gets: 0 };
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName === 'QueryCommand') counted.queries++;
      if (context.commandName === 'GetItemCommand') counted.gets++;
      return next(args);
    },
    { step: 'initialize' },
  );
  return counted;
}

const HOUR = 3_600_000;
const MINUTE = 60_000;

/**
 * A queue of one type at SHARDS=1 whose cursors have moved and adopted the bucket directory (an hour after their
 * first advance, queue/lanes/bucket-directory.ts), as in any deployment older than an hour.
 */
async function settledQueue(claimShards: number) {
  const q = await createTestQueue({ settings: { shards: 1, claimShards, bucketMs: MINUTE, cursorSafetyMarginMs: MINUTE } });
  const emails = await defineType(q.ctx, 'emails', { visibility_timeout_s: 30, attempts: 3, retry: { kind: 'fixed', delay_s: 5 } });
  const sweeper = asFunction(q.ctx, 'sweeper');
  for (const atMs of [T0 + 10 * MINUTE, T0 + 2 * HOUR]) {
    q.clock.set(atMs);
    await sweepOnce(sweeper, { customPolicies: {} });
    await poll(q.ctx, [emails], new RecordingInvoker());
  }
  return { q, emails, sweeper };
}

describe('what a claim shard costs a sweep of an idle queue', () => {
  const SWEEPS = 6;

  /** Reads per sweep and per poll of an idle queue at `claimShards`, a sweep every 10 s. */
  async function idleReads(claimShards: number): Promise<{ sweepQueries: number; sweepGets: number; pollQueries: number }> {
    const { q, emails, sweeper } = await settledQueue(claimShards);
    try {
      const sweeps = countReads(q.clientsOf('sweeper').base);
      const polls = countReads(q.clientsOf('poller').base);
      for (let i = 0; i < SWEEPS; i++) {
        q.clock.advance(10_000);
        await sweepOnce(sweeper, { customPolicies: {} });
        await poll(q.ctx, [emails], new RecordingInvoker());
      }
      return { sweepQueries: sweeps.queries / SWEEPS, sweepGets: sweeps.gets / SWEEPS, pollQueries: polls.queries / SWEEPS };
    } finally {
      await q.drop();
    }
  }

  test('each claim shard costs an idle sweep its cursor, a directory read and the two buckets it walks, not a query per backstop bucket; polls not at all', async () => {
    const one = await idleReads(1);
    const many = await idleReads(16);
    const perShard = { queries: (many.sweepQueries - one.sweepQueries) / 15, gets: (many.sweepGets - one.sweepGets) / 15 };
    console.log('idle reads per sweep', { claimShards1: one, claimShards16: many, perClaimShard: perShard });
    expect(perShard.queries).toBeLessThanOrEqual(4);
    expect(perShard.gets).toBeLessThanOrEqual(1);
    expect(many.pollQueries).toBe(one.pollQueries);
  });
});

describe("the sweeper's backstop, once the directory is adopted, still finds what landed behind a cursor", () => {
  test('a job written behind its lane\'s cursor is moved to the current bucket', async () => {
    const { q, emails, sweeper } = await settledQueue(4);
    try {
      const cursorBucket = bucketOf(q.clock.nowMs(), MINUTE) - 1;
      // A write older than the margin assumes: its bucket lies three behind the cursor.
      const staleWriter: QueueContext = { ...asFunction(q.ctx, 'api'), nowMs: () => (cursorBucket - 3) * MINUTE };
      await enqueue(staleWriter, emails, 'straggler');
      expect(await sweepOnce(sweeper, { customPolicies: {} })).toMatchObject({ stragglers: 1 });
      expect((await readItem(q, 'emails', 'straggler'))?.gsi1pk).toBe(lanePartition({ kind: 'queued', type: 'emails' }, bucketOf(q.clock.nowMs(), MINUTE), 0));
    } finally {
      await q.drop();
    }
  });

  test('a claim written behind the claim lane\'s cursor is taken back once it lapses', async () => {
    const { q, emails, sweeper } = await settledQueue(4);
    try {
      const cursorBucket = bucketOf(q.clock.nowMs(), MINUTE) - 1;
      // A poller whose clock ran three minutes behind claims a job due by it: the claim's deadline lands in a
      // bucket behind the claim lane's cursor.
      const lateClockMs = (cursorBucket - 3) * MINUTE + 1_000;
      await enqueue({ ...asFunction(q.ctx, 'api'), nowMs: () => lateClockMs }, emails, 'late-claim');
      expect(await claimJob({ ...asFunction(q.ctx, 'poller'), nowMs: () => lateClockMs }, { type: 'emails', id: 'late-claim' }, emails)).toMatchObject({ kind: 'claimed' });
      expect((await readItem(q, 'emails', 'late-claim'))?.gsi1pk).toMatch(new RegExp(`^C#${cursorBucket - 3}#`));
      expect(await sweepOnce(sweeper, { customPolicies: {} })).toMatchObject({ released: 1 });
      expect(await getJob(q.ctx, 'emails', 'late-claim')).toMatchObject({ status: 'queued', attempt: 0 });
    } finally {
      await q.drop();
    }
  });
});
