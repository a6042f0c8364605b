/**
 * The waker's deliveries at their worst, each fault a run of its own on the stack as
 * test/support/sleeping-stack.ts starts it: pollers and sweepers sleep between ticks and wakes, no writer wakes
 * anyone, and the waker learns of each lane entry from the table's stream and of work falling due from its timers.
 *
 * - The stream's records reach the waker 5 s late (3 s in the normal suite), and every batch twice (Lambda's mapping
 *   is at-least-once).
 * - The waker's mapping is down for a spell (5 minutes in the soak, 3 s in the normal suite), then hands over from
 *   where it stopped, dropping the records older than its maximum age (60 s), as Lambda's does.
 * - Timers are lost, and others delivered twice.
 * - Every Lambda Invoke (the waker's wakes, the sleepers' handovers, the poller's worker batches) answers 30 s late
 *   (8 s in the normal suite), Lambda having queued its event at once: the deployed clients give up on it first and
 *   send it again, and the poller hands the batch back; in the soak, also callers that wait each one out.
 *
 * Each run proves: every accepted job ends terminal; no at_most_once job starts twice; no renewal of a running
 * attempt leaves after the claim it renews lapsed, so no at_least_once job is handed back and started again while it
 * runs; every job is claimed within a tick period (and a small margin) of when it was due and written (once the hang
 * ended, for callers that wait it out); and, where the fault leaves the waker a way to be on time, within the wake's
 * own promise, so a waker that loses what the fault tests shows.
 *
 * `npm test` runs each fault once, small, in under a minute for the file: one burst a run, of 10 to 30 jobs, just
 * after the first tick, so that a waker that loses what the fault tests (the stream's late records, those written
 * while its mapping was down, its timers) leaves jobs to the next tick, past the promise. The soak (`npm run
 * test:faults`) runs them big, longer and over more ticks, for the figures in docs/concepts/reliability.md.
 */
import { describe, expect, test, beforeAll, afterAll } from 'vitest';
import { STREAM_POLL_INTERVAL_MS } from '../../infra/local/aws/table-stream.js';
import { WAKER_MAPPINGS } from '../../infra/waker.js';
import type { QueueContext } from '../../lib/queue/context.js';
import { INDEX_LAG_MS, pollerPartitionOf } from '../../lib/queue/wake/ensure-awake.js';
import { isInjected, seededRandom } from '../support/faults.js';
import { createTestQueue, realClock, type TestQueue } from '../support/queue.js';
import { auditJobs, countStarts, waitUntilTerminal } from '../support/scenario.js';
import {
  defineTypes,
  distribution,
  enqueueBursts,
  firstTickAfter,
  judgeLateness,
  keepFunctionWarnings,
  PROMPT_INVOKES,
  sleepUntil,
  startStack,
  type Accepted,
  type BurstPlan,
  type InvokeFaults,
  type Seen,
  type SleepingStack,
  type StackOptions,
} from '../support/sleeping-stack.js';
import { FULL, scaled } from './scale.js';

/** The minute tick, shortened to keep the runs short, yet longer than the wake's promise (CLAIM_MS), so a job left to a tick shows. */
const TICK_MS = scaled(15_000, 30_000);
/** A tick's own invocation on top of its period, the bound every job is held to: its start, its reads, a poll. */
const TICK_MARGIN_MS = 3_000;
/** A run lasts about a tick period, as the stack's 55 s runs do against its minute ticks; the handlers end theirs 5 s before. */
const INVOCATION_TIMEOUT_MS = TICK_MS + 5_000;
/**
 * The waker's handling of a batch its mapping hands it, DynamoDB Local's own lag in showing a record on its stream
 * included; from an enqueue's answer to the waker's judgment of its entry, a poll of the mapping comes on top.
 */
const WAKER_HANDLING_MS = 2_000;
const STREAM_LAG_MS = STREAM_POLL_INTERVAL_MS + WAKER_HANDLING_MS;
/**
 * From the waker's judgment of an entry due (or a timer's return) to the job's claim: the hold lasts INDEX_LAG_MS,
 * sized for the index's lag and a poll, and the woken invocation's start and first calls come on top.
 */
const CLAIM_MS = INDEX_LAG_MS + 3_000;
/**
 * Claims lapse this long after they were made or renewed, and the worker renews at half of it: 3 s to spare, more
 * than a busy shared machine stalls a renewal, less than a deployed client waits on an Invoke before it gives up
 * (two tries of 2 s), so a renewal that waited on one would show.
 */
const VISIBILITY_TIMEOUT_S = 6;
/** Every third job runs past its first renewal (in the soak, past two). */
const LONG_WORK = { every: 3, ms: scaled(4_000, 6_500) };
const JOBS_PER_BURST = scaled(30, 300);
const BURST_MS = scaled(1_000, 1_500);
const SETTLE_MS = scaled(60_000, 180_000);

/** The promise every job is held to, whatever the fault: claimed by the first tick after it was due and written. */
const TICK_BOUND_MS = TICK_MS + TICK_MARGIN_MS;

/**
 * How long after it was due and written `job` may be claimed when someone makes sure of it by `judgedByMs` (the
 * waker's judgment of its entry, a tick): claimed CLAIM_MS after that or after its due time, whichever is later.
 */
const onTimeMs = (job: Accepted, judgedByMs: number): number => Math.max(job.runAfterMs, judgedByMs) + CLAIM_MS - Math.max(job.runAfterMs, job.answeredAtMs);

interface DeliveryScenario {
  seed: number;
  plan: BurstPlan;
  mappings?: StackOptions['mappings'];
  invokes?: InvokeFaults;
  /** The fault's own timetable, beside the bursts. */
  spell?: (stack: SleepingStack) => Promise<void>;
  /** When someone makes sure of each job at the latest under the fault; Infinity when only the tick bound holds. */
  judgedByMs: (job: Accepted, seen: Seen, ctx: QueueContext) => number;
  /** What the run saw of its fault: printed, and checked by `faulted`. */
  facts: (seen: Seen) => Record<string, unknown>;
  /** The fault happened as the run means it to. */
  faulted: (seen: Seen) => void;
  /** How long after it was due and written any job may be claimed. @default TICK_BOUND_MS */
  boundMs?: number;
}

const warnings = keepFunctionWarnings();

/** Runs `scenario` on a table of its own (with the stream the waker reads), enqueueing its bursts, and judges every job. */
function runDelivery(title: string, scenario: DeliveryScenario): void {
  let queue: TestQueue;
  beforeAll(async () => {
    queue = await createTestQueue({ clock: realClock, stream: true, settings: { bucketMs: 5_000, pollerPartitions: 2, pollIntervalMs: 100, sweepIntervalMs: 500 } });
  });
  afterAll(() => queue.drop());
  const lastDueMs = Math.max(...scenario.plan.bursts.map((burst) => burst.atMs + scenario.plan.burstMs + burst.aheadMs));

  test(title, async () => {
    const random = seededRandom(scenario.seed);
    const types = await defineTypes(queue.ctx, VISIBILITY_TIMEOUT_S);
    const counter = countStarts(async (data) => {
      const { workMs } = data as { workMs?: number };
      await new Promise((resolve) => setTimeout(resolve, workMs ?? Math.random() * 20));
      return 'done';
    });
    const stack = await startStack(queue, {
      random,
      dynamoFaultRate: 0,
      invokes: scenario.invokes ?? PROMPT_INVOKES,
      tickMs: TICK_MS,
      invocationTimeoutMs: INVOCATION_TIMEOUT_MS,
      counter,
      ...(scenario.mappings ? { mappings: scenario.mappings } : {}),
    });
    const [{ accepted, unanswered }] = await Promise.all([
      enqueueBursts([stack.api(), stack.api()], types, random, stack.startedAtMs, scenario.plan),
      scenario.spell?.(stack),
    ]);
    const open = await waitUntilTerminal(queue.ctx, accepted, SETTLE_MS);
    await stack.stop();

    const audit = await auditJobs(queue.ctx, accepted, counter.starts, types, {
      unknown: unanswered,
      startsByAttempt: counter.byAttempt,
      errors: [...stack.errors, ...warnings.take()],
      expectedError: isInjected,
    });
    const { seen } = stack;
    const withinBound = judgeLateness(accepted, seen, () => scenario.boundMs ?? TICK_BOUND_MS);
    const onTime = judgeLateness(accepted, seen, (job) => onTimeMs(job, scenario.judgedByMs(job, seen, queue.ctx)));
    const startedTwice = [...counter.starts].filter(([, starts]) => starts > 1).map(([id]) => id);
    console.info(title, {
      jobs: accepted.length,
      unanswered: unanswered.length,
      open,
      byStatus: audit.byStatus,
      latenessDueNowMs: withinBound.dueNowMs,
      latenessDueLaterMs: withinBound.dueLaterMs,
      claimedPastTheBound: withinBound.broken.length,
      claimedPastTheWakesPromise: onTime.broken,
      renewals: { sent: seen.renewals.sent, lateMs: distribution([...seen.renewals.lateMs.values()]), lateBeforeStart: seen.renewals.lateBeforeStart },
      startedTwice,
      invocations: seen.started,
      waker: { ...seen.waker, handlingMs: distribution(seen.waker.handlingMs) },
      ...scenario.facts(seen),
    });

    scenario.faulted(seen);
    expect(seen.renewals.sent).toBeGreaterThan(0);
    expect(open).toBe(0);
    expect(audit.findings).toEqual([]);
    expect([...seen.renewals.lateMs.keys()]).toEqual([]);
    expect(withinBound.broken).toEqual([]);
    expect(onTime.broken).toEqual([]);
  }, lastDueMs + SETTLE_MS + 60_000);
}

/**
 * How late every Invoke answers, Lambda having queued its event at once: longer than a deployed client waits for an
 * answer (ASYNC_DELIVERY_CALL_LIMITS: 2 s a try), and in the soak a tick period.
 */
const HANG_MS = scaled(8_000, 30_000);

/**
 * Jobs enqueued while every Invoke hangs, its callers `callers` (InvokeFaults.hang); every job held to
 * `boundMs` after it was due and written.
 */
function hungInvokes(callers: 'deployed' | 'waiting', seed: number, boundMs: number): void {
  const AHEAD_MS = scaled(8_000, 15_000);
  const within = callers === 'deployed' ? 'a tick' : 'a tick once the hang ended';
  runDelivery(`renewals never wait on an Invoke and come on time, and every job is claimed within ${within}`, {
    seed,
    plan: {
      // The soak's second burst comes once the first one's hangs are over; one is enough to hang every kind of Invoke.
      bursts: Array.from({ length: scaled(1, 2) }, (_, burst) => ({ atMs: 1_000 + burst * (AHEAD_MS + HANG_MS + 6_000), aheadMs: AHEAD_MS })),
      // Fewer in the soak than the other runs: every batch handed back and claimed again each time its Invoke is given
      // up on, and queued twice by the client's retry, is work DynamoDB Local, one writer, does on a shared machine.
      jobsPerBurst: scaled(30, 150),
      burstMs: BURST_MS,
      sendTries: 1,
      longWork: LONG_WORK,
    },
    invokes: { ...PROMPT_INVOKES, hang: { ms: HANG_MS, callers } },
    // A holder stuck in an Invoke honours no hold meanwhile, and the waker's next judgments wait: only a tick is promised.
    judgedByMs: () => Infinity,
    boundMs,
    facts: (seen) => ({ invokesHung: seen.hung.invokes, invokesGivenUp: seen.gaveUp.invokes }),
    faulted: (seen) => {
      expect(seen.hung.invokes).toBeGreaterThan(0);
      if (callers === 'deployed') expect(seen.gaveUp.invokes).toBeGreaterThan(0);
    },
  });
}

describe('the waker\'s deliveries under faults: every job ends, none starts twice where it may not, no renewal comes late, and each is claimed within a tick and, where the fault allows, on time', () => {
  /**
   * Short enough in the normal suite that its burst's jobs due on arrival, promised DELAY_MS + STREAM_LAG_MS +
   * CLAIM_MS (10.25 s) after their answer, are claimed well before the next tick, which claims them if the waker
   * skips what is overdue by the time its records come.
   */
  const DELAY_MS = scaled(3_000, 5_000);
  describe(`stream records handed ${DELAY_MS / 1000} s late, every batch twice`, () => {
    /**
     * A burst all due at once a second or two after a tick (whose invocation has looked and gone by then), no
     * holder awake: only the waker, late, or the next tick claims them. The soak comes to it after a burst due
     * later, once that burst was claimed and its holders stopped; the normal suite, after the first tick only, with
     * half its burst due within its run instead.
     */
    const ALL_DUE = { atMs: TICK_MS + 1_000, dueOnArrival: 1, aheadMs: 0 };
    runDelivery(`every job is claimed within ${DELAY_MS} ms more than the wake's promise, a duplicated batch waking no one twice`, {
      seed: 41,
      plan: {
        bursts: FULL ? [{ atMs: 1_000, aheadMs: 20_000 }, ALL_DUE] : [{ atMs: 2_000, aheadMs: 6_000 }],
        jobsPerBurst: JOBS_PER_BURST,
        burstMs: BURST_MS,
        sendTries: 1,
        longWork: LONG_WORK,
      },
      mappings: { stream: { delayMs: DELAY_MS, duplicate: 1 } },
      judgedByMs: (job) => job.answeredAtMs + DELAY_MS + STREAM_LAG_MS,
      facts: (seen) => ({ streamRecordsHanded: seen.waker.streamRecords }),
      // Every batch handed twice: an odd count would be one handed once.
      faulted: (seen) => expect(seen.waker.streamBatches % 2).toBe(0),
    });
  });

  describe(`the waker's mapping down for ${scaled(3, 300)} s`, () => {
    const OUTAGE_MS = scaled(3_000, 300_000);
    /**
     * The mapping comes back shortly after a tick (the first, in the normal suite), and the last burst comes between
     * the two, due before the next tick: only the stream's records, handed from where the mapping stopped, wake
     * anyone for it in time. In the normal suite the burst comes 2 s after the tick, when its invocations have
     * looked and gone, and the mapping, down since just after the tick, comes back once the burst is written.
     */
    const LAST_TICK_MS = scaled(0, 11) * TICK_MS;
    const LAST_BURST_AT_MS = LAST_TICK_MS + scaled(2_000, 300);
    const UP_AT_MS = LAST_TICK_MS + scaled(3_500, 2_000);
    const DOWN_AT_MS = UP_AT_MS - OUTAGE_MS;
    const MAX_RECORD_AGE_MS = WAKER_MAPPINGS.stream.maxRecordAgeS * 1000;
    const outage = { downAtMs: Infinity, upAtMs: Infinity };
    /**
     * When the waker judges a job's entry: its record is handed before the outage, at the resume, or never (older
     * than the mapping's maximum age by then; a record is read after its write was sent, and within STREAM_LAG_MS
     * of its answer). A tick after its write finds it too: it claims what is due and arms a timer for the earliest
     * work it leaves, and the woken invocations each arm one for the next.
     */
    const judgedByMs = (job: Accepted, seen: Seen): number => {
      const handedByMs = job.answeredAtMs + STREAM_LAG_MS;
      const byStream = handedByMs < outage.downAtMs ? handedByMs : outage.upAtMs - job.sentAtMs < MAX_RECORD_AGE_MS ? outage.upAtMs + STREAM_LAG_MS : Infinity;
      return Math.min(byStream, firstTickAfter(seen, job.answeredAtMs));
    };
    runDelivery('every job is claimed on time from the stream, a tick or the timers they arm, and those whose records the outage outlived by the first tick after', {
      seed: 42,
      plan: {
        bursts: [
          ...(FULL
            ? [
                // While the mapping is up.
                { atMs: 1_000, aheadMs: 8_000 },
                // Just after it went down: its records are past the maximum age when it resumes.
                { atMs: DOWN_AT_MS + 1_000, aheadMs: 60_000 },
              ]
            : []),
          // After the last tick before it resumes, due before the next.
          { atMs: LAST_BURST_AT_MS, aheadMs: scaled(5_000, TICK_MS - 5_000) },
        ],
        jobsPerBurst: JOBS_PER_BURST,
        burstMs: BURST_MS,
        sendTries: 1,
        longWork: LONG_WORK,
      },
      spell: async (stack) => {
        await sleepUntil(stack.startedAtMs + DOWN_AT_MS);
        outage.downAtMs = Date.now();
        stack.stream.pause();
        await sleepUntil(stack.startedAtMs + UP_AT_MS);
        outage.upAtMs = Date.now();
        stack.stream.resume();
      },
      judgedByMs,
      facts: (seen) => ({ outageMs: outage.upAtMs - outage.downAtMs, streamRecordsExpired: seen.streamRecordsExpired }),
      faulted: (seen) => {
        // It goes down when its timer fires, which a busy event loop delays: the spell may be a little short of its plan.
        expect(outage.upAtMs - outage.downAtMs).toBeGreaterThan(OUTAGE_MS - 100);
        // A spell past the maximum age drops what was written at its start; a shorter one drops nothing.
        if (OUTAGE_MS > MAX_RECORD_AGE_MS) expect(seen.streamRecordsExpired).toBeGreaterThan(0);
        else expect(seen.streamRecordsExpired).toBe(0);
      },
    });
  });

  describe('timers lost, and timers delivered twice', () => {
    const LOST_RATE = 0.3;
    const TWICE_RATE = 0.3;
    /**
     * Far enough ahead, and few enough, that a sleeper's partition often has nothing due soon between them: the
     * timers wake it. In the normal suite a few jobs, all due later and within 10 s, most well before the first tick
     * after the burst, which claims them if the timers do not: denser, the stream's records of the others' claims
     * and ends kept the pollers woken, and a waker that lost every timer passed.
     */
    const AHEAD_MS = scaled(10_000, 60_000);
    runDelivery('every job is claimed on time by its timer, or, its timer lost, by the first tick after it fell due', {
      seed: 43,
      plan: {
        bursts: [{ atMs: 1_000, aheadMs: AHEAD_MS, dueOnArrival: scaled(0, 0.5) }],
        jobsPerBurst: scaled(10, 100),
        burstMs: BURST_MS,
        sendTries: 1,
        longWork: LONG_WORK,
      },
      // Draws of their own, so which timers are lost depends on the order they are sent in, not on the enqueues'.
      mappings: { timers: { lose: LOST_RATE, duplicate: TWICE_RATE, random: seededRandom(143) } },
      judgedByMs: (job, seen, ctx) => {
        // The timer of its poller and second was lost: no one in the process arms that second again, and the first
        // tick after it fell due claims it, unless an invocation awake for other work does first.
        const second = Math.floor(job.runAfterMs / 1000);
        const partition = pollerPartitionOf(ctx, job.id);
        const timerLost = seen.timersLost.some((timer) => timer.role === 'poller' && timer.partition === partition && Math.floor(timer.dueAtMs / 1000) === second);
        return timerLost ? firstTickAfter(seen, Math.max(job.runAfterMs, job.answeredAtMs)) : job.answeredAtMs + STREAM_LAG_MS;
      },
      facts: (seen) => ({ timersLost: seen.timersLost.length, timersHanded: seen.waker.timers }),
      faulted: (seen) => {
        expect(seen.timersLost.length).toBeGreaterThan(0);
        expect(seen.waker.timers).toBeGreaterThan(0);
      },
    });
  });

  describe(`every Lambda Invoke answering ${HANG_MS / 1000} s late`, () => {
    describe('through the deployed clients, which give up on it', () => hungInvokes('deployed', 44, TICK_BOUND_MS));
    // A caller waiting out an Invoke does nothing else meanwhile: the poller claims nothing, the waker judges nothing.
    if (FULL) describe('by callers that wait it out', () => hungInvokes('waiting', 45, TICK_BOUND_MS + HANG_MS));
  });
});
