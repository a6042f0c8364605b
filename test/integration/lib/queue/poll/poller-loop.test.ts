/** The poller's loop against DynamoDB Local, its sleeps driven by the manual clock. */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, test } from 'vitest';
import type { QueueContext } from '../../../../../lib/queue/context.js';
import { getJob } from '../../../../../lib/queue/read-job.js';
import { runPollerLoop } from '../../../../../lib/queue/poll/poller-loop.js';
import type { PollResult } from '../../../../../lib/queue/poll/poll-state.js';
import { RecordingInvoker, T0, defineType, enqueue, freshQueuePerTest } from '../../../../support/lib-fixtures.js';
import { asFunction } from '../../../../support/queue.js';

const POLL_INTERVAL_MS = 1_000;
const queue = freshQueuePerTest({ settings: { pollIntervalMs: POLL_INTERVAL_MS, shards: 1, claimPageSize: 1 } });

/** A sleep that moves the manual clock instead of waiting. */
function clockSleep(advance: (ms: number) => void, sleeps: number[] = []) {
  return async (ms: number): Promise<void> => {
    sleeps.push(ms);
    advance(ms);
  };
}

describe('runPollerLoop', () => {
  test('polls until its run time is over, sleeping the poll interval after each poll that found little, and claims a job on time when it falls due between polls', async () => {
    const { ctx, clock } = queue();
    const emails = await defineType(ctx, 'emails');
    await enqueue(ctx, emails, 'e-1', { runAfterMs: T0 + 2_500 });
    const polledAt: number[] = [];
    const sleeps: number[] = [];
    const invoker = new RecordingInvoker();

    const totals = await runPollerLoop(asFunction(ctx, 'poller'), {
      invoker,
      runForMs: 5_000,
      sleep: clockSleep(clock.advance, sleeps),
      onPoll: () => polledAt.push(clock.nowMs() - T0),
      onError: (error) => {
        throw error;
      },
    });

    // The poll at 2 s reads what falls due before the next poll, waits for the job's due time and claims it
    // then; its one-entry page was full, so the loop polls again at once. The last poll reads up to the run's
    // end, and the loop sleeps no longer.
    expect(polledAt).toEqual([0, 1_000, 2_500, 2_500, 3_500, 4_500]);
    expect(sleeps).toEqual([POLL_INTERVAL_MS, POLL_INTERVAL_MS, 500, POLL_INTERVAL_MS, POLL_INTERVAL_MS, 500]);
    expect(totals).toMatchObject({ claimed: 1, dispatched: 1 });
    expect(invoker.jobs[0]).toMatchObject({ id: 'e-1', claimedAtMs: T0 + 2_500 });
  });

  test('a saturated poll (a full page) is followed at once by another, without sleeping', async () => {
    const { ctx, clock } = queue();
    const emails = await defineType(ctx, 'emails');
    for (const id of ['a', 'b', 'c']) await enqueue(ctx, emails, id);
    const results: PollResult[] = [];
    const sleeps: number[] = [];

    const totals = await runPollerLoop(asFunction(ctx, 'poller'), {
      invoker: new RecordingInvoker(),
      runForMs: POLL_INTERVAL_MS,
      sleep: clockSleep(clock.advance, sleeps),
      onPoll: (result) => results.push(result),
    });

    expect(results.map((r) => [r.claimed, r.saturated])).toEqual([
      [1, true],
      [1, true],
      [1, true],
      [0, false],
    ]);
    expect(sleeps).toEqual([POLL_INTERVAL_MS]);
    expect(totals.claimed).toBe(3);
  });

  test('a full page of which nothing can be claimed (the type at its concurrency) waits like an idle poll', async () => {
    const { ctx, clock } = queue();
    const emails = await defineType(ctx, 'emails', { concurrency: 1 });
    for (const id of ['a', 'b', 'c']) await enqueue(ctx, emails, id);
    const results: PollResult[] = [];
    const sleeps: number[] = [];

    await runPollerLoop(asFunction(ctx, 'poller'), {
      invoker: new RecordingInvoker(),
      runForMs: 3 * POLL_INTERVAL_MS,
      sleep: clockSleep(clock.advance, sleeps),
      onPoll: (result) => results.push(result),
    });

    expect(results.map((r) => [r.claimed, r.saturated])).toEqual([
      [1, true],
      [0, false],
      [0, false],
      [0, false],
    ]);
    expect(sleeps).toEqual([POLL_INTERVAL_MS, POLL_INTERVAL_MS, POLL_INTERVAL_MS]);
  });

  test('a full page of a throttle key at limit 0 waits like an idle poll', async () => {
    const { ctx, clock } = queue();
    const regional = await defineType(ctx, 'regional', { throttle: { key_field: 'region', limits: { east: { limit: 0 } } } });
    for (const id of ['a', 'b']) await enqueue(ctx, regional, id, { data: { region: 'east' } });
    const results: PollResult[] = [];

    await runPollerLoop(asFunction(ctx, 'poller'), {
      invoker: new RecordingInvoker(),
      runForMs: 2 * POLL_INTERVAL_MS,
      sleep: clockSleep(clock.advance),
      onPoll: (result) => results.push(result),
    });

    expect(results.map((r) => [r.claimed, r.saturated])).toEqual([
      [0, false],
      [0, false],
    ]);
  });

  test('a poll that throws is reported, and the loop carries on and claims the job later', async () => {
    const { ctx, clock } = queue();
    const emails = await defineType(ctx, 'emails');
    await enqueue(ctx, emails, 'e-1');
    let failuresLeft = 1;
    const flakyDb = {
      send: (command: unknown) => {
        if (command instanceof QueryCommand && command.input.IndexName && failuresLeft > 0) {
          const key = command.input.ExpressionAttributeValues?.[':partition'];
          if (typeof key === 'string' && key.startsWith('Q#')) {
            failuresLeft--;
            return Promise.reject(new Error('ProvisionedThroughputExceeded'));
          }
        }
        return ctx.db.send(command as QueryCommand);
      },
    } as unknown as DynamoDBDocumentClient;
    const flakyCtx: QueueContext = { ...ctx, db: flakyDb };
    const errors: unknown[] = [];

    const totals = await runPollerLoop(flakyCtx, {
      invoker: new RecordingInvoker(),
      runForMs: 3 * POLL_INTERVAL_MS,
      sleep: clockSleep(clock.advance),
      onError: (error) => errors.push(error),
    });

    expect(errors).toHaveLength(1);
    expect(String(errors[0])).toContain('ProvisionedThroughputExceeded');
    expect(totals.claimed).toBe(1);
    expect((await getJob(ctx, 'emails', 'e-1'))?.status).toBe('running');
  });

  test('a job type created while the loop runs is picked up at the next job-type refresh', async () => {
    const { ctx, clock } = queue();
    const claimedAt: number[] = [];
    let created = false;
    const invoker = new RecordingInvoker();

    await runPollerLoop(asFunction(ctx, 'poller'), {
      invoker,
      runForMs: 6_000,
      jobTypesRefreshMs: 3_000,
      sleep: async (ms) => {
        clock.advance(ms);
        if (!created && clock.nowMs() >= T0 + 1_000) {
          created = true;
          const late = await defineType(ctx, 'late');
          await enqueue(ctx, late, 'l-1');
        }
      },
      onPoll: (result) => {
        if (result.claimed > 0) claimedAt.push(clock.nowMs() - T0);
      },
    });

    expect(claimedAt).toEqual([3_000]);
    expect(invoker.jobs.map((job) => job.id)).toEqual(['l-1']);
  });

});

describe('runPollerLoop while jobs arrive due', () => {
  const arriving = freshQueuePerTest({ settings: { pollIntervalMs: POLL_INTERVAL_MS, minPollIntervalMs: 50, shards: 1 } });

  /**
   * Runs the loop for 6 s while a job arrives, due at once, every `spacingMs` from 1 s to 3 s, beside jobs of
   * another type enqueued ahead, due at `scheduledAtMs` (from T0); returns when each was claimed.
   */
  async function runWithArrivals(spacingMs: number, scheduledAtMs: number[] = []) {
    const { ctx, clock } = arriving();
    const emails = await defineType(ctx, 'emails');
    const reports = await defineType(ctx, 'reports');
    for (const atMs of scheduledAtMs) await enqueue(ctx, reports, `s-${atMs}`, { runAfterMs: T0 + atMs });
    const arrivalsAtMs = Array.from({ length: Math.floor(2_000 / spacingMs) }, (_, i) => T0 + 1_000 + i * spacingMs);
    const sleeps: number[] = [];
    const invoker = new RecordingInvoker();
    await runPollerLoop(asFunction(ctx, 'poller'), {
      invoker,
      runForMs: 6_000,
      sleep: async (ms) => {
        sleeps.push(ms);
        clock.advance(ms);
        // Arrivals are enqueued between polls, as producers would.
        while (arrivalsAtMs.length > 0 && arrivalsAtMs[0]! <= clock.nowMs()) {
          const atMs = arrivalsAtMs.shift()!;
          await enqueue(ctx, emails, `a-${atMs - T0}`, { runAfterMs: atMs });
        }
      },
    });
    const lagsMs = new Map(invoker.jobs.filter((job) => job.type === 'emails').map((job) => [job.runAfterMs - T0, job.claimedAtMs! - job.runAfterMs]));
    const scheduledLagsMs = new Map(invoker.jobs.filter((job) => job.type === 'reports').map((job) => [job.runAfterMs - T0, job.claimedAtMs! - job.runAfterMs]));
    return { sleeps, lagsMs, scheduledLagsMs, claimed: invoker.jobs.length };
  }

  test('jobs enqueued ahead are claimed on time when the interval lengthens again as arrivals stop', async () => {
    // A poll paced by arrivals reads ahead only their spacing; the next waits the longer interval from its start.
    const spacingMs = 100;
    const scheduledAtMs = Array.from({ length: 20 }, (_, i) => 2_700 + i * spacingMs);
    const { scheduledLagsMs } = await runWithArrivals(200, scheduledAtMs);
    expect([...scheduledLagsMs.keys()].sort((a, b) => a - b)).toEqual(scheduledAtMs);
    // Each is claimed from a timer when due; the claim may read the manual clock after the sleep for the next
    // job moved it (this test's sleeps are instant), so up to one spacing. A poll waiting past what the one
    // before it read left them to the poll after: up to 650 ms.
    expect([...scheduledLagsMs].filter(([, lagMs]) => lagMs > spacingMs)).toEqual([]);
  });

  test('polls about as often as they arrive, so each waits about their spacing rather than a poll interval', async () => {
    const { sleeps, lagsMs, claimed } = await runWithArrivals(200);
    expect(claimed).toBe(10);
    // The first arrivals meet the idle interval; once a poll has found them, polls start every 200 ms. The poll
    // after the last read 200 ms ahead, so the next starts then, and reads a whole interval ahead again.
    expect(sleeps).toEqual([1_000, 1_000, 200, 200, 200, 200, 200, 200, 1_000, 1_000, 800]);
    expect([...lagsMs].filter(([dueAtMs]) => dueAtMs > 2_000).every(([, lagMs]) => lagMs <= 200)).toBe(true);
  });

  test('never polls more often than MIN_POLL_INTERVAL_MS, and goes back to the poll interval when they stop', async () => {
    const { sleeps, claimed } = await runWithArrivals(10);
    expect(claimed).toBe(200);
    expect(Math.min(...sleeps)).toBe(50);
    expect(sleeps.filter((ms) => ms === 50).length).toBeGreaterThan(10);
    expect(sleeps.at(-2)).toBe(POLL_INTERVAL_MS);
  });
});
