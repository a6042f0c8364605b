/**
 * A type with a concurrency limit under a lagging `due` index (infra/local/aws/index-lag.ts): an entry whose job a
 * poller claimed still shows in the index for up to the lag. Such a stale entry must not cost a reservation
 * and a lost race on every poll, nor hold the type's room or a page of the lane, so the jobs due behind it
 * are claimed as soon as the index shows them rather than once the stale entries leave it.
 *
 * The queue's clock is a manual one the test moves a poll interval at a time, and the lag is measured on it:
 * how long a job waited is counted in polls.
 */
import { describe, expect, test } from 'vitest';
import type { JobType } from '../../../../../lib/domain/job-type.js';
import { pollOnce } from '../../../../../lib/queue/poll/poll.js';
import { emptyPollResult } from '../../../../../lib/queue/poll/poll-state.js';
import { type RecentClaims } from '../../../../../lib/queue/poll/poll-state.js';
import { type PollResult } from '../../../../../lib/queue/poll/poll-state.js';
import type { BlockedRuns } from '../../../../../lib/queue/poll/blocked-runs.js';
import { readInFlight } from '../../../../../lib/store/counters.js';
import { typeCounterKey } from '../../../../../lib/store/keys.js';
import { refuseCalls, writesTo } from '../../../../support/faults.js';
import { createTestQueue, type TestQueue } from '../../../../support/queue.js';
import { sweepOnce } from '../../../../../lib/queue/sweep/sweep.js';
import { defineType, enqueue, FailingInvoker, RecordingInvoker, RunningInvoker } from '../../../../support/lib-fixtures.js';

const LAG_MS = 30_000;
const POLL_INTERVAL_MS = 500;
const LAG_POLLS = LAG_MS / POLL_INTERVAL_MS;
const CONCURRENCY = 2;

/** One poller's memory across its polls, as runPollerLoop keeps it. */
function pollerState() {
  return { cursors: new Map(), rateBuckets: new Map(), recentClaims: new Map() as RecentClaims, blockedRuns: new Map() as BlockedRuns, settledGaps: new Map(), directoryFromBuckets: new Map() };
}

/** Counts the poller's writes to the type's counter: reservations (conditioned on the limit) and returns of unused weight. */
function watchCounterWrites(queue: TestQueue, type: string): { reservations: number; returns: number } {
  const counts = { reservations: 0, returns: 0 };
  const isCounterWrite = writesTo(typeCounterKey(type).pk);
  refuseCalls(queue.clientsOf('poller').base, (call) => {
    if (isCounterWrite(call)) {
      if (JSON.stringify(call.input).includes('":most"')) counts.reservations++;
      else counts.returns++;
    }
    return false;
  });
  return counts;
}

interface StreamRun {
  totals: PollResult;
  /** Per job, how many polls after it showed in the index (LAG_POLLS after its enqueue) it was claimed. */
  pollsWaited: Map<string, number>;
  counterWrites: { reservations: number; returns: number };
  pollsThatClaimed: number;
}

/**
 * A steady stream of short jobs, one enqueued per poll interval for `jobs` intervals, on a type limited to
 * CONCURRENCY at a time; `pollers` poll in turn, one per interval, each with its own memory, until every job
 * ran or the stale entries have long left the index.
 */
async function runStream(queue: TestQueue, jobType: JobType, jobs: number, pollers = 1): Promise<StreamRun> {
  const invoker = new RunningInvoker(queue.ctx, { [jobType.name]: async () => 'done' });
  const counterWrites = watchCounterWrites(queue, jobType.name);
  const states = Array.from({ length: pollers }, pollerState);
  const enqueuedAtPoll = new Map<string, number>();
  const pollsWaited = new Map<string, number>();
  const totals = emptyPollResult();
  let pollsThatClaimed = 0;
  for (let at = 0; pollsWaited.size < jobs && at < jobs + 4 * LAG_POLLS; at++) {
    if (at < jobs) {
      const id = `job-${String(at).padStart(3, '0')}`;
      await enqueue(queue.as('api'), jobType, id);
      enqueuedAtPoll.set(id, at);
    }
    const ran = invoker.batches.length;
    const result = await pollOnce(queue.as('poller'), { jobTypes: [jobType], invoker, ...states[at % pollers]! });
    for (const batch of invoker.batches.slice(ran)) {
      for (const job of batch.jobs) pollsWaited.set(job.id, at - enqueuedAtPoll.get(job.id)! - LAG_POLLS);
    }
    if (result.claimed > 0) pollsThatClaimed++;
    totals.claimed += result.claimed;
    totals.lostRaces += result.lostRaces;
    queue.clock.advance(POLL_INTERVAL_MS);
  }
  expect(invoker.errors).toEqual([]);
  return { totals, pollsWaited, counterWrites, pollsThatClaimed };
}

test('under a 30 s index lag, a poller claims each job of a limited type the first poll the index shows it, with no lost race and no reservation returned', async () => {
  const queue = await createTestQueue({ indexLagMs: LAG_MS, settings: { shards: 1 } });
  try {
    const jobType = await defineType(queue.ctx, 'limited', { concurrency: CONCURRENCY });
    const jobs = 40;
    const run = await runStream(queue, jobType, jobs);
    console.log('one poller', { ...run.totals, ...run.counterWrites, pollsThatClaimed: run.pollsThatClaimed, mostPollsWaited: Math.max(...run.pollsWaited.values()) });

    expect(run.totals.claimed).toBe(jobs);
    expect(run.totals.lostRaces).toBe(0);
    expect(run.counterWrites.returns).toBe(0);
    expect(run.counterWrites.reservations).toBe(run.pollsThatClaimed);
    expect(Math.max(...run.pollsWaited.values())).toBe(0);
    expect((await readInFlight(queue.ctx, 'limited', [])).type).toBe(0);
  } finally {
    await queue.drop();
  }
}, 120_000);

test('under a 30 s index lag, two pollers taking turns lose at most one race for each job the other claimed, and claim every job by the next poll after the index shows it', async () => {
  const queue = await createTestQueue({ indexLagMs: LAG_MS, settings: { shards: 1 } });
  try {
    const jobType = await defineType(queue.ctx, 'limited', { concurrency: CONCURRENCY });
    const jobs = 40;
    const run = await runStream(queue, jobType, jobs, 2);
    console.log('two pollers', { ...run.totals, ...run.counterWrites, pollsThatClaimed: run.pollsThatClaimed, mostPollsWaited: Math.max(...run.pollsWaited.values()) });

    expect(run.totals.claimed).toBe(jobs);
    expect(run.totals.lostRaces).toBeLessThanOrEqual(jobs);
    expect(run.counterWrites.returns).toBeLessThanOrEqual(run.totals.lostRaces);
    expect(Math.max(...run.pollsWaited.values())).toBeLessThanOrEqual(1);
    expect((await readInFlight(queue.ctx, 'limited', [])).type).toBe(0);
  } finally {
    await queue.drop();
  }
}, 120_000);

test('under a 30 s index lag, a page of the lane filled with entries already claimed is read past, so the jobs behind it are claimed the first poll the index shows them', async () => {
  const queue = await createTestQueue({ indexLagMs: LAG_MS, settings: { shards: 1, claimPageSize: 4 } });
  try {
    const jobType = await defineType(queue.ctx, 'limited', { concurrency: CONCURRENCY });
    const jobs = 30;
    const run = await runStream(queue, jobType, jobs);
    console.log('small page', { ...run.totals, ...run.counterWrites, pollsThatClaimed: run.pollsThatClaimed, mostPollsWaited: Math.max(...run.pollsWaited.values()) });

    expect(run.totals.claimed).toBe(jobs);
    expect(run.totals.lostRaces).toBe(0);
    expect(run.counterWrites.returns).toBe(0);
    expect(Math.max(...run.pollsWaited.values())).toBe(0);
  } finally {
    await queue.drop();
  }
}, 120_000);

test('under a 30 s index lag, a poller new to a lane claims the job due behind a run of entries another poller claimed in its first poll, within one reservation', async () => {
  const queue = await createTestQueue({ indexLagMs: LAG_MS, settings: { shards: 1 } });
  try {
    const jobType = await defineType(queue.ctx, 'limited', { concurrency: CONCURRENCY });
    const claimedByOther = Array.from({ length: 10 }, (_, index) => `other-${index}`);
    for (const id of claimedByOther) await enqueue(queue.as('api'), jobType, id);
    queue.clock.advance(1);
    await enqueue(queue.as('api'), jobType, 'fresh');
    queue.clock.advance(LAG_MS);
    const invoker = new RunningInvoker(queue.ctx, { limited: async () => 'done' });
    const other = pollerState();
    for (let poll = 0; poll < claimedByOther.length / CONCURRENCY; poll++) {
      await pollOnce(queue.as('poller'), { jobTypes: [jobType], invoker, ...other });
      queue.clock.advance(POLL_INTERVAL_MS);
    }
    expect(invoker.batches.flatMap((batch) => batch.jobs.map((job) => job.id)).sort()).toEqual(claimedByOther);

    const counterWrites = watchCounterWrites(queue, 'limited');
    const result = await pollOnce(queue.as('poller'), { jobTypes: [jobType], invoker, ...pollerState() });
    expect(result).toMatchObject({ claimed: 1, lostRaces: claimedByOther.length });
    expect(invoker.batches.at(-1)?.jobs.map((job) => job.id)).toEqual(['fresh']);
    expect(counterWrites).toEqual({ reservations: 1, returns: 1 });
    expect((await readInFlight(queue.ctx, 'limited', [])).type).toBe(0);
  } finally {
    await queue.drop();
  }
});

test('under a 30 s index lag, the weight of a claim lost to another poller goes to the next job its throttle key has room for, never past a key\'s limit', async () => {
  const queue = await createTestQueue({ indexLagMs: LAG_MS, settings: { shards: 1 } });
  try {
    const jobType = await defineType(queue.ctx, 'regional', { concurrency: 3, throttle: { key_field: 'region', limits: { '*': { limit: 1 } } } });
    await enqueue(queue.as('api'), jobType, 'east-1', { data: { region: 'east' } });
    queue.clock.advance(1_000);
    for (const id of ['east-2', 'west-1', 'north-1']) await enqueue(queue.as('api'), jobType, id, { data: { region: id.split('-')[0] } });
    // Only east-1 shows yet: another poller claims and runs it.
    queue.clock.advance(LAG_MS - 1_000);
    const invoker = new RunningInvoker(queue.ctx, { regional: async () => 'done' });
    expect(await pollOnce(queue.as('poller'), { jobTypes: [jobType], invoker, ...pollerState() })).toMatchObject({ claimed: 1 });

    queue.clock.advance(1_000);
    const held = new RecordingInvoker();
    const result = await pollOnce(queue.as('poller'), { jobTypes: [jobType], invoker: held, ...pollerState() });
    // east-1's entry, still shown, took east's room and a third of the type's; lost, they go to east-2.
    expect(result).toMatchObject({ claimed: 3, lostRaces: 1 });
    expect(held.jobs.map((job) => job.id).sort()).toEqual(['east-2', 'north-1', 'west-1']);
    const inFlight = await readInFlight(queue.ctx, 'regional', ['east', 'west', 'north']);
    expect({ type: inFlight.type, keys: Object.fromEntries(inFlight.keys) }).toEqual({ type: 3, keys: { east: 1, west: 1, north: 1 } });
  } finally {
    await queue.drop();
  }
});

describe('an entry skipped as claimed comes back as soon as its job may be queued under it again', () => {
  test('a job this poller handed back, its batch never having reached a worker, is claimed by its next poll', async () => {
    const queue = await createTestQueue();
    try {
      const jobType = await defineType(queue.ctx, 'emails');
      await enqueue(queue.ctx, jobType, 'e-1');
      const state = pollerState();
      expect(await pollOnce(queue.as('poller'), { jobTypes: [jobType], invoker: new FailingInvoker(), ...state })).toMatchObject({ claimed: 1, released: 1 });

      queue.clock.advance(POLL_INTERVAL_MS);
      const invoker = new RecordingInvoker();
      expect(await pollOnce(queue.as('poller'), { jobTypes: [jobType], invoker, ...state })).toMatchObject({ claimed: 1 });
      expect(invoker.jobs.map((job) => job.id)).toEqual(['e-1']);
    } finally {
      await queue.drop();
    }
  });

  test('a job whose claim lapsed unstarted, handed back by the sweeper under the same sort key, is claimed by the next poll after that', async () => {
    const queue = await createTestQueue();
    try {
      const jobType = await defineType(queue.ctx, 'emails', { visibility_timeout_s: 1 });
      await enqueue(queue.ctx, jobType, 'e-1');
      const state = pollerState();
      const invoker = new RecordingInvoker();
      await pollOnce(queue.as('poller'), { jobTypes: [jobType], invoker, ...state });

      queue.clock.advance(1_000);
      expect(await sweepOnce(queue.as('sweeper'), { customPolicies: {} })).toMatchObject({ released: 1 });
      queue.clock.advance(POLL_INTERVAL_MS);
      expect(await pollOnce(queue.as('poller'), { jobTypes: [jobType], invoker, ...state })).toMatchObject({ claimed: 1 });
      expect(invoker.jobs.map((job) => job.id)).toEqual(['e-1', 'e-1']);
    } finally {
      await queue.drop();
    }
  });
});
