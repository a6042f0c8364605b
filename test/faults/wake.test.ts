/**
 * Sleeping pollers and sweepers (lib/queue/wake/lease-keeper.ts, ensure-awake.ts) run only as the stack runs them: a
 * tick every TICK_MS (with one tick-less stretch longer than a lease and an idle look) and wakes, each an invocation
 * of the poller or sweeper handler with a Lambda-like remaining time, started as Lambda's asynchronous invoke
 * starts it: a little late, sometimes twice, sometimes refused. No writer wakes anyone: the waker
 * (functions/waker/app.ts, lib/queue/wake/wake-on-write.ts) reads each lane entry from the table's stream once its
 * write committed, through the local event source mapping (infra/local/aws/table-stream.ts, a poll every
 * STREAM_POLL_INTERVAL_MS), and makes sure of entries due within two seconds at once (the wake item, a hold, a
 * wake), arming a timer on the local timer queue (infra/local/aws/timer-queue.ts) for those due later, which comes
 * back to it. Two api instances enqueue jobs due now and up to AHEAD_MS ahead, of an at_least_once type, an
 * at_most_once type and a type limited to two at a time, while every function's client fails a share of its
 * calls (the waker's reads and holds of wake items among them), some of the api's job writes are slow, and some
 * worker invokes are lost. Every accepted job ends terminal, none starts twice where its type forbids it, and
 * each job due on arrival is claimed within the protocol's promise: a few seconds after its enqueue answered, the
 * stream's delivery included, or, when a poller's wake failed around it (refused by Lambda, or its wake item's
 * read or hold failed), by the first tick after it.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { STREAM_POLL_INTERVAL_MS } from '../../infra/local/aws/table-stream.js';
import { INDEX_LAG_MS } from '../../lib/queue/wake/ensure-awake.js';
import { isInjected, seededRandom } from '../support/faults.js';
import { createTestQueue, realClock, type TestQueue } from '../support/queue.js';
import { auditJobs, countingHandler, waitUntilTerminal } from '../support/scenario.js';
import {
  defineTypes,
  distribution,
  enqueueBursts,
  firstTickAfter,
  judgeLateness,
  keepFunctionWarnings,
  latenessOf,
  startStack,
  type Accepted,
  type BurstPlan,
  type Seen,
} from '../support/sleeping-stack.js';
import { FULL, scaled } from './scale.js';

/**
 * Jobs come in bursts, the first after the first tick found nothing to do, the next once the burst before fell
 * due and its holders had time to stop: each burst's writers meet sleeping pollers and must wake them.
 */
const BURSTS = scaled(2, 4);
const BURST_JOBS = scaled(60, 300);
const BURST_MS = 1_500;
const FIRST_BURST_AT_MS = 1_000;
/** Jobs not due on arrival fall due up to this far ahead. */
const AHEAD_MS = scaled(8_000, 80_000);
/** Past a burst's latest due time, a lease and an idle look; in the normal suite, the second burst comes with a tick. */
const BURST_EVERY_MS = AHEAD_MS + 6_000;
const JOBS = BURSTS * BURST_JOBS;
/**
 * The minute tick, shortened to keep the run short, yet longer than a wake's promise (onTimeMsOf), so a job left to
 * a tick shows; the ticks due in one stretch of TICKLESS_MS are left out.
 */
const TICK_MS = scaled(15_000, 30_000);
/** From the first burst on, longer than a lease (3 s) and an idle look (2 s): holders end, and only wakes start anyone. */
const TICKLESS_MS = scaled(10_000, 45_000);
/**
 * A Lambda invocation's timeout: the handlers end their runs 5 s before it, so a run lasts about a tick period,
 * as the stack's 55 s runs do against its minute ticks.
 */
const INVOCATION_TIMEOUT_MS = TICK_MS + 5_000;
const FAULT_RATE = 0.1;
/** Wakes Lambda refuses (the waker throws), and wakes it delivers twice. */
const WAKE_REFUSAL_RATE = 0.25;
const WAKE_TWICE_RATE = 0.1;
/** Asynchronous invokes of the worker lost on the way: their claims lapse and the sweeper hands them back. */
const LOST_INVOKE_RATE = 0.05;
/**
 * Job writes of the api that take this long (a DynamoDB brownout, the SDK's backoff): past the lease's cover
 * margin and a holder's two looks, so a holder awake when the write was sent may have stopped before it lands.
 * The waker judges the entry from the stream, once it landed, so what it finds covers the entry as written.
 */
const SLOW_WRITE_RATE = 0.05;
const SLOW_WRITE_MS = 2_500;
/** One job in this many is of the limited type, few enough that two at a time drain them within the run. */
const LIMITED_EVERY = scaled(6, 15);
const BURST_PLAN: BurstPlan = {
  bursts: Array.from({ length: BURSTS }, (_, burst) => ({ atMs: FIRST_BURST_AT_MS + burst * BURST_EVERY_MS, aheadMs: AHEAD_MS })),
  jobsPerBurst: BURST_JOBS,
  burstMs: BURST_MS,
  limitedEvery: LIMITED_EVERY,
  sendTries: 6,
};
const SETTLE_MS = scaled(60_000, 180_000);
const TEST_TIMEOUT_MS = FIRST_BURST_AT_MS + BURSTS * BURST_EVERY_MS + SETTLE_MS + 60_000;

/**
 * The waker's handling of a batch its mapping hands it: DynamoDB Local's own lag in showing a record on its stream,
 * then the wake item's read and the hold, each of which may wait out a throttling backoff under these faults.
 */
const WAKER_HANDLING_MS = 2_000;
/** From an enqueue's answer to the waker's judgment of its entry: a poll of the mapping, and the waker's handling. */
const STREAM_LAG_MS = STREAM_POLL_INTERVAL_MS + WAKER_HANDLING_MS;

/**
 * A job due on arrival, woken for, is claimed within this of its enqueue's answer: the waker judges its entry up to
 * STREAM_LAG_MS after it; from there a hold keeps someone awake INDEX_LAG_MS, sized for the index's lag and a
 * poll (one hold covers a burst: an entry judged while a hold lasts asks for nothing, and whoever
 * that hold's wake started finds it). The woken invocation's own calls (the wake item, the directory, the lease,
 * the types), each of which may wait out a throttling backoff of up to a second or two under these faults, come on
 * top, as does the lag the run adds to the index. Still shorter than a tick period, so a job left to a tick shows.
 */
const onTimeMsOf = (indexLagMs: number): number => STREAM_LAG_MS + INDEX_LAG_MS + 5_000 + indexLagMs;

/**
 * How late each job was claimed, from when it was due and written, and which jobs due on arrival broke the
 * promise: onTimeMs, or, with a poller's wake failed around it, the first tick after it and onTimeMs. Around it:
 * the waker judges its entry between its write (after it was sent) and STREAM_LAG_MS after its answer, and a
 * failed wake leaves what it judged to the tick, and so does the hold it leaves for INDEX_LAG_MS after, since one hold
 * covers a burst: an entry judged under it asks for nothing.
 */
function judgeWakes(accepted: Accepted[], seen: Seen, onTimeMs: number) {
  const lateness = latenessOf(seen);
  const wakeFailedAround = (job: Accepted): boolean =>
    seen.pollerWakeFailedAtMs.some((atMs) => atMs >= job.sentAtMs - INDEX_LAG_MS && atMs <= job.answeredAtMs + STREAM_LAG_MS);
  const judged = judgeLateness(accepted, seen, (job) => {
    if (!job.dueOnArrival) return Infinity;
    return wakeFailedAround(job) ? firstTickAfter(seen, job.answeredAtMs) - job.answeredAtMs + onTimeMs : onTimeMs;
  });
  const late = accepted.filter((job) => job.type !== 'limited' && job.dueOnArrival && lateness(job) > onTimeMs);
  return { ...judged, late: late.map((job) => ({ id: job.id, lateMs: lateness(job), wakeFailed: wakeFailedAround(job) })) };
}

function runScenario(indexLagMs: number, seed: number, warnings: ReturnType<typeof keepFunctionWarnings>) {
  let queue: TestQueue;
  beforeAll(async () => {
    queue = await createTestQueue({
      clock: realClock,
      // The waker reads it: no writer wakes anyone.
      stream: true,
      ...(indexLagMs > 0 ? { indexLagMs } : {}),
      settings: { bucketMs: 5_000, pollerPartitions: 2, pollIntervalMs: 100, sweepIntervalMs: 500 },
    });
  });
  afterAll(() => queue.drop());

  test(`every accepted job ends terminal, no at_most_once job starts twice, and jobs due on arrival are claimed within the protocol's promise (index lag ${indexLagMs} ms)`, async () => {
    const random = seededRandom(seed);
    const types = await defineTypes(queue.ctx);
    const counter = countingHandler(20);
    const stack = await startStack(queue, {
      random,
      dynamoFaultRate: FAULT_RATE,
      slowJobWrites: { rate: SLOW_WRITE_RATE, ms: SLOW_WRITE_MS },
      loseWakerHoldAnswer: true,
      invokes: { wakeRefusalRate: WAKE_REFUSAL_RATE, wakeTwiceRate: WAKE_TWICE_RATE, refuseFirstPollerWake: true, lostInvokeRate: LOST_INVOKE_RATE },
      tickMs: TICK_MS,
      tickless: { fromMs: FIRST_BURST_AT_MS, forMs: TICKLESS_MS },
      invocationTimeoutMs: INVOCATION_TIMEOUT_MS,
      counter,
    });
    const { accepted, unanswered } = await enqueueBursts([stack.api(), stack.api()], types, random, stack.startedAtMs, BURST_PLAN);
    const open = await waitUntilTerminal(queue.ctx, accepted, SETTLE_MS);
    await stack.stop();

    // What the functions logged as warnings or errors (the handlers log what they survive): each must be a fault injected here.
    const loggedErrors = warnings.take();
    const audit = await auditJobs(queue.ctx, accepted, counter.starts, types, {
      unknown: unanswered,
      startsByAttempt: counter.byAttempt,
      errors: [...stack.errors, ...loggedErrors],
      expectedError: isInjected,
    });
    const lateness = judgeWakes(accepted, stack.seen, onTimeMsOf(indexLagMs));
    console.info('sleeping pollers under faults', {
      indexLagMs,
      jobs: accepted.length,
      unanswered: unanswered.length,
      unansweredLanded: audit.unknownLanded,
      errors: stack.errors.length,
      loggedErrors: loggedErrors.length,
      open,
      injected: stack.injected(),
      wakerCalls: stack.calls('waker'),
      injectedIntoWaker: stack.injected('waker'),
      wakerHoldAnswersLost: stack.seen.wakerHoldAnswersLost.lost,
      pollerWakesFailed: stack.seen.pollerWakeFailedAtMs.length,
      slowJobWrites: stack.seen.slowWrites,
      invocations: stack.seen.started,
      waker: { ...stack.seen.waker, handlingMs: distribution(stack.seen.waker.handlingMs) },
      byStatus: audit.byStatus,
      openByType: Object.fromEntries([...types.keys()].map((type) => [type, audit.findings.filter((finding) => finding.id.startsWith(`${type}-`)).length])),
      latenessDueNowMs: lateness.dueNowMs,
      latenessDueLaterMs: lateness.dueLaterMs,
      lateDueNow: lateness.late,
    });

    expect(stack.injected()).toBeGreaterThan(0);
    expect(stack.seen.wakerHoldAnswersLost.lost).toBeGreaterThan(0);
    expect(stack.seen.started.tick).toBeGreaterThan(0);
    expect(stack.seen.started.wake).toBeGreaterThan(0);
    expect(stack.seen.waker.streamRecords).toBeGreaterThan(0);
    expect(stack.seen.waker.timers).toBeGreaterThan(0);
    expect(stack.seen.slowWrites).toBeGreaterThan(0);
    expect(open).toBe(0);
    expect(audit.findings).toEqual([]);
    expect(lateness.broken).toEqual([]);
  }, TEST_TIMEOUT_MS);
}

describe(`${JOBS} jobs enqueued while pollers and sweepers sleep between ticks and wakes, under ${FAULT_RATE * 100} % injected faults`, () => {
  const warnings = keepFunctionWarnings();

  // The normal suite runs the lagging index alone, to stay short; the soak runs both.
  if (FULL) describe('the index current', () => runScenario(0, 30, warnings));
  describe('the index lagging', () => runScenario(1_000, 31, warnings));
});
