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
import type { FinalizeHandler, FinalizeHandlerArguments, InitializeHandler, InitializeHandlerArguments, MetadataBearer } from '@smithy/types';
import { afterAll, beforeAll, describe, expect, inject, test, vi } from 'vitest';
import { createPollerHandler } from '../../functions/poller/app.js';
import { createSweeperHandler } from '../../functions/sweeper/app.js';
import { STREAM_POLL_INTERVAL_MS } from '../../infra/local/aws/table-stream.js';
import { startLocalWaker } from '../../infra/local/waker.js';
import type { QueueFunctionName } from '../../infra/local/aws/iam/stack-policies.js';
import type { JobType } from '../../lib/domain/job-type.js';
import type { JobInput } from '../../lib/domain/job.js';
import type { WorkerInvoker } from '../../lib/domain/invocations.js';
import type { WorkerBatch } from '../../lib/domain/invocations.js';
import { createQueueContext, type QueueContext } from '../../lib/queue/context.js';
import { enqueueJob } from '../../lib/queue/enqueue/enqueue.js';
import { putJobType } from '../../lib/queue/catalog/job-types.js';
import { INDEX_LAG_MS } from '../../lib/queue/wake/ensure-awake.js';
import { wakeEventOf } from '../../lib/domain/invocations.js';
import { type WakeInvoker } from '../../lib/domain/invocations.js';
import { type WakeRequest } from '../../lib/domain/invocations.js';
import { runWorkerBatch } from '../../lib/queue/attempt/run-batch.js';
import type { DynamoClients } from '../../lib/store/client.js';
import { shardsOfPartition } from '../../lib/store/keys.js';
import { parseJobTypeDefinition } from '../../lib/wire/job-types.js';
import { injectFaults, isInjected, loseAnswers, seededRandom, type FaultCounts } from '../support/faults.js';
import { createTestQueue, realClock, type TestQueue } from '../support/queue.js';
import { auditJobs, countingHandler, waitUntilTerminal, type ScenarioError } from '../support/scenario.js';
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
const SEND_TRIES = 6;
const LIMITED_CONCURRENCY = 2;
/** One job in this many is of the limited type, few enough that two at a time drain them within the run. */
const LIMITED_EVERY = scaled(6, 15);
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

/** The lines the functions logged as warnings or errors (console.error) since the audit last took them. */
const logged: string[] = [];

interface Accepted {
  type: string;
  id: string;
  dueOnArrival: boolean;
  sentAtMs: number;
  answeredAtMs: number;
  runAfterMs: number;
}

/** Lambda's asynchronous invoke of a function, as a WakeInvoker: started a little later, sometimes twice, sometimes refused. */
class LambdaWaker implements WakeInvoker {
  constructor(
    private readonly start: (request: WakeRequest) => void,
    private readonly random: () => number,
    /** When a poller's wake failed: what the jobs written then were promised changes. */
    private readonly pollerWakeFailedAtMs: number[],
  ) {}

  async wake(request: WakeRequest): Promise<void> {
    // The first poller wake of a run is refused, whatever the draw: each run sees a job left to a tick.
    const firstOfPoller = request.role === 'poller' && this.pollerWakeFailedAtMs.length === 0;
    if (firstOfPoller || this.random() < WAKE_REFUSAL_RATE) {
      if (request.role === 'poller') this.pollerWakeFailedAtMs.push(Date.now());
      throw Object.assign(new Error('injected: TooManyRequestsException'), { name: 'TooManyRequestsException' });
    }
    const deliveries = this.random() < WAKE_TWICE_RATE ? 2 : 1;
    for (let i = 0; i < deliveries; i++) setTimeout(() => this.start(request), this.random() * 100);
  }
}

const percentile = (sorted: number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? 0;
const distribution = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return { count: sorted.length, p50: percentile(sorted, 50), p90: percentile(sorted, 90), p99: percentile(sorted, 99), max: sorted.at(-1) ?? 0 };
};

/** A share of the job items' writes through `clients` wait SLOW_WRITE_MS before they are sent. */
function slowJobWrites(clients: DynamoClients, random: () => number, counted: () => void): void {
  clients.base.middlewareStack.addRelativeTo(
    (next: FinalizeHandler<object, MetadataBearer>) => async (args: FinalizeHandlerArguments<object>) => {
      const item = (args.input as { Item?: { pk?: unknown } }).Item;
      if (item !== undefined && JSON.stringify(item.pk).includes('"JOB#') && random() < SLOW_WRITE_RATE) {
        counted();
        await new Promise((resolve) => setTimeout(resolve, SLOW_WRITE_MS));
      }
      return next(args);
    },
    { relation: 'after', toMiddleware: 'retryMiddleware', name: 'slowJobWrites' },
  );
}

/**
 * The calls through `clients` to a poller's wake item (the waker's reads and holds) that fail, injected faults
 * and all the SDK's retries spent: ensureAwake gives up on that wake, and the entries it judged are left to the
 * next tick. A hold the item refused (its condition) is an answer, not a failure.
 */
function watchPollerWakeFailures(clients: DynamoClients, failedAtMs: number[]): void {
  clients.base.middlewareStack.add(
    (next: InitializeHandler<object, MetadataBearer>) => async (args: InitializeHandlerArguments<object>) => {
      try {
        return await next(args);
      } catch (error) {
        const refusedHold = error instanceof Error && error.name === 'ConditionalCheckFailedException';
        if (!refusedHold && JSON.stringify(args.input).includes('"WAKE#poller#')) failedAtMs.push(Date.now());
        throw error;
      }
    },
    { step: 'initialize', name: 'watchPollerWakeFailures' },
  );
}

/**
 * The scenario's own timetable (the ticks, the bursts' arrivals), kept on the wall clock: the promise under test is
 * a time from an enqueue's answer to its claim, so when things happen is what the run is made of, not a wait for them.
 */
const sleepUntil = (atMs: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, atMs - Date.now())));

/**
 * The functions as the stack runs them: each its own process (a faulty client, a waker of its own); the poller
 * and the sweeper started only by the ticks and by wakes, each start an invocation of the handler with
 * INVOCATION_TIMEOUT_MS remaining; the worker by the poller's asynchronous invokes, some of them lost; the waker
 * by its mapping on the table's stream and by the timers it armed. Resolves once the stream is read from its
 * latest record, before the first tick.
 */
async function startStack(queue: TestQueue, random: () => number) {
  const stop = new AbortController();
  const faultyClients: DynamoClients[] = [];
  const faultCounts: { fn: QueueFunctionName; counts: FaultCounts }[] = [];
  const invocations = new Set<Promise<unknown>>();
  const seen = {
    started: { tick: 0, wake: 0 },
    /** Lambda refused a poller's wake, or a call to a poller's wake item failed (watchPollerWakeFailures). */
    pollerWakeFailedAtMs: [] as number[],
    tickAtMs: [] as number[],
    firstClaimAtMs: new Map<string, number>(),
    slowWrites: 0,
    wakerHoldAnswersLost: { lost: 0 },
    /** The waker's invocations: from the stream (with the lane entries handed) and from its timers, and how long each took. */
    waker: { streamBatches: 0, streamRecords: 0, timerBatches: 0, timers: 0, handlingMs: [] as number[] },
  };
  const track = (run: Promise<unknown>): void => {
    invocations.add(run);
    void run.finally(() => invocations.delete(run));
  };
  const processOf = (fn: QueueFunctionName): QueueContext => {
    const clients = queue.iam.dynamoClientsFor(fn, { endpoint: inject('dynamoEndpoint') });
    faultyClients.push(clients);
    faultCounts.push({ fn, counts: injectFaults(clients.base, { rate: FAULT_RATE, random }) });
    if (fn === 'api') slowJobWrites(clients, random, () => seen.slowWrites++);
    if (fn === 'waker') {
      // Only the waker reads and holds wake items for entries written: its failures are what leaves a job to a tick.
      watchPollerWakeFailures(clients, seen.pollerWakeFailedAtMs);
      // One hold covers a burst, so the waker makes only a few dozen calls a run, and FAULT_RATE may miss them all:
      // its first hold of a poller's wake item (or its first two, sent together) is applied and its answer lost,
      // whatever the draw, so the SDK's retry meets the hold as the first try left it.
      seen.wakerHoldAnswersLost = loseAnswers(clients.base, ({ commandName, input }) => commandName === 'UpdateItemCommand' && JSON.stringify(input).includes('"WAKE#poller#'));
    }
    const base = queue.as(fn);
    return createQueueContext(clients.db, base.settings, { events: base.events, waker: new LambdaWaker(startWoken, random, seen.pollerWakeFailedAtMs) });
  };

  const counter = countingHandler(20);
  /** What the worker reports and what invocations throw; what the functions log as warnings and errors is in `logged`. */
  const errors: ScenarioError[] = [];
  const worker = processOf('worker');
  const invoker: WorkerInvoker = {
    async invoke(batch: WorkerBatch) {
      for (const job of batch.jobs) if (!seen.firstClaimAtMs.has(job.id) && job.claimedAtMs !== undefined) seen.firstClaimAtMs.set(job.id, job.claimedAtMs);
      if (random() < LOST_INVOKE_RATE) return;
      track(
        runWorkerBatch(worker, structuredClone(batch), {
          registry: { handlers: { count: counter.handler }, retryPolicies: {} },
          worker: { id: 'w', host: 'h' },
          onError: (job, error) => errors.push({ by: 'worker', at: `${job.type}/${job.id}`, error }),
        }),
      );
    },
  };
  const sleepers = { poller: processOf('poller'), sweeper: processOf('sweeper') };
  const pollerHandler = createPollerHandler({ ctx: sleepers.poller, invoker, identity: { id: 'poller', host: 'h' }, signal: stop.signal });
  const sweeperHandler = createSweeperHandler({ ctx: sleepers.sweeper, registry: { retryPolicies: {} }, signal: stop.signal });
  function invoke(event: unknown, request: WakeRequest): void {
    if (stop.signal.aborted) return;
    const endsAtMs = Date.now() + INVOCATION_TIMEOUT_MS;
    const handler = request.role === 'poller' ? pollerHandler : sweeperHandler;
    track(handler(event, { getRemainingTimeInMillis: () => endsAtMs - Date.now() }).catch((error: unknown) => errors.push({ by: request.role, error })));
  }
  function startWoken(request: WakeRequest): void {
    seen.started.wake++;
    invoke(wakeEventOf(request), request);
  }
  const { pollerPartitions, shards } = queue.ctx.settings;
  function tick(): void {
    seen.tickAtMs.push(Date.now());
    seen.started.tick++;
    for (let partition = 0; partition < pollerPartitions; partition++) {
      const request: WakeRequest = { role: 'poller', shards: shardsOfPartition(partition, pollerPartitions, shards) };
      invoke({ shards: request.shards }, request);
      // A wake racing the tick: both start at the same instant.
      startWoken(request);
    }
    invoke({}, { role: 'sweeper' });
  }
  const waker = await startWaker(queue, processOf('waker'), {
    signal: stop.signal,
    inFlight: invocations,
    onBatch: (source, records, handlingMs) => {
      if (source === 'stream') {
        seen.waker.streamBatches++;
        seen.waker.streamRecords += records;
      } else {
        seen.waker.timerBatches++;
        seen.waker.timers += records;
      }
      seen.waker.handlingMs.push(handlingMs);
    },
    onError: (error) => errors.push({ by: 'waker', error }),
  });
  // Before the first tick: the poller and the sweeper arm a timer on the waker's queue for the work they leave.
  for (const fn of ['poller', 'sweeper'] as const) sleepers[fn].wakeTimers = waker.timersFor(fn);
  const startedAtMs = Date.now();
  const ticklessFromMs = startedAtMs + FIRST_BURST_AT_MS;
  const ticks = (async () => {
    for (let tickAtMs = startedAtMs; !stop.signal.aborted; tickAtMs += TICK_MS) {
      await sleepUntil(tickAtMs);
      if (!stop.signal.aborted && (tickAtMs < ticklessFromMs || tickAtMs >= ticklessFromMs + TICKLESS_MS)) tick();
    }
  })();

  return {
    startedAtMs,
    seen,
    errors,
    starts: counter.starts,
    startsByAttempt: counter.byAttempt,
    api: () => processOf('api'),
    injected: (fn?: QueueFunctionName) => faultCounts.reduce((sum, { fn: of, counts }) => sum + (fn === undefined || fn === of ? counts.injected : 0), 0),
    calls: (fn: QueueFunctionName) => faultCounts.reduce((sum, { fn: of, counts }) => sum + (fn === of ? counts.calls : 0), 0),
    async stop() {
      stop.abort();
      await ticks;
      while (invocations.size > 0) await Promise.allSettled([...invocations]);
      await waker.stop();
      for (const clients of faultyClients) clients.base.destroy();
    },
  };
}

/**
 * The waker as the stack starts it (infra/local/waker.ts): its mapping on the table's stream, with the stack's
 * filters, its reads checked against its role, and its timer queue, whose sends are checked too; both hand their
 * batches to one handler, with `ctx` (the waker's faulty clients and its Lambda-like waker).
 */
function startWaker(
  queue: TestQueue,
  ctx: QueueContext,
  options: {
    signal: AbortSignal;
    inFlight: Set<Promise<unknown>>;
    onBatch: (source: 'stream' | 'timers', records: number, handlingMs: number) => void;
    onError: (error: unknown) => void;
  },
) {
  return startLocalWaker({
    iam: queue.iam,
    ctx,
    clientOptions: { endpoint: inject('dynamoEndpoint') },
    tableName: queue.tableName,
    inFlight: options.inFlight,
    signal: options.signal,
    invoke: async (run, source, records) => {
      const startedAtMs = Date.now();
      try {
        await run();
      } finally {
        options.onBatch(source, records, Date.now() - startedAtMs);
      }
    },
    onError: (error) => options.onError(error),
  });
}

/** BURSTS bursts of BURST_JOBS jobs from two api instances, half due on arrival, each sent again while its outcome is unknown. */
async function enqueueBursts(instances: QueueContext[], types: Map<string, JobType>, random: () => number, fromMs: number) {
  const accepted: Accepted[] = [];
  /** Enqueues never answered: each may have made its job, or not. */
  const unanswered: { type: string; id: string }[] = [];
  const LANES = 5;
  await Promise.all(
    Array.from({ length: LANES }, async (_, lane) => {
      for (let i = lane; i < JOBS; i += LANES) {
        const burst = Math.floor(i / BURST_JOBS);
        await sleepUntil(fromMs + FIRST_BURST_AT_MS + burst * BURST_EVERY_MS + ((i % BURST_JOBS) * BURST_MS) / BURST_JOBS);
        const type = i % LIMITED_EVERY === 0 ? 'limited' : ['plain', 'once'][i % 2]!;
        const dueOnArrival = random() < 0.5;
        const input: JobInput = { data: { i }, priority: 100, weight: 1, ...(dueOnArrival ? {} : { runAfterMs: Date.now() + Math.floor(random() * AHEAD_MS) }) };
        const sentAtMs = Date.now();
        for (let send = 1; send <= SEND_TRIES; send++) {
          try {
            const { job } = await enqueueJob(instances[lane % instances.length]!, types.get(type)!, `${type}-${i}`, input);
            accepted.push({ type, id: job.id, dueOnArrival, sentAtMs, answeredAtMs: Date.now(), runAfterMs: job.runAfterMs });
            break;
          } catch {
            if (send === SEND_TRIES) unanswered.push({ type, id: `${type}-${i}` });
          }
        }
      }
    }),
  );
  return { accepted, unanswered };
}

/**
 * How late each job was claimed, from when it was due and written, and which jobs due on arrival broke the
 * promise: onTimeMs, or, with a poller's wake failed around it, the first tick after it and onTimeMs. Around it:
 * the waker judges its entry between its write (after it was sent) and STREAM_LAG_MS after its answer, and a
 * failed wake leaves what it judged to the tick, and so does the hold it leaves for INDEX_LAG_MS after, since one hold
 * covers a burst: an entry judged under it asks for nothing.
 */
function judgeLateness(accepted: Accepted[], seen: Awaited<ReturnType<typeof startStack>>['seen'], onTimeMs: number) {
  const lateness = (job: Accepted): number => Math.max(0, (seen.firstClaimAtMs.get(job.id) ?? Infinity) - Math.max(job.runAfterMs, job.answeredAtMs));
  const wakeFailedAround = (job: Accepted): boolean =>
    seen.pollerWakeFailedAtMs.some((atMs) => atMs >= job.sentAtMs - INDEX_LAG_MS && atMs <= job.answeredAtMs + STREAM_LAG_MS);
  const firstTickAfter = (atMs: number): number => seen.tickAtMs.find((tickMs) => tickMs >= atMs) ?? Infinity;
  // The limited type's jobs wait for a slot as well as for a poller; only the others measure the wakes.
  const measured = accepted.filter((job) => job.type !== 'limited');
  const dueNow = measured.filter((job) => job.dueOnArrival);
  const late = dueNow.filter((job) => lateness(job) > onTimeMs);
  return {
    dueNowMs: distribution(dueNow.map(lateness)),
    dueLaterMs: distribution(measured.filter((job) => !job.dueOnArrival).map(lateness)),
    late: late.map((job) => ({ id: job.id, lateMs: lateness(job), wakeFailed: wakeFailedAround(job) })),
    broken: late.flatMap((job) => {
      const promisedMs = wakeFailedAround(job) ? firstTickAfter(job.answeredAtMs) - job.answeredAtMs + onTimeMs : onTimeMs;
      return lateness(job) <= promisedMs ? [] : [`${job.id}: claimed ${lateness(job)} ms after its enqueue answered, promised within ${promisedMs} ms`];
    }),
  };
}

async function defineTypes(ctx: QueueContext): Promise<Map<string, JobType>> {
  const body = { target: { kind: 'handler', name: 'count' }, attempts: 10, retry: { kind: 'fixed', delay_s: 1 }, visibility_timeout_s: 2 };
  const types = new Map<string, JobType>();
  for (const [name, extra] of [
    ['plain', {}],
    ['once', { delivery_strategy: 'at_most_once', attempts: 1 }],
    ['limited', { concurrency: LIMITED_CONCURRENCY }],
  ] as const) {
    types.set(name, (await putJobType(ctx, name, parseJobTypeDefinition({ ...body, ...extra }))).jobType);
  }
  return types;
}

function runScenario(indexLagMs: number, seed: number) {
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
    const stack = await startStack(queue, random);
    const { accepted, unanswered } = await enqueueBursts([stack.api(), stack.api()], types, random, stack.startedAtMs);
    const open = await waitUntilTerminal(queue.ctx, accepted, SETTLE_MS);
    await stack.stop();

    // What the functions logged as warnings or errors (the handlers log what they survive): each must be a fault injected here.
    const loggedErrors = logged.splice(0).map((line): ScenarioError => ({ by: line.includes('"sweep') ? 'sweeper' : 'poller', error: new Error(line) }));
    const audit = await auditJobs(queue.ctx, accepted, stack.starts, types, {
      unknown: unanswered,
      startsByAttempt: stack.startsByAttempt,
      errors: [...stack.errors, ...loggedErrors],
      expectedError: isInjected,
    });
    const lateness = judgeLateness(accepted, stack.seen, onTimeMsOf(indexLagMs));
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
  // The handlers log every invocation; the run prints its own summary. Their warnings and errors are kept, and the
  // audit refuses each that is not an injected fault.
  beforeAll(() => {
    vi.spyOn(console, 'log').mockImplementation(() => undefined);
    vi.spyOn(console, 'error').mockImplementation((...args: unknown[]) => void logged.push(args.map(String).join(' ')));
  });
  afterAll(() => vi.restoreAllMocks());

  // The normal suite runs the lagging index alone, to stay short; the soak runs both.
  if (FULL) describe('the index current', () => runScenario(0, 30));
  describe('the index lagging', () => runScenario(1_000, 31));
});
