/**
 * A shard added by raising SHARDS on a type a week old, against DynamoDB Local: its cursor item does not exist
 * yet, and its first walk begins at the type's creation. One-minute buckets and a one-minute safety margin, as
 * in lane-walk.catch-up.test.ts; the queue runs with one shard for a week, then with two. The type is made as a
 * release before types said from when their lanes' directory is complete made it: a type made by this release
 * says so for every shard of its lanes (lane-walk.new-type.test.ts).
 */
import { describe, expect, test } from 'vitest';
import type { JobType } from '../../../../../lib/domain/job-type.js';
import type { QueueContext } from '../../../../../lib/queue/context.js';
import { getJob } from '../../../../../lib/queue/read-job.js';
import { MAX_QUERIES_PER_SCAN } from '../../../../../lib/queue/lanes/lane-walk.js';
import { pollOnce } from '../../../../../lib/queue/poll/poll.js';
import { runPollerLoop } from '../../../../../lib/queue/poll/poller-loop.js';
import { sweepOnce } from '../../../../../lib/queue/sweep/sweep.js';
import { readCursor, readLaneCursor } from '../../../../../lib/store/due-index.js';
import { bucketOf, shardOf, type Lane } from '../../../../../lib/store/keys.js';
import type { QueueFunctionName } from '../../../../../infra/local/aws/iam/stack-policies.js';
import { asFunction, type TestClock } from '../../../../support/queue.js';
import { RecordingInvoker, T0, defineTypeOfOlderRelease, enqueue, freshQueuePerTest, poll } from '../../../../support/lib-fixtures.js';
import { countQueries, withLatency } from '../../../../support/sdk-calls.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const queue = freshQueuePerTest({ settings: { shards: 1, bucketMs: MINUTE, cursorSafetyMarginMs: MINUTE } });

/**
 * What the new shard's first walk may query: the buckets from the type's creation to where the old shard's
 * cursor trusts the directory from (an hour after it first advanced, at T0 + 5 min), the directory read, and the
 * recorded buckets and the few unsettled ones near now.
 */
const FIRST_WALK_QUERIES = 80;

/** `fn`'s context once SHARDS is raised to two (CLAIM_SHARDS, not set, follows it). */
const withTwoShards = (ctx: QueueContext, fn: QueueFunctionName): QueueContext => {
  const as = asFunction(ctx, fn);
  return { ...as, settings: { ...as.settings, shards: 2, claimShards: 2 } };
};

/** An id that lands in shard 1 of two. */
function idInNewShard(prefix: string): string {
  for (let i = 0; ; i++) if (shardOf(`${prefix}-${i}`, 2) === 1) return `${prefix}-${i}`;
}

const queuedLane = (jobType: JobType): Lane => ({ kind: 'queued', type: jobType.name });

/** A type created at T0 whose one shard was polled from T0 + 5 min for two hours, and the sweeper with it. */
async function typeWithOneShard(ctx: QueueContext, clock: TestClock): Promise<JobType> {
  const emails = await defineTypeOfOlderRelease(ctx, 'emails');
  const sweep = () => sweepOnce(asFunction(ctx, 'sweeper'), { customPolicies: {} });
  clock.set(T0 + 5 * MINUTE);
  await poll(ctx, [emails], new RecordingInvoker());
  await sweep();
  clock.set(T0 + 2 * HOUR);
  for (let polls = 0; polls < 10 && (await poll(ctx, [emails], new RecordingInvoker())).behind; polls++);
  await sweep();
  expect(await readCursor(ctx, queuedLane(emails), 0)).toBe(bucketOf(T0 + 2 * HOUR, MINUTE) - 1);
  return emails;
}

describe('a shard added by raising SHARDS on a type a week old', () => {
  test('its first poll claims what is due in it, within one scan and without walking the week bucket by bucket', async () => {
    const q = queue();
    const { ctx, clock } = q;
    const emails = await typeWithOneShard(ctx, clock);
    clock.set(T0 + 6 * DAY);
    const id = idInNewShard('after-raise');
    await enqueue(withTwoShards(ctx, 'api'), emails, id, { runAfterMs: T0 + 6 * DAY + 12 * HOUR });
    clock.set(T0 + 7 * DAY);

    const queries = countQueries(q.clientsOf('poller').base);
    const invoker = new RecordingInvoker();
    const result = await pollOnce(withTwoShards(ctx, 'poller'), { jobTypes: [emails], invoker, cursors: new Map(), shards: [1] });
    expect(result).toMatchObject({ claimed: 1, behind: false });
    expect(invoker.jobs.map((job) => job.id)).toEqual([id]);
    expect(queries.count).toBeLessThanOrEqual(FIRST_WALK_QUERIES);
    expect(queries.count).toBeLessThan(MAX_QUERIES_PER_SCAN);
  });

  test("its first poll moves its cursor up to now, and its cursor item takes the directory's start from the old shard's", async () => {
    const q = queue();
    const { ctx, clock } = q;
    const emails = await typeWithOneShard(ctx, clock);
    clock.set(T0 + 7 * DAY);
    const poller = withTwoShards(ctx, 'poller');
    await pollOnce(poller, { jobTypes: [emails], invoker: new RecordingInvoker(), cursors: new Map(), shards: [1] });
    const old = await readLaneCursor(ctx, queuedLane(emails), 0);
    const added = await readLaneCursor(ctx, queuedLane(emails), 1);
    expect(added.directoryFromBucket).toBe(old.directoryFromBucket);
    expect(added.bucket).toBe(bucketOf(T0 + 7 * DAY, MINUTE) - 1);
  });

  test('is caught up within one poller invocation, its due job claimed in its first polls', async () => {
    const q = queue();
    const { ctx, clock } = q;
    const emails = await typeWithOneShard(ctx, clock);
    clock.set(T0 + 4 * DAY);
    const id = idInNewShard('midweek');
    await enqueue(withTwoShards(ctx, 'api'), emails, id);
    clock.set(T0 + 7 * DAY);

    withLatency(q.clientsOf('poller').base, clock, 10);
    const poller = withTwoShards(ctx, 'poller');
    const invoker = new RecordingInvoker();
    const startedAtMs = clock.nowMs();
    const totals = await runPollerLoop(poller, { invoker, runForMs: poller.settings.pollerRunMs, shards: [0, 1], sleep: async (ms) => clock.advance(ms) });
    expect(totals.claimed).toBe(1);
    expect(invoker.jobs.map((job) => job.id)).toEqual([id]);
    expect(invoker.jobs[0]?.claimedAtMs).toBeLessThan(startedAtMs + 5_000);
    expect(await readCursor(ctx, queuedLane(emails), 1)).toBeGreaterThanOrEqual(bucketOf(clock.nowMs(), MINUTE) - 2);
  });

  test("the sweeper's first sweep of the new claim-lane shard takes back the claim that lapsed in it, within one scan", async () => {
    const q = queue();
    const { ctx, clock } = q;
    const emails = await typeWithOneShard(ctx, clock);
    clock.set(T0 + 6 * DAY);
    const id = idInNewShard('dies');
    await enqueue(withTwoShards(ctx, 'api'), emails, id);
    expect(await pollOnce(withTwoShards(ctx, 'poller'), { jobTypes: [emails], invoker: new RecordingInvoker(), cursors: new Map() })).toMatchObject({ claimed: 1 });
    clock.set(T0 + 7 * DAY);

    const queries = countQueries(q.clientsOf('sweeper').base);
    expect(await sweepOnce(withTwoShards(ctx, 'sweeper'), { customPolicies: {}, shards: [1] })).toMatchObject({ released: 1 });
    expect(await getJob(ctx, 'emails', id)).toMatchObject({ status: 'queued', attempt: 0 });
    expect(queries.count).toBeLessThanOrEqual(FIRST_WALK_QUERIES);
  });
});
