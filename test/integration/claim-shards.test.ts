/**
 * The claim lane's own shard count (CLAIM_SHARDS): claims spread over more partitions than a type's queue lane,
 * and everything that reads the claim lane (the sweeper, stats, listings) reads all of them.
 */
import { describe, expect, test } from 'vitest';
import { getJob } from '../../lib/queue/jobs.js';
import { listJobs } from '../../lib/queue/job-listing.js';
import { statsOfType } from '../../lib/queue/stats.js';
import { sweepOnce } from '../../lib/queue/sweeper.js';
import { bucketOf, lanePartition, shardOf } from '../../lib/store/keys.js';
import { asFunction } from '../support/queue.js';
import { DyingInvoker, RecordingInvoker, T0, defineType, enqueue, freshQueuePerTest, poll, readItem } from './lib-fixtures.js';

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
