/**
 * The races of an attempt's end, run with concurrent actors rather than in sequence: a renewal against the sweeper
 * at the claim's deadline, two sweepers on one lapsed claim, two callbacks, a callback against the sweeper. Each
 * race runs under several seeds, which pick where the clock stands around the deadline and between which two
 * DynamoDB calls of the first actor the second one lands (test/support/hold-calls.ts), not a timing; a failure
 * names its seed and the order, and `RACE_SEEDS=<seed>` reruns just that one. Whatever the order, exactly one
 * actor ends (or keeps) the attempt, and the history holds one entry for it.
 */
import { describe, expect, test } from 'vitest';
import { ConflictError } from '../../../../../lib/domain/errors.js';
import type { Job } from '../../../../../lib/domain/job.js';
import type { JobType } from '../../../../../lib/domain/job-type.js';
import { guardOf } from '../../../../../lib/domain/attempts.js';
import { completeFromCallback } from '../../../../../lib/queue/attempt/callbacks.js';
import { extendClaim } from '../../../../../lib/queue/attempt/renew-claim.js';
import { getJob } from '../../../../../lib/queue/read-job.js';
import { sweepOnce, type SweepResult } from '../../../../../lib/queue/sweep/sweep.js';
import { seededRandom } from '../../../../support/faults.js';
import { interleave } from '../../../../support/hold-calls.js';
import type { TestQueue } from '../../../../support/queue.js';
import { defineType, DyingInvoker, enqueue, freshQueuePerTest, poll } from '../../../../support/lib-fixtures.js';

const SEEDS = process.env.RACE_SEEDS ? process.env.RACE_SEEDS.split(',').map(Number) : [1, 2, 3, 4, 5, 6, 7, 8, 9, 10];
const VISIBILITY_TIMEOUT_S = 30;

const queue = freshQueuePerTest();

/** A job running on a worker that holds its claim: claimed, its start recorded, nothing run. */
async function runningJob(q: TestQueue, body: Record<string, unknown> = {}): Promise<{ jobType: JobType; job: Job }> {
  const jobType = await defineType(q.ctx, 'races', { visibility_timeout_s: VISIBILITY_TIMEOUT_S, attempts: 3, ...body });
  await enqueue(q.ctx, jobType, 'r-1');
  await poll(q.ctx, [jobType], new DyingInvoker(q.ctx));
  const job = await getJob(q.ctx, 'races', 'r-1');
  expect(job?.status).toBe('running');
  return { jobType, job: job! };
}

/**
 * Where the second actor lands among the first's calls, drawn from the seed: after all of them about a third of
 * the time, otherwise before one of them (a sweep here makes about 25, a callback two or three).
 */
const holdAtOf = (random: () => number, calls: number): number => (random() < 0.3 ? Number.MAX_SAFE_INTEGER : Math.floor(random() * calls));
const SWEEP_CALLS = 26;
const CALLBACK_CALLS = 3;

/** Where the clock stands around the claim's deadline: a millisecond before it, on it, or after it. */
const aroundDeadlineMs = (job: Job, random: () => number): number => job.claimedUntilMs! + Math.floor(random() * 3) - 1;

const endedBySweep = (sweep: SweepResult): number => sweep.requeued + sweep.ended;

function valueOf<T>(settled: PromiseSettledResult<T>): T {
  if (settled.status === 'rejected') throw settled.reason;
  return settled.value;
}

/** The attempt's history: at most one entry for each attempt number. */
function expectOneEntryPerAttempt(job: Job | undefined): void {
  const attempts = (job?.history ?? []).map((entry) => entry.attempt);
  expect(new Set(attempts).size).toBe(attempts.length);
}

describe.each(SEEDS)('seed %i', (seed) => {
  test('a renewal racing the sweeper at the deadline: either the claim moves on and the sweep leaves it, or the sweep ends the attempt and the renewal is refused', async () => {
    const q = queue();
    const random = seededRandom(seed);
    const { job } = await runningJob(q);
    q.clock.set(aroundDeadlineMs(job, random));
    const renewedUntilMs = q.clock.nowMs() + VISIBILITY_TIMEOUT_S * 1000;
    const race = await interleave(
      q.clientsOf('sweeper').base,
      holdAtOf(random, SWEEP_CALLS),
      () => sweepOnce(q.as('sweeper'), { customPolicies: {} }),
      () => extendClaim(q.as('worker'), guardOf(job), renewedUntilMs),
    );
    const renewed = valueOf(race.second);
    const swept = endedBySweep(valueOf(race.first));
    const after = await getJob(q.ctx, 'races', 'r-1');
    expect({ renewed: renewed !== undefined, swept }, `seed ${seed}, ${race.order}`).toSatisfy(({ renewed, swept }) => (renewed ? swept === 0 : swept === 1));
    if (renewed) expect(after, `seed ${seed}, ${race.order}`).toMatchObject({ status: 'running', attempt: 1, claimToken: job.claimToken, claimedUntilMs: renewedUntilMs });
    else expect(after, `seed ${seed}, ${race.order}`).toMatchObject({ status: 'queued', history: [expect.objectContaining({ attempt: 1, outcome: 'timed_out' })] });
    expectOneEntryPerAttempt(after);
  });

  test('two sweepers on one lapsed claim end its attempt once', async () => {
    const q = queue();
    const random = seededRandom(seed);
    const { job } = await runningJob(q);
    q.clock.set(job.claimedUntilMs! + 1 + Math.floor(random() * 1000));
    const race = await interleave(
      q.clientsOf('sweeper').base,
      holdAtOf(random, SWEEP_CALLS),
      () => sweepOnce(q.as('sweeper'), { customPolicies: {} }),
      () => sweepOnce(q.as('sweeper'), { customPolicies: {} }),
    );
    expect(endedBySweep(valueOf(race.first)) + endedBySweep(valueOf(race.second)), `seed ${seed}, ${race.order}`).toBe(1);
    const after = await getJob(q.ctx, 'races', 'r-1');
    expect(after?.history, `seed ${seed}, ${race.order}`).toEqual([expect.objectContaining({ attempt: 1, outcome: 'timed_out' })]);
    expect(after?.status).toBe('queued');
  });

  test('two callbacks for one attempt: one ends it, the other is a conflict that changes nothing', async () => {
    const q = queue();
    const random = seededRandom(seed);
    const { jobType } = await runningJob(q);
    const race = await interleave(
      q.clientsOf('api').base,
      holdAtOf(random, CALLBACK_CALLS),
      () => completeFromCallback(q.as('api'), jobType, 'r-1', { status: 'succeeded', attempt: 1, result: { by: 'first' } }, {}),
      () => completeFromCallback(q.as('api'), jobType, 'r-1', { status: 'failed', attempt: 1, retryable: false }, {}),
    );
    const callbacks = [race.first, race.second];
    const won = callbacks.filter((callback) => callback.status === 'fulfilled');
    expect(won, `seed ${seed}, ${race.order}`).toHaveLength(1);
    for (const callback of callbacks) if (callback.status === 'rejected') expect(callback.reason).toBeInstanceOf(ConflictError);
    const after = await getJob(q.ctx, 'races', 'r-1');
    expect(after?.status).toBe(valueOf(won[0]!).status);
    expect(after?.history, `seed ${seed}, ${race.order}`).toHaveLength(1);
  });

  test('a callback racing the sweeper at the deadline: either the callback ends the attempt and the sweep leaves it, or the sweep does and the callback is a conflict', async () => {
    const q = queue();
    const random = seededRandom(seed);
    const { jobType, job } = await runningJob(q);
    q.clock.set(aroundDeadlineMs(job, random));
    const race = await interleave(
      q.clientsOf('sweeper').base,
      holdAtOf(random, SWEEP_CALLS),
      () => sweepOnce(q.as('sweeper'), { customPolicies: {} }),
      () => completeFromCallback(q.as('api'), jobType, 'r-1', { status: 'succeeded', attempt: 1, result: { ok: true } }, {}),
    );
    const callback = race.second;
    const swept = endedBySweep(valueOf(race.first));
    if (callback.status === 'rejected') expect(callback.reason).toBeInstanceOf(ConflictError);
    expect({ called: callback.status === 'fulfilled', swept }, `seed ${seed}, ${race.order}`).toSatisfy(({ called, swept }) => (called ? swept === 0 : swept === 1));
    const after = await getJob(q.ctx, 'races', 'r-1');
    expect(after?.status, `seed ${seed}, ${race.order}`).toBe(callback.status === 'fulfilled' ? 'succeeded' : 'queued');
    expect(after?.history, `seed ${seed}, ${race.order}`).toHaveLength(1);
  });
});
