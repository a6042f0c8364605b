/**
 * `throttle.limits[<key>].rate_per_s`: each rate-limited throttle key (and, under `*`, each key not named) has a
 * token bucket of its own in the table, shared by every poller, beside the key's in-flight limit and the type's
 * own rate; a key out of tokens holds back only its own jobs.
 */
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, test } from 'vitest';
import type { JobType } from '../../../../../lib/domain/job-type.js';
import type { BlockedRuns } from '../../../../../lib/queue/poll/blocked-runs.js';
import type { QueueContext } from '../../../../../lib/queue/context.js';
import { pollOnce } from '../../../../../lib/queue/poll/poll.js';
import { type SettledGaps } from '../../../../../lib/queue/poll/poll-state.js';
import { type CursorCache } from '../../../../../lib/queue/poll/poll-state.js';
import { type PollResult } from '../../../../../lib/queue/poll/poll-state.js';
import type { RateBucketCache } from '../../../../../lib/queue/limits/rate-tokens.js';
import { keyRateBucketKey } from '../../../../../lib/store/keys.js';
import { asFunction, type TestQueue } from '../../../../support/queue.js';
import { defineType, enqueue, freshQueuePerTest, RecordingInvoker, T0 } from '../../../../support/lib-fixtures.js';

const PAGE = 5;

/** A poller as the loop keeps it across polls: its own bucket cache, cursors and blocked runs. */
function poller(ctx: QueueContext) {
  const memory = { cursors: new Map() as CursorCache, rateBuckets: new Map() as RateBucketCache, blockedRuns: new Map() as BlockedRuns, settledGaps: new Map() as SettledGaps };
  const invoker = new RecordingInvoker();
  return {
    invoker,
    poll: (jobTypes: JobType[]): Promise<PollResult> => pollOnce(asFunction(ctx, 'poller'), { jobTypes, invoker, ...memory }),
    /** The ids claimed so far, in the order they were handed to workers. */
    claimedIds: (): string[] => invoker.jobs.map((job) => job.id),
  };
}

async function enqueueKeyed(ctx: QueueContext, jobType: JobType, key: string, count: number, firstDueMs: number): Promise<void> {
  for (let i = 0; i < count; i++) await enqueue(ctx, jobType, `${key}-${i}`, { throttleKey: key, runAfterMs: firstDueMs + i });
}

const countByKey = (ids: string[]): Map<string, number> => {
  const counts = new Map<string, number>();
  for (const id of ids) {
    const key = id.slice(0, id.lastIndexOf('-'));
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return counts;
};

/** Two pollers polling at the same instants for a few seconds of the test clock, over two keys' interleaved backlogs. */
async function twoPollersRacing({ ctx, clock }: TestQueue): Promise<void> {
  const paced = await defineType(ctx, 'paced', { throttle: { limits: { fast: { rate_per_s: 5 }, slow: { rate_per_s: 2 } } } });
  await enqueueKeyed(ctx, paced, 'fast', 60, T0 - 60_000);
  await enqueueKeyed(ctx, paced, 'slow', 60, T0 - 60_000);
  const pollers = [poller(ctx), poller(ctx)];
  const SECONDS = 4;
  const STEP_MS = 100;
  const bySecond: Map<string, number>[] = [];
  for (let second = 0; second < SECONDS; second++) {
    const before = pollers.flatMap((p) => p.claimedIds());
    for (let step = 0; step < 1_000 / STEP_MS; step++) {
      // Both pollers poll at the same instant, each from what it last saw of the buckets.
      await Promise.all(pollers.map((p) => p.poll([paced])));
      clock.advance(STEP_MS);
    }
    const after = pollers.flatMap((p) => p.claimedIds());
    bySecond.push(countByKey(after.filter((id) => !before.includes(id))));
  }
  // The first second also spends the full bucket each key starts with: one second of its rate.
  expect(bySecond[0]?.get('fast')).toBeLessThanOrEqual(2 * 5);
  expect(bySecond[0]?.get('slow')).toBeLessThanOrEqual(2 * 2);
  for (const counts of bySecond.slice(1)) {
    expect(counts.get('fast')).toBeLessThanOrEqual(5);
    expect(counts.get('slow')).toBeLessThanOrEqual(2);
  }
  const total = countByKey(pollers.flatMap((p) => p.claimedIds()));
  // Tokens lost to a compare-and-set raced by the other poller are taken at the next poll: no second falls behind.
  expect(total.get('fast')).toBeGreaterThanOrEqual(5 * SECONDS);
  expect(total.get('slow')).toBeGreaterThanOrEqual(2 * SECONDS);
  expect(new Set(pollers.flatMap((p) => p.claimedIds())).size).toBe(pollers.flatMap((p) => p.claimedIds()).length);
}

describe('per-key rates', () => {
  const queue = freshQueuePerTest({ settings: { shards: 1 } });

  test('two pollers racing claim each key at its own rate: every second after the first, at most the rate, and the rate over the run', () =>
    twoPollersRacing(queue()));

  test('under "*", each key not named has a bucket of its own at that rate', async () => {
    const { ctx, clock } = queue();
    const paced = await defineType(ctx, 'paced', { throttle: { limits: { '*': { rate_per_s: 2 } } } });
    for (const key of ['x', 'y', 'z']) await enqueueKeyed(ctx, paced, key, 4, T0 - 60_000);
    const one = poller(ctx);

    await one.poll([paced]);
    expect(countByKey(one.claimedIds())).toEqual(new Map([['x', 2], ['y', 2], ['z', 2]]));
    clock.advance(500);
    await one.poll([paced]);
    expect(countByKey(one.claimedIds())).toEqual(new Map([['x', 3], ['y', 3], ['z', 3]]));
  });

  test('a named key without a rate is not held to the rate of "*": its entry replaces the one of "*" whole', async () => {
    const { ctx } = queue();
    const paced = await defineType(ctx, 'paced', { throttle: { limits: { '*': { rate_per_s: 1 }, vip: { limit: 100 } } } });
    await enqueueKeyed(ctx, paced, 'vip', 4, T0 - 60_000);
    await enqueueKeyed(ctx, paced, 'other', 4, T0 - 60_000);
    const one = poller(ctx);

    await one.poll([paced]);

    expect(countByKey(one.claimedIds())).toEqual(new Map([['vip', 4], ['other', 1]]));
  });

  test("a key out of tokens spends none of the type's rate: the type's tokens go to the other keys' jobs", async () => {
    const { ctx } = queue();
    const paced = await defineType(ctx, 'paced', { rate_limit_per_s: 4, throttle: { limits: { hot: { rate_per_s: 1 } } } });
    await enqueueKeyed(ctx, paced, 'hot', 4, T0 - 60_000);
    await enqueueKeyed(ctx, paced, 'other', 4, T0 - 30_000);
    const one = poller(ctx);

    await one.poll([paced]);

    expect(countByKey(one.claimedIds())).toEqual(new Map([['hot', 1], ['other', 3]]));
  });

  test("the type's rate and a key's rate both hold, and a key's tokens the type's rate left unused go back to its bucket", async () => {
    const { ctx, clock } = queue();
    const paced = await defineType(ctx, 'paced', { rate_limit_per_s: 3, throttle: { limits: { a: { rate_per_s: 2 }, b: { rate_per_s: 10 } } } });
    await enqueueKeyed(ctx, paced, 'a', 5, T0 - 60_000);
    await enqueueKeyed(ctx, paced, 'b', 20, T0 - 30_000);
    const one = poller(ctx);

    await one.poll([paced]);
    expect(countByKey(one.claimedIds())).toEqual(new Map([['a', 2], ['b', 1]]));
    await one.poll([paced]);
    expect(one.claimedIds()).toHaveLength(3);
    clock.advance(1_000);
    await one.poll([paced]);
    // The type's 3 tokens: a's 2 new ones, then b's, of which 9 were put back after the first poll.
    expect(countByKey(one.claimedIds())).toEqual(new Map([['a', 4], ['b', 2]]));
    const bucket = await ctx.db.send(new GetCommand({ TableName: ctx.settings.tableName, Key: keyRateBucketKey('paced', 'b'), ConsistentRead: true }));
    expect(bucket.Item?.tokens).toBe(9);
  });

  test('a key with both an in-flight limit and a rate is held to the stricter of the two', async () => {
    const { ctx, clock } = queue();
    const paced = await defineType(ctx, 'paced', { throttle: { limits: { east: { limit: 2, rate_per_s: 3 } } } });
    await enqueueKeyed(ctx, paced, 'east', 10, T0 - 60_000);
    const one = poller(ctx);

    await one.poll([paced]);
    // The limit: 2 in flight (the recording invoker never ends a job), of the 3 tokens.
    expect(one.claimedIds().sort()).toEqual(['east-0', 'east-1']);
    clock.advance(1_000);
    await one.poll([paced]);
    expect(one.claimedIds()).toHaveLength(2);
  });

  test('an idle bucket is left to expire: its TTL falls after the time it would be full again', async () => {
    const { ctx } = queue();
    const paced = await defineType(ctx, 'paced', { throttle: { limits: { east: { rate_per_s: 0.5 } } } });
    await enqueueKeyed(ctx, paced, 'east', 3, T0 - 60_000);

    await poller(ctx).poll([paced]);

    const bucket = await ctx.db.send(new GetCommand({ TableName: ctx.settings.tableName, Key: keyRateBucketKey('paced', 'east'), ConsistentRead: true }));
    // Empty after one claim, full again 2 s later; removed no sooner than an hour past that.
    expect(bucket.Item).toMatchObject({ tokens: 0, refilledAtMs: T0 });
    expect(bucket.Item?.purgeAtS).toBe(Math.ceil((T0 + 2_000 + 3_600_000) / 1000));
  });

  test('a claim that landed but whose answer was an error keeps its token: the bucket it emptied stays empty', async () => {
    const testQueue = queue();
    const { ctx } = testQueue;
    const paced = await defineType(ctx, 'paced', { throttle: { limits: { east: { rate_per_s: 1 } } } });
    await enqueueKeyed(ctx, paced, 'east', 1, T0 - 60_000);
    let failNextClaim = true;
    testQueue.clientsOf('poller').base.middlewareStack.add(
      (next, context) => async (args) => {
        const result = await next(args);
        const input = args.input as { UpdateExpression?: string };
        if (context.commandName === 'UpdateItemCommand' && failNextClaim && input.UpdateExpression?.includes('claimToken = :token') === true) {
          failNextClaim = false;
          throw new Error('the answer of a claim that landed was lost');
        }
        return result;
      },
      { step: 'initialize', name: 'loseClaimAnswer' },
    );
    await expect(poller(ctx).poll([paced])).rejects.toThrow('lost');

    await enqueue(ctx, paced, 'east-late', { throttleKey: 'east', runAfterMs: T0 });
    const next = poller(ctx);
    await next.poll([paced]);
    expect(next.claimedIds()).toEqual([]);
  });

  test.each(['__proto__', 'constructor', 'toString', 'k'.repeat(128), 'ключ 🔑'])('a job whose throttle key is %j gets a bucket of its own under "*"', async (key) => {
    const { ctx, clock } = queue();
    const paced = await defineType(ctx, 'paced', { throttle: { limits: { '*': { rate_per_s: 1 } } } });
    for (let i = 0; i < 3; i++) await enqueue(ctx, paced, `hostile-${i}`, { throttleKey: key, runAfterMs: T0 - 60_000 + i });
    await enqueueKeyed(ctx, paced, 'plain', 3, T0 - 30_000);
    const one = poller(ctx);

    await one.poll([paced]);
    expect(one.claimedIds().sort()).toEqual(['hostile-0', 'plain-0']);
    clock.advance(1_000);
    await one.poll([paced]);
    expect(one.claimedIds().sort()).toEqual(['hostile-0', 'hostile-1', 'plain-0', 'plain-1']);
  });
});

describe(`behind a hot key's backlog of more than a page (${PAGE} entries)`, () => {
  const queue = freshQueuePerTest({ settings: { claimPageSize: PAGE, shards: 1 } });

  test("a hot key out of tokens does not delay a cold key's jobs due after its backlog, nor jobs without a key", async () => {
    const { ctx } = queue();
    const paced = await defineType(ctx, 'paced', { throttle: { limits: { hot: { rate_per_s: 1 } } } });
    // Three pages of the hot key's jobs ahead of the cold key's in the lane.
    await enqueueKeyed(ctx, paced, 'hot', 3 * PAGE + 2, T0 - 60_000);
    await enqueueKeyed(ctx, paced, 'cold', 2, T0 - 1_000);
    await enqueue(ctx, paced, 'keyless', { runAfterMs: T0 - 500 });
    const one = poller(ctx);

    await one.poll([paced]);

    expect(one.claimedIds().sort()).toEqual(['cold-0', 'cold-1', 'hot-0', 'keyless']);
  });

  test("a hot key's backlog is claimed oldest first as its bucket refills, while later polls read past it", async () => {
    const { ctx, clock } = queue();
    const paced = await defineType(ctx, 'paced', { throttle: { limits: { hot: { rate_per_s: 1 } } } });
    await enqueueKeyed(ctx, paced, 'hot', 3 * PAGE + 2, T0 - 60_000);
    const one = poller(ctx);
    await one.poll([paced]);
    await enqueueKeyed(ctx, paced, 'cold', 2, T0);
    clock.advance(200);

    await one.poll([paced]);
    expect(one.claimedIds().sort()).toEqual(['cold-0', 'cold-1', 'hot-0']);
    for (let second = 1; second <= 3; second++) {
      clock.advance(1_000);
      await one.poll([paced]);
    }
    expect(one.claimedIds().filter((id) => id.startsWith('hot-'))).toEqual(['hot-0', 'hot-1', 'hot-2', 'hot-3']);
  });

  test('two pollers racing over interleaved backlogs of many pages claim each key at its own rate, the slow key not pacing the fast one', () =>
    twoPollersRacing(queue()));
});
