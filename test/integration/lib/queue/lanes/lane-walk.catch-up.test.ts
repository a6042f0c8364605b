/**
 * Lanes far behind their cursor, against DynamoDB Local: a poller back after an outage, a sweeper back after a
 * day. One shard, one-minute buckets and a one-minute safety margin, as in lane-walk.cursor.test.ts. A walk reads only the
 * buckets the bucket directory recorded among those that settled, from an hour after its cursor first advanced
 * (DIRECTORY_ADOPTION_MS); before that, and near now, it queries bucket by bucket, at most MAX_QUERIES_PER_SCAN
 * a scan. The types here are made as a release before types said from when their lanes' directory is complete
 * made them, so their walks follow that rule; one made by this release trusts it from its creation
 * (lane-walk.new-type.test.ts).
 */
import { describe, expect, test } from 'vitest';
import type { JobType } from '../../../../../lib/domain/job-type.js';
import type { QueueContext } from '../../../../../lib/queue/context.js';
import { getJob } from '../../../../../lib/queue/read-job.js';
import { MAX_QUERIES_PER_SCAN } from '../../../../../lib/queue/lanes/lane-walk.js';
import { pollOnce } from '../../../../../lib/queue/poll/poll.js';
import { runPollerLoop } from '../../../../../lib/queue/poll/poller-loop.js';
import { sweepOnce } from '../../../../../lib/queue/sweep/sweep.js';
import { readCursor } from '../../../../../lib/store/due-index.js';
import { bucketOf, type Lane } from '../../../../../lib/store/keys.js';
import { createPollerHandler } from '../../../../../functions/poller/app.js';
import type { QueueMetrics } from '../../../../../functions/shared/metrics.js';
import { asFunction, type TestClock } from '../../../../support/queue.js';
import { RecordingInvoker, T0, defineType, defineTypeOfOlderRelease, enqueue, freshQueuePerTest, poll } from '../../../../support/lib-fixtures.js';
import { countQueries, withLatency } from '../../../../support/sdk-calls.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const SETTINGS = { shards: 1, bucketMs: MINUTE, cursorSafetyMarginMs: MINUTE };
/** "A few dozen": what one scan may query, with the directory read and the sweeper's backstop besides. */
const FEW_DOZEN = 48;

const queue = freshQueuePerTest({ settings: SETTINGS });
/** Longer than one scan walks, bucket by bucket: two and a half scans' worth. */
const WALK_HOURS = Math.ceil((2.5 * MAX_QUERIES_PER_SCAN * MINUTE) / HOUR);

const queuedLane = (jobType: JobType): Lane => ({ kind: 'queued', type: jobType.name });
/** Where a cursor kept up to date stands at `nowMs`, on a minute: just before the bucket that ended a margin ago. */
const caughtUpBucket = (nowMs: number): number => bucketOf(nowMs, MINUTE) - 1;

/** Polls until the walk is no longer behind, as the loop does; how many polls it took. */
async function pollUntilCaughtUp(ctx: QueueContext, jobType: JobType): Promise<number> {
  for (let polls = 1; polls <= 100; polls++) if (!(await poll(ctx, [jobType], new RecordingInvoker())).behind) return polls;
  throw new Error('the lane never caught up');
}

/**
 * A type whose poller (and `sweep`, when given) ran from T0 for two hours, caught up, and then stopped: their
 * cursors first advanced at T0 + 5 min, so the directory is trusted from T0 + 1 h 5 min.
 */
async function typePolledUntilTwoHours(ctx: QueueContext, clock: TestClock, sweep?: () => Promise<unknown>): Promise<JobType> {
  const emails = await defineTypeOfOlderRelease(ctx, 'emails');
  clock.set(T0 + 5 * MINUTE);
  await poll(ctx, [emails], new RecordingInvoker());
  await sweep?.();
  clock.set(T0 + 2 * HOUR);
  await pollUntilCaughtUp(ctx, emails);
  await sweep?.();
  expect(await readCursor(ctx, queuedLane(emails), 0)).toBe(caughtUpBucket(T0 + 2 * HOUR));
  return emails;
}

describe('a poller back after an outage', () => {
  test('one poll of a lane a day behind makes at most a few dozen queries and claims what fell due meanwhile', async () => {
    const q = queue();
    const { ctx, clock } = q;
    const emails = await typePolledUntilTwoHours(ctx, clock);
    clock.set(T0 + 14 * HOUR);
    await enqueue(ctx, emails, 'noon');
    await enqueue(ctx, emails, 'evening', { runAfterMs: T0 + 22 * HOUR });
    clock.set(T0 + 2 * HOUR + DAY);

    const queries = countQueries(q.clientsOf('poller').base);
    const invoker = new RecordingInvoker();
    expect(await poll(ctx, [emails], invoker)).toMatchObject({ claimed: 2 });
    expect(invoker.jobs.map((job) => job.id).sort()).toEqual(['evening', 'noon']);
    expect(queries.count).toBeLessThanOrEqual(FEW_DOZEN);
  });

  test('the cursor of a lane a day behind is caught up by the polls that claimed its jobs and the one after', async () => {
    const q = queue();
    const { ctx, clock } = q;
    const emails = await typePolledUntilTwoHours(ctx, clock);
    clock.set(T0 + 14 * HOUR);
    await enqueue(ctx, emails, 'noon');
    clock.set(T0 + 2 * HOUR + DAY);

    const queries = countQueries(q.clientsOf('poller').base);
    expect(await poll(ctx, [emails], new RecordingInvoker())).toMatchObject({ claimed: 1 });
    // The bucket that held `noon` was not empty when read: the cursor stops there, and passes it the next poll.
    expect(await readCursor(ctx, queuedLane(emails), 0)).toBe(bucketOf(T0 + 14 * HOUR, MINUTE));
    expect(await poll(ctx, [emails], new RecordingInvoker())).toMatchObject({ claimed: 0, behind: false });
    expect(await readCursor(ctx, queuedLane(emails), 0)).toBe(caughtUpBucket(T0 + 2 * HOUR + DAY));
    expect(queries.count).toBeLessThanOrEqual(2 * FEW_DOZEN);
  });

  test('a lane a week behind is caught up within one poller invocation, its due job claimed', async () => {
    const q = queue();
    const { ctx, clock } = q;
    const emails = await typePolledUntilTwoHours(ctx, clock);
    clock.set(T0 + 4 * DAY);
    await enqueue(ctx, emails, 'midweek');
    clock.set(T0 + 2 * HOUR + 7 * DAY);

    withLatency(q.clientsOf('poller').base, clock, 10);
    const invoker = new RecordingInvoker();
    const invocationStartedAtMs = clock.nowMs();
    const totals = await runPollerLoop(asFunction(ctx, 'poller'), {
      invoker,
      runForMs: ctx.settings.pollerRunMs,
      sleep: async (ms) => clock.advance(ms),
    });
    expect(totals.claimed).toBe(1);
    expect(invoker.jobs.map((job) => job.id)).toEqual(['midweek']);
    // Within the first polls of the invocation, and the run ended before the function's timeout.
    expect(invoker.jobs[0]?.claimedAtMs).toBeLessThan(invocationStartedAtMs + 5_000);
    // The stack gives the poller function POLLER_RUN_MS and 15 s more (infra/queue-stack.ts).
    expect(clock.nowMs()).toBeLessThan(invocationStartedAtMs + ctx.settings.pollerRunMs + 15_000);
    expect(await readCursor(ctx, queuedLane(emails), 0)).toBeGreaterThanOrEqual(caughtUpBucket(clock.nowMs()) - 1);
  });

  test('a walk the directory cannot shorten yet queries at most a scan’s worth a poll, its cursor moving as it goes', async () => {
    const q = queue();
    const { ctx, clock } = q;
    const emails = await defineTypeOfOlderRelease(ctx, 'emails');
    clock.set(T0 + 10 * MINUTE);
    await enqueue(ctx, emails, 'early');
    // No poller ever walked the lane: the first advance of its cursor adopts the directory, from an hour ahead.
    clock.set(T0 + WALK_HOURS * HOUR);

    const queries = countQueries(q.clientsOf('poller').base);
    const first = await poll(ctx, [emails], new RecordingInvoker());
    expect(first).toMatchObject({ claimed: 1, behind: true });
    expect(queries.count).toBeLessThanOrEqual(MAX_QUERIES_PER_SCAN);

    const cursors = [await readCursor(ctx, queuedLane(emails), 0)];
    for (let polls = 0; polls < WALK_HOURS && cursors.at(-1) !== caughtUpBucket(T0 + WALK_HOURS * HOUR); polls++) {
      queries.count = 0;
      await poll(ctx, [emails], new RecordingInvoker());
      expect(queries.count).toBeLessThanOrEqual(MAX_QUERIES_PER_SCAN);
      cursors.push(await readCursor(ctx, queuedLane(emails), 0));
    }
    expect(cursors.at(-1)).toBe(caughtUpBucket(T0 + WALK_HOURS * HOUR));
    // Each poll kept what it walked: the cursor only moved on.
    expect(cursors).toEqual([...cursors].sort((a, b) => (a ?? 0) - (b ?? 0)));
    expect(new Set(cursors).size).toBe(cursors.length);
  });
});

describe('a poller whose run is ending', () => {
  test('stops walking a lane far behind at the end it was given, and hands over what it claimed', async () => {
    const q = queue();
    const { ctx, clock } = q;
    const emails = await defineTypeOfOlderRelease(ctx, 'emails');
    await enqueue(ctx, emails, 'early');
    clock.set(T0 + WALK_HOURS * HOUR);
    // Each query takes 100 ms of this clock; the run must end 2 s from now.
    const slowCtx: QueueContext = { ...asFunction(ctx, 'poller'), nowMs: () => (clock.advance(100), clock.nowMs()) };
    const queries = countQueries(q.clientsOf('poller').base);
    const invoker = new RecordingInvoker();
    const result = await pollOnce(slowCtx, { jobTypes: [emails], invoker, cursors: new Map(), stopWalksAtMs: clock.nowMs() + 2_000 });
    expect(result).toMatchObject({ claimed: 1, dispatched: 1 });
    expect(invoker.jobs.map((job) => job.id)).toEqual(['early']);
    expect(queries.count).toBeLessThan(20);
  });
});

describe('a sweeper back after a day', () => {
  test('one sweep of a claim lane a day behind makes at most a few dozen queries and takes back the claim that lapsed meanwhile', async () => {
    const q = queue();
    const { ctx, clock } = q;
    const sweep = () => sweepOnce(asFunction(ctx, 'sweeper'), { customPolicies: {} });
    const emails = await typePolledUntilTwoHours(ctx, clock, sweep);
    expect(await readCursor(ctx, { kind: 'claims' }, 0)).toBe(caughtUpBucket(T0 + 2 * HOUR));

    clock.set(T0 + 14 * HOUR);
    await enqueue(ctx, emails, 'dies');
    expect(await poll(ctx, [emails], new RecordingInvoker())).toMatchObject({ claimed: 1 });
    clock.set(T0 + 2 * HOUR + DAY);

    const queries = countQueries(q.clientsOf('sweeper').base);
    // The batch never reached a worker, so the claim is handed back without costing the job an attempt.
    expect(await sweep()).toMatchObject({ released: 1 });
    expect(await getJob(ctx, 'emails', 'dies')).toMatchObject({ status: 'queued', attempt: 0 });
    expect(queries.count).toBeLessThanOrEqual(FEW_DOZEN);
  });
});

describe('the poller function', () => {
  test('reports the lag while its run goes on, not only when it ends', async () => {
    const { ctx, clock } = queue();
    // One slot, taken by the first job, which no worker runs: the second waits, due, the whole run.
    const emails = await defineType(ctx, 'emails', { concurrency: 1 });
    await enqueue(ctx, emails, 'running');
    await enqueue(ctx, emails, 'waiting');
    clock.set(T0 + 10 * MINUTE);
    const lagReports: number[] = [];
    const metrics: QueueMetrics = {
      count: () => undefined,
      milliseconds: (name, value) => {
        if (name === 'OldestDueLagMs') lagReports.push(value);
      },
      flush: () => undefined,
    };
    // A clock that moves on each time it is read, so the run's minute passes in a few dozen quick polls.
    const movingCtx: QueueContext = { ...asFunction(ctx, 'poller'), nowMs: () => (clock.advance(200), clock.nowMs()) };
    const handler = createPollerHandler({ ctx: movingCtx, invoker: new RecordingInvoker(), identity: { id: 'p-1', host: 'host' }, metrics });
    await handler({}, { getRemainingTimeInMillis: () => 60_000 });
    expect(lagReports.length).toBeGreaterThanOrEqual(3);
    expect(lagReports[0]).toBeGreaterThanOrEqual(10 * MINUTE);
  });
});
