/**
 * Claiming ahead: a poll reads what falls due before the next poll and claims each job when it falls due,
 * never before, so a job enqueued ahead starts on time whatever the poll interval. Waits move the manual clock.
 */
import { describe, expect, test } from 'vitest';
import { pollOnce, CLAIM_AHEAD_SLICE_MS } from '../../../../../lib/queue/poll/poll.js';
import { type RecentClaims } from '../../../../../lib/queue/poll/poll-state.js';
import { type PollOptions } from '../../../../../lib/queue/poll/poll-state.js';
import { readInFlight } from '../../../../../lib/store/counters.js';
import { jobKey, queuedSortKey } from '../../../../../lib/store/keys.js';
import type { JobType } from '../../../../../lib/domain/job-type.js';
import { asFunction } from '../../../../support/queue.js';
import { eventually } from '../../../../support/eventually.js';
import { RecordingInvoker, T0, defineType, enqueue, freshQueuePerTest } from '../../../../support/lib-fixtures.js';

const queue = freshQueuePerTest({ settings: { shards: 2 } });

function pollAhead(jobTypes: JobType[], advance: (ms: number) => void, extra: Partial<PollOptions> = {}) {
  const invoker = new RecordingInvoker();
  const sleeps: number[] = [];
  const options: PollOptions = {
    jobTypes,
    invoker,
    cursors: new Map(),
    claimAheadMs: 500,
    sleep: async (ms) => {
      sleeps.push(ms);
      advance(ms);
    },
    ...extra,
  };
  return { invoker, sleeps, options };
}

describe('claiming ahead', () => {
  test('a job falling due before the next poll is claimed exactly when it falls due, by this poll', async () => {
    const { ctx, clock } = queue();
    const emails = await defineType(ctx, 'emails');
    await enqueue(ctx, emails, 'soon', { runAfterMs: T0 + 300 });
    const { invoker, options } = pollAhead([emails], clock.advance);

    const result = await pollOnce(asFunction(ctx, 'poller'), options);

    expect(result).toMatchObject({ claimed: 1, dispatched: 1, lostRaces: 0 });
    expect(invoker.jobs[0]).toMatchObject({ id: 'soon', claimedAtMs: T0 + 300 });
  });

  test('a job due after the look-ahead is left for a later poll, and nothing waits for it', async () => {
    const { ctx, clock } = queue();
    const emails = await defineType(ctx, 'emails');
    await enqueue(ctx, emails, 'later', { runAfterMs: T0 + 501 });
    const { invoker, sleeps, options } = pollAhead([emails], clock.advance);

    expect(await pollOnce(asFunction(ctx, 'poller'), options)).toMatchObject({ claimed: 0 });
    expect(invoker.jobs).toEqual([]);
    expect(sleeps).toEqual([]);
  });

  test('jobs due within one slice go to a worker together, when the last of them is due; a later slice goes on its own', async () => {
    const { ctx, clock } = queue();
    const emails = await defineType(ctx, 'emails');
    await enqueue(ctx, emails, 'a', { runAfterMs: T0 + 100 });
    await enqueue(ctx, emails, 'b', { runAfterMs: T0 + 100 + CLAIM_AHEAD_SLICE_MS - 1 });
    await enqueue(ctx, emails, 'c', { runAfterMs: T0 + 400 });
    // A slice's claims run on while the poll waits for the next slice, and take real time the manual clock does not
    // pass: it moves on only once every slice before this wait has reached the worker, as it would have by then.
    const invoker = new RecordingInvoker();
    let waits = 0;
    const { options } = pollAhead([emails], clock.advance, {
      invoker,
      sleep: async (ms) => {
        const slicesBefore = waits++;
        await eventually(async () => invoker.batches.length, (handedOver) => handedOver >= slicesBefore);
        clock.advance(ms);
      },
    });

    await pollOnce(asFunction(ctx, 'poller'), options);

    expect(invoker.batches.map((batch) => batch.jobs.map((job) => job.id).sort())).toEqual([['a', 'b'], ['c']]);
    expect(invoker.jobs.map((job) => [job.id, job.claimedAtMs! - T0]).sort()).toEqual([
      ['a', 100 + CLAIM_AHEAD_SLICE_MS - 1],
      ['b', 100 + CLAIM_AHEAD_SLICE_MS - 1],
      ['c', 400],
    ]);
  });

  test('jobs due now are handed to a worker before the poll waits for those due later', async () => {
    const { ctx, clock } = queue();
    const emails = await defineType(ctx, 'emails');
    await enqueue(ctx, emails, 'now');
    await enqueue(ctx, emails, 'soon', { runAfterMs: T0 + 200 });
    const { invoker, options } = pollAhead([emails], clock.advance);

    await pollOnce(asFunction(ctx, 'poller'), options);

    expect(invoker.batches.map((batch) => batch.jobs.map((job) => job.id))).toEqual([['now'], ['soon']]);
  });

  test('a type with a rate limit claims only what is due now', async () => {
    const { ctx, clock } = queue();
    const rated = await defineType(ctx, 'rated', { rate_limit_per_s: 100 });
    await enqueue(ctx, rated, 'r', { runAfterMs: T0 + 100 });
    const { invoker, sleeps, options } = pollAhead([rated], clock.advance);

    expect(await pollOnce(asFunction(ctx, 'poller'), options)).toMatchObject({ claimed: 0 });
    expect(invoker.jobs).toEqual([]);
    expect(sleeps).toEqual([]);
  });

  test('a type with a concurrency limit claims ahead within its limit, reserving each slice when it falls due', async () => {
    const { ctx, clock } = queue();
    const limited = await defineType(ctx, 'limited', { concurrency: 2 });
    for (const id of ['a', 'b', 'c']) await enqueue(ctx, limited, id, { runAfterMs: T0 + 100 });
    const { invoker, options } = pollAhead([limited], clock.advance);

    expect(await pollOnce(asFunction(ctx, 'poller'), options)).toMatchObject({ claimed: 2 });
    expect(invoker.jobs.map((job) => job.claimedAtMs! - T0)).toEqual([100, 100]);
    expect((await readInFlight(ctx, 'limited', [])).type).toBe(2);
  });

  test('an entry this poller has just claimed is skipped, so an index that lags costs no claim bound to fail', async () => {
    const { ctx, clock } = queue();
    const emails = await defineType(ctx, 'emails');
    const { job } = await enqueue(ctx, emails, 'shown');
    const recentClaims: RecentClaims = new Map([[`${jobKey('emails', 'shown').pk}\u0000${queuedSortKey(job.runAfterMs, 'shown')}`, T0 + 1_000]]);
    const { invoker, options } = pollAhead([emails], clock.advance, { recentClaims });

    expect(await pollOnce(asFunction(ctx, 'poller'), options)).toMatchObject({ claimed: 0, lostRaces: 0 });
    expect(invoker.jobs).toEqual([]);
  });

  test('an idle lane is not read into the next bucket, so waiting costs what it did; a busy one is', async () => {
    const { ctx, clock } = queue();
    const emails = await defineType(ctx, 'emails');
    const nextBucketStartMs = (Math.floor(T0 / ctx.settings.bucketMs) + 1) * ctx.settings.bucketMs;
    clock.advance(nextBucketStartMs - 200 - T0);
    await enqueue(ctx, emails, 'next-bucket', { runAfterMs: nextBucketStartMs + 100 });
    const idle = pollAhead([emails], clock.advance);
    expect(await pollOnce(asFunction(ctx, 'poller'), idle.options)).toMatchObject({ claimed: 0 });

    await enqueue(ctx, emails, 'due-now');
    const busy = pollAhead([emails], clock.advance);
    expect(await pollOnce(asFunction(ctx, 'poller'), busy.options)).toMatchObject({ claimed: 2 });
    expect(busy.invoker.jobs.find((job) => job.id === 'next-bucket')?.claimedAtMs).toBe(nextBucketStartMs + 100);
  });

  test('a stop signal ends the wait: the job stays queued for the next poll', async () => {
    const { ctx, clock } = queue();
    const emails = await defineType(ctx, 'emails');
    await enqueue(ctx, emails, 'soon', { runAfterMs: T0 + 300 });
    const stop = new AbortController();
    const { invoker, options } = pollAhead([emails], clock.advance, {
      signal: stop.signal,
      sleep: async () => stop.abort(),
    });

    expect(await pollOnce(asFunction(ctx, 'poller'), options)).toMatchObject({ claimed: 0 });
    expect(invoker.jobs).toEqual([]);
  });
});
