/**
 * What an awake poller's polls read (lib/queue/poll/poller-loop.ts): every lane when it lists job types, and in
 * between only the lanes of the types the waker holds (store/wake.ts's lane holds) and of those it found work in,
 * so idle types cost no reads whatever the traffic of the others.
 */
import { describe, expect, test } from 'vitest';
import { runPollerLoop, type PollerLoopOptions } from '../../../../../lib/queue/poll/poller-loop.js';
import type { WakeNews } from '../../../../../lib/queue/wake/lease-keeper.js';
import { getJob } from '../../../../../lib/queue/read-job.js';
import { LATE_WRITE_GRACE_MS } from '../../../../../lib/queue/lanes/lane-walk.js';
import { RecordingInvoker, T0, defineType, enqueue, freshQueuePerTest } from '../../../../support/lib-fixtures.js';
import { recordCalls } from '../../../../support/sdk-calls.js';

const POLL_INTERVAL_MS = 1_000;
const queue = freshQueuePerTest({ settings: { pollIntervalMs: POLL_INTERVAL_MS, shards: 1, claimPageSize: 1 } });
const IDLE_TYPES = ['idle-1', 'idle-2', 'idle-3', 'idle-4', 'idle-5', 'idle-6'];

/** The types whose lanes (cursors, bucket directory, due index) the calls read. */
const typesRead = (calls: readonly { input: string }[], types: readonly string[]): string[] => types.filter((type) => calls.some(({ input }) => input.includes(`Q#${type}#`)));

/** A lease keeper's side of the loop as a test sets it: the news it reads, as `newsAt` says at each time. */
function keptBy(clock: { nowMs: () => number }, newsAt: (nowMs: number) => WakeNews): Pick<PollerLoopOptions, 'afterRound' | 'news' | 'newsNow'> {
  return {
    news: newsAt(clock.nowMs()),
    afterRound: async () => ({ untilMs: Number.MAX_SAFE_INTEGER, ...newsAt(clock.nowMs()) }),
    newsNow: async () => newsAt(clock.nowMs()),
  };
}

const holding = (holds: Record<string, number>): WakeNews => ({ typesChangedAtMs: 0, laneHoldsUntilMs: new Map(Object.entries(holds)) });

describe('an awake poller between its listings of job types', () => {
  test('reads the lanes of the types the waker holds, while held, and none of the idle types\'', async () => {
    const { ctx, clock, clientsOf, as } = queue();
    for (const name of [...IDLE_TYPES, 'held']) await defineType(ctx, name);
    const calls = recordCalls(clientsOf('poller').base);
    const typesByPoll: string[][] = [];
    let seen = 0;

    await runPollerLoop(as('poller'), {
      invoker: new RecordingInvoker(),
      runForMs: 4_500,
      jobTypesRefreshMs: 60_000,
      sleep: async (ms) => clock.advance(ms),
      onPoll: () => {
        typesByPoll.push(typesRead(calls.slice(seen), [...IDLE_TYPES, 'held']).sort());
        seen = calls.length;
      },
      ...keptBy(clock, () => holding({ held: T0 + 3_000 })),
    });

    expect(typesByPoll).toEqual([[...IDLE_TYPES, 'held'].sort(), ['held'], ['held'], ['held'], []]);
  });

  test('claims a job no hold names at its next listing of types: a timer lost, or a write the waker missed, waits no longer', async () => {
    const { ctx, clock, as } = queue();
    const quiet = await defineType(ctx, 'quiet');
    await enqueue(ctx, quiet, 'q-1', { runAfterMs: T0 + 1_500 });

    await runPollerLoop(as('poller'), {
      invoker: new RecordingInvoker(),
      runForMs: 3_500,
      jobTypesRefreshMs: 3_000,
      sleep: async (ms) => clock.advance(ms),
      ...keptBy(clock, () => holding({})),
    });

    expect(await getJob(ctx, 'quiet', 'q-1')).toMatchObject({ status: 'running', claimedAtMs: T0 + 3_000 });
  });

  test('ends its wait once a lane is held anew, and claims the job written there then', async () => {
    const { ctx, clock, as } = queue();
    const late = await defineType(ctx, 'late');
    await enqueue(ctx, late, 'l-1', { runAfterMs: T0 + 1_100 });

    await runPollerLoop(as('poller'), {
      invoker: new RecordingInvoker(),
      runForMs: 2_000,
      jobTypesRefreshMs: 60_000,
      sleep: async (ms) => clock.advance(ms),
      // The waker read the job's entry at 1 200 ms.
      ...keptBy(clock, (nowMs) => holding(nowMs >= T0 + 1_200 ? { late: T0 + 3_100 } : {})),
    });

    expect(await getJob(ctx, 'late', 'l-1')).toMatchObject({ claimedAtMs: T0 + 1_250 });
  });

  test('polls again a type it found more work in than a page, though no hold names it', async () => {
    const { ctx, clock, as } = queue();
    const busy = await defineType(ctx, 'busy');
    for (const id of ['b-1', 'b-2', 'b-3']) await enqueue(ctx, busy, id);
    const invoker = new RecordingInvoker();

    await runPollerLoop(as('poller'), {
      invoker,
      runForMs: 500,
      jobTypesRefreshMs: 60_000,
      sleep: async (ms) => clock.advance(ms),
      ...keptBy(clock, () => holding({})),
    });

    expect(invoker.jobs.map((job) => job.id).sort()).toEqual(['b-1', 'b-2', 'b-3']);
    expect(invoker.jobs.map((job) => job.claimedAtMs)).toEqual([T0, T0, T0]);
  });

  /** The queries of a type held all along, poll by poll, over 3.5 s that begin `sinceBucketEndMs` after its first bucket ended. */
  async function heldTypeQueriesByPoll(sinceBucketEndMs: number): Promise<number[]> {
    const { ctx, clock, clientsOf, as } = queue();
    await defineType(ctx, 'held');
    // The type's first bucket is the cursor's: within the safety margin, it stays unsettled for a minute.
    clock.advance(ctx.settings.bucketMs + sinceBucketEndMs);
    const calls = recordCalls(clientsOf('poller').base);
    const queriesByPoll: number[] = [];
    let seen = 0;
    await runPollerLoop(as('poller'), {
      invoker: new RecordingInvoker(),
      runForMs: 3_500,
      jobTypesRefreshMs: 60_000,
      sleep: async (ms) => clock.advance(ms),
      onPoll: () => {
        queriesByPoll.push(calls.slice(seen).filter(({ command, input }) => command === 'QueryCommand' && input.includes('Q#held#')).length);
        seen = calls.length;
      },
      ...keptBy(clock, () => holding({ held: Number.MAX_SAFE_INTEGER })),
    });
    return queriesByPoll;
  }

  test('reads a held type\'s bucket behind the current one again only as it polls every lane, once it found it empty past LATE_WRITE_GRACE_MS', async () => {
    expect(await heldTypeQueriesByPoll(LATE_WRITE_GRACE_MS + 500)).toEqual([2, 1, 1, 1]);
  });

  test('reads a held type\'s bucket behind the current one at every poll while within LATE_WRITE_GRACE_MS of the current one\'s start: a write computed for it may still land', async () => {
    expect(await heldTypeQueriesByPoll(0)).toEqual([2, 2, 2, 2]);
  });

  test('reads the held types\' lanes first in its polls of every lane, the idle types\' after: the types with work do not wait behind them', async () => {
    const { ctx, clock, clientsOf, as } = queue();
    // Named to come after the idle types, as types are listed by name.
    for (const name of [...IDLE_TYPES, 'work']) await defineType(ctx, name);
    const calls = recordCalls(clientsOf('poller').base);

    await runPollerLoop(as('poller'), {
      invoker: new RecordingInvoker(),
      runForMs: 100,
      jobTypesRefreshMs: 60_000,
      sleep: async (ms) => clock.advance(ms),
      ...keptBy(clock, () => holding({ work: Number.MAX_SAFE_INTEGER })),
    });

    const laneQueries = calls.filter(({ command, input }) => command === 'QueryCommand' && input.includes('"Q#'));
    const lastHeld = laneQueries.map(({ input }) => input.includes('Q#work#')).lastIndexOf(true);
    const firstIdle = laneQueries.findIndex(({ input }) => input.includes('Q#idle-'));
    expect(lastHeld).toBeGreaterThanOrEqual(0);
    expect(lastHeld).toBeLessThan(firstIdle);
  });
});

