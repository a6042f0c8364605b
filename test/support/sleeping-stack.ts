/**
 * The queue's functions as the stack runs them while pollers and sweepers sleep (lib/queue/wake/*), for the fault
 * suite's wake scenarios: each function its own process with clients of its own role; the poller and the sweeper
 * started only by ticks and wakes, each start an invocation of the handler with a Lambda-like remaining time; the
 * worker by the poller's asynchronous invokes; the waker by its mapping on the table's stream and by the timers it
 * and the sleepers arm (infra/local/waker.ts). Jobs come in bursts from api instances, and each is judged by how
 * late it was claimed and audited (support/scenario.ts).
 */
import { setMaxListeners } from 'node:events';
import type { FinalizeHandler, FinalizeHandlerArguments, InitializeHandler, InitializeHandlerArguments, MetadataBearer } from '@smithy/types';
import { afterAll, beforeAll, inject, vi } from 'vitest';
import { createPollerHandler } from '../../functions/poller/app.js';
import { createSweeperHandler } from '../../functions/sweeper/app.js';
import type { QueueFunctionName } from '../../infra/local/aws/iam/stack-policies.js';
import { startLocalWaker, type LocalWakerOptions } from '../../infra/local/waker.js';
import { createLambdaInvoker, createLambdaWaker } from '../../lib/aws/lambda.js';
import { parseWakeTimer, wakeEventOf, type WakeInvoker, type WakeRequest, type WakeTimer, type WorkerBatch, type WorkerInvoker } from '../../lib/domain/invocations.js';
import type { JobType } from '../../lib/domain/job-type.js';
import type { Job, JobInput } from '../../lib/domain/job.js';
import { abortableSleep } from '../../lib/domain/sleep.js';
import { runWorkerBatch } from '../../lib/queue/attempt/run-batch.js';
import type { JobHandler } from '../../lib/targets/handler.js';
import { putJobType } from '../../lib/queue/catalog/job-types.js';
import { createQueueContext, type QueueContext } from '../../lib/queue/context.js';
import { enqueueJob } from '../../lib/queue/enqueue/enqueue.js';
import type { DynamoClients } from '../../lib/store/client.js';
import { jobKey, shardsOfPartition } from '../../lib/store/keys.js';
import { parseJobTypeDefinition } from '../../lib/wire/job-types.js';
import { injectFaults, loseAnswers, type FaultCounts } from './faults.js';
import { startHangingLambda } from './hanging-lambda.js';
import type { TestQueue } from './queue.js';
import type { ScenarioError, StartCounter } from './scenario.js';

/** The functions the stack lets wake the poller and the sweeper (infra/local/runtime.ts's WAKERS): the worker wakes no one. */
const WAKERS: ReadonlySet<QueueFunctionName> = new Set(['api', 'poller', 'sweeper', 'waker']);

/** How Lambda answers the asynchronous invokes of a run: wakes (of the poller, of the sweeper) and worker batches. */
export interface InvokeFaults {
  /** Wakes Lambda refuses (the caller's wake throws), and wakes it delivers twice. */
  wakeRefusalRate: number;
  wakeTwiceRate: number;
  /** The first poller wake of a run is refused whatever the draw, so each run sees a job left to a tick. */
  refuseFirstPollerWake: boolean;
  /** Worker invokes lost on the way: their claims lapse and the sweeper hands them back. */
  lostInvokeRate: number;
  /**
   * Every invoke's answer comes `ms` late, Lambda having queued its event at once, and its function starting as
   * usual. `deployed`: the callers reach Lambda's API (support/hanging-lambda.ts) through the deployed clients,
   * which give up within ASYNC_DELIVERY_CALL_LIMITS and may send it again; `waiting`: callers that wait it out.
   */
  hang?: { ms: number; callers: 'deployed' | 'waiting' };
}

export const PROMPT_INVOKES: InvokeFaults = { wakeRefusalRate: 0, wakeTwiceRate: 0, refuseFirstPollerWake: false, lostInvokeRate: 0 };

/** Lambda's asynchronous invoke of a function, as a WakeInvoker: started a little later, sometimes twice, sometimes refused, maybe answered late. */
export class LambdaWaker implements WakeInvoker {
  constructor(
    private readonly start: (request: WakeRequest) => void,
    private readonly random: () => number,
    private readonly faults: InvokeFaults,
    /** When a poller's wake failed: what the jobs written then were promised changes. */
    private readonly pollerWakeFailedAtMs: number[],
    private readonly hung: { invokes: number },
    /** Ends the answers still hanging, as a stopped runtime's callers would no longer wait. */
    private readonly signal: AbortSignal,
  ) {}

  async wake(request: WakeRequest): Promise<void> {
    const firstOfPoller = this.faults.refuseFirstPollerWake && request.role === 'poller' && this.pollerWakeFailedAtMs.length === 0;
    if (firstOfPoller || this.random() < this.faults.wakeRefusalRate) {
      if (request.role === 'poller') this.pollerWakeFailedAtMs.push(Date.now());
      throw Object.assign(new Error('injected: TooManyRequestsException'), { name: 'TooManyRequestsException' });
    }
    const deliveries = this.random() < this.faults.wakeTwiceRate ? 2 : 1;
    for (let i = 0; i < deliveries; i++) setTimeout(() => this.start(request), this.random() * 100);
    await waitOutHang(this.faults, this.hung, this.signal);
  }
}

/** An invoke's answer, hanging for its callers that wait it out. */
async function waitOutHang(faults: InvokeFaults, hung: { invokes: number }, signal: AbortSignal): Promise<void> {
  if (faults.hang?.callers !== 'waiting') return;
  hung.invokes++;
  await abortableSleep(faults.hang.ms, signal);
}

export interface Distribution {
  count: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

const percentile = (sorted: number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? 0;
export const distribution = (values: number[]): Distribution => {
  const sorted = [...values].sort((a, b) => a - b);
  return { count: sorted.length, p50: percentile(sorted, 50), p90: percentile(sorted, 90), p99: percentile(sorted, 99), max: sorted.at(-1) ?? 0 };
};

/**
 * A scenario's own timetable (the ticks, the bursts' arrivals, its faults' spells), kept on the wall clock: the
 * promise under test is a time from an enqueue's answer to its claim, so when things happen is what the run is made
 * of, not a wait for them.
 */
export const sleepUntil = (atMs: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, atMs - Date.now())));

/** A share of the job items' writes through `clients` wait `ms` before they are sent. */
function slowJobWrites(clients: DynamoClients, slow: { rate: number; ms: number }, random: () => number, counted: () => void): void {
  clients.base.middlewareStack.addRelativeTo(
    (next: FinalizeHandler<object, MetadataBearer>) => async (args: FinalizeHandlerArguments<object>) => {
      const item = (args.input as { Item?: { pk?: unknown } }).Item;
      if (item !== undefined && JSON.stringify(item.pk).includes('"JOB#') && random() < slow.rate) {
        counted();
        await new Promise((resolve) => setTimeout(resolve, slow.ms));
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
 * Claim renewals the worker sent (each try of lib/queue/attempt/renew-claim.ts's write), and those sent once the
 * claim they renew had lapsed: while its attempt ran (the sweeper may have handed the job back, to start again), or
 * before (a batch that reached the worker late: the renewal revives the claim or fails, and nothing had started).
 */
export interface Renewals {
  sent: number;
  /** By `job#token@until`, how long after the deadline it was to move on each late renewal of a running attempt left. */
  lateMs: Map<string, number>;
  lateBeforeStart: number;
}

/**
 * Each claim's deadline as the worker last made it (by the job's key and claim token): set from the batch that
 * brought the claim, moved on by each renewal that landed.
 */
type ClaimDeadlines = Map<string, number>;
const claimOf = (pk: unknown, token: unknown): string => `${String(pk)}#${String(token)}`;

/**
 * Watches the worker's renewals (extendClaimParams: conditioned on `claimedUntilMs < :until`) through `clients`: a
 * try sent at or after the deadline it moves on lands on a lapsed claim, which the sweeper may have handed back;
 * one of an attempt `running` (its handler started) lets an at_least_once job start twice.
 */
function watchRenewals(clients: DynamoClients, deadlines: ClaimDeadlines, running: ReadonlySet<string>, renewals: Renewals): void {
  clients.base.middlewareStack.addRelativeTo(
    (next: FinalizeHandler<object, MetadataBearer>) => async (args: FinalizeHandlerArguments<object>) => {
      const input = args.input as { ConditionExpression?: string; Key?: { pk?: { S?: string } }; ExpressionAttributeValues?: Record<string, { S?: string; N?: string }> };
      if (!input.ConditionExpression?.endsWith('AND claimedUntilMs < :until')) return next(args);
      const values = input.ExpressionAttributeValues ?? {};
      const claim = claimOf(input.Key?.pk?.S, values[':token']?.S);
      const untilMs = Number(values[':until']?.N);
      renewals.sent++;
      const deadlineMs = deadlines.get(claim);
      const renewal = `${claim}@${untilMs}`;
      if (deadlineMs !== undefined && Date.now() >= deadlineMs && !renewals.lateMs.has(renewal)) {
        if (running.has(claim)) renewals.lateMs.set(renewal, Date.now() - deadlineMs);
        else renewals.lateBeforeStart++;
      }
      const output = await next(args);
      deadlines.set(claim, Math.max(deadlines.get(claim) ?? 0, untilMs));
      return output;
    },
    { relation: 'after', toMiddleware: 'retryMiddleware', name: 'watchRenewals' },
  );
}

export interface StackOptions {
  /** Every draw of the run's faults: a seeded source makes a run repeatable. */
  random: () => number;
  /** The share of every function's DynamoDB calls that fail (support/faults.ts); none when 0. */
  dynamoFaultRate: number;
  /** A share of the api's job writes that wait this long before they are sent (a brownout, the SDK's backoff). */
  slowJobWrites?: { rate: number; ms: number };
  /** The waker's first hold of a poller's wake item (or its first two, sent together) is applied and its answer lost. */
  loseWakerHoldAnswer?: boolean;
  invokes: InvokeFaults;
  /** The minute tick, shortened to keep a run short. */
  tickMs: number;
  /** A stretch without ticks, from this long after the start. */
  tickless?: { fromMs: number; forMs: number };
  /** A Lambda invocation's timeout: what the handlers are told remains when they start. */
  invocationTimeoutMs: number;
  /** The handler every job type targets ('count'), counting its starts. */
  counter: StartCounter;
  /** How the waker's two mappings misbehave; whatever they lose or drop, the run records. */
  mappings?: {
    stream?: Omit<NonNullable<LocalWakerOptions['stream']>, 'onExpired'>;
    timers?: Omit<NonNullable<LocalWakerOptions['timers']>, 'onLost'>;
  };
}

export type SleepingStack = Awaited<ReturnType<typeof startStack>>;
export type Seen = SleepingStack['seen'];

/**
 * Starts the functions as the stack runs them on `queue` (see the file's head), each with its own faulty clients
 * and the waker's with a Lambda-like waker. Resolves once the stream is read from its latest record, before the
 * first tick.
 */
export async function startStack(queue: TestQueue, options: StackOptions) {
  const { random } = options;
  const stop = new AbortController();
  // Every invocation, answer hanging and loop of the run waits on it.
  setMaxListeners(0, stop.signal);
  /** Every process's clients, by its context, until the run stops (or its worker invocation ends). */
  const faultyClients = new Map<QueueContext, DynamoClients>();
  const faultCounts: { fn: QueueFunctionName; counts: FaultCounts }[] = [];
  const invocations = new Set<Promise<unknown>>();
  const deadlines: ClaimDeadlines = new Map();
  /** The claims whose attempt's handler runs. */
  const running = new Set<string>();
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
    /** Records the stream's mapping dropped for their age; timers the queue lost. */
    streamRecordsExpired: 0,
    timersLost: [] as WakeTimer[],
    /** Invokes whose answer hung (InvokeFaults.hang). */
    hung: { invokes: 0 },
    renewals: { sent: 0, lateMs: new Map(), lateBeforeStart: 0 } as Renewals,
    /** Invokes the deployed clients gave up on (InvokeFaults.hang). */
    gaveUp: { invokes: 0 },
  };
  const track = (run: Promise<unknown>): void => {
    invocations.add(run);
    void run.finally(() => invocations.delete(run));
  };
  const processOf = (fn: QueueFunctionName): QueueContext => {
    const clients = queue.iam.dynamoClientsFor(fn, { endpoint: inject('dynamoEndpoint') });
    if (options.dynamoFaultRate > 0) faultCounts.push({ fn, counts: injectFaults(clients.base, { rate: options.dynamoFaultRate, random }) });
    if (fn === 'api' && options.slowJobWrites) slowJobWrites(clients, options.slowJobWrites, random, () => seen.slowWrites++);
    if (fn === 'worker') watchRenewals(clients, deadlines, running, seen.renewals);
    if (fn === 'waker') {
      // Only the waker reads and holds wake items for entries written: its failures are what leaves a job to a tick.
      watchPollerWakeFailures(clients, seen.pollerWakeFailedAtMs);
      if (options.loseWakerHoldAnswer) {
        // One hold covers a burst, so the waker makes only a few dozen calls a run, and a fault rate may miss them
        // all: its first hold is applied and its answer lost whatever the draw, so the SDK's retry meets the hold as
        // the first try left it.
        seen.wakerHoldAnswersLost = loseAnswers(clients.base, ({ commandName, input }) => commandName === 'UpdateItemCommand' && JSON.stringify(input).includes('"WAKE#poller#'));
      }
    }
    const base = queue.as(fn);
    const ctx = createQueueContext(clients.db, base.settings, { events: base.events, ...(WAKERS.has(fn) ? { waker: wakerOf() } : {}) });
    faultyClients.set(ctx, clients);
    return ctx;
  };
  const lambda =
    options.invokes.hang?.callers === 'deployed'
      ? await startHangingLambda({
          hangMs: options.invokes.hang.ms,
          invoked: (functionName, event) => {
            seen.hung.invokes++;
            if (functionName === 'worker') runBatch(event as WorkerBatch);
            else startWoken(functionName === 'poller' ? { role: 'poller', shards: (event as { shards: number[] }).shards } : { role: 'sweeper' });
          },
        })
      : undefined;
  const wakerOf = (): WakeInvoker =>
    lambda
      ? createLambdaWaker(lambda.client(seen.gaveUp), { pollerFunctionName: 'poller', sweeperFunctionName: 'sweeper' })
      : new LambdaWaker(startWoken, random, options.invokes, seen.pollerWakeFailedAtMs, seen.hung, stop.signal);

  /** What the worker reports and what invocations throw; what the functions log as warnings and errors is the file's to keep. */
  const errors: ScenarioError[] = [];
  const claimOfJob = (job: Pick<Job, 'type' | 'id' | 'claimToken'>): string => claimOf(jobKey(job.type, job.id).pk, job.claimToken);
  const count = options.counter.handler;
  const handler: JobHandler = async (data, context) => {
    running.add(claimOfJob(context.job));
    try {
      return await count(data, context);
    } finally {
      running.delete(claimOfJob(context.job));
    }
  };
  /**
   * A batch as it reaches a worker invocation: its claims noted, and its jobs run. Lambda runs invocations at once
   * in execution environments of their own, so each has its own clients: one client for them all would queue their
   * calls behind its sockets and make renewals late that are not.
   */
  function runBatch(batch: WorkerBatch): void {
    for (const job of batch.jobs) {
      if (!seen.firstClaimAtMs.has(job.id) && job.claimedAtMs !== undefined) seen.firstClaimAtMs.set(job.id, job.claimedAtMs);
      if (job.claimedUntilMs !== undefined && !deadlines.has(claimOfJob(job))) deadlines.set(claimOfJob(job), job.claimedUntilMs);
    }
    const worker = processOf('worker');
    const run = runWorkerBatch(worker, batch, {
      registry: { handlers: { count: handler }, retryPolicies: {} },
      worker: { id: 'w', host: 'h' },
      onError: (job, error) => errors.push({ by: 'worker', at: `${job.type}/${job.id}`, error }),
    });
    track(
      run.finally(() => {
        faultyClients.get(worker)?.base.destroy();
        faultyClients.delete(worker);
      }),
    );
  }
  const invoker: WorkerInvoker = lambda
    ? createLambdaInvoker(lambda.client(seen.gaveUp), 'worker')
    : {
        async invoke(batch: WorkerBatch) {
          if (random() < options.invokes.lostInvokeRate) {
            // Its claims are noted all the same: the sweeper hands them back, and the job's first claim was this one.
            for (const job of batch.jobs) if (!seen.firstClaimAtMs.has(job.id) && job.claimedAtMs !== undefined) seen.firstClaimAtMs.set(job.id, job.claimedAtMs);
            return;
          }
          runBatch(structuredClone(batch));
          await waitOutHang(options.invokes, seen.hung, stop.signal);
        },
      };
  const sleepers = { poller: processOf('poller'), sweeper: processOf('sweeper') };
  const pollerHandler = createPollerHandler({ ctx: sleepers.poller, invoker, identity: { id: 'poller', host: 'h' }, signal: stop.signal });
  const sweeperHandler = createSweeperHandler({ ctx: sleepers.sweeper, registry: { retryPolicies: {} }, signal: stop.signal });
  function invoke(event: unknown, request: WakeRequest): void {
    if (stop.signal.aborted) return;
    const endsAtMs = Date.now() + options.invocationTimeoutMs;
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
  const waker = await startLocalWaker({
    iam: queue.iam,
    ctx: processOf('waker'),
    clientOptions: { endpoint: inject('dynamoEndpoint') },
    tableName: queue.tableName,
    inFlight: invocations,
    signal: stop.signal,
    invoke: async (run, source, records) => {
      const startedAtMs = Date.now();
      try {
        await run();
      } finally {
        if (source === 'stream') {
          seen.waker.streamBatches++;
          seen.waker.streamRecords += records;
        } else {
          seen.waker.timerBatches++;
          seen.waker.timers += records;
        }
        seen.waker.handlingMs.push(Date.now() - startedAtMs);
      }
    },
    onError: (error) => errors.push({ by: 'waker', error }),
    stream: { ...options.mappings?.stream, onExpired: (records) => void (seen.streamRecordsExpired += records) },
    timers: {
      ...options.mappings?.timers,
      onLost: (body) => {
        const timer = parseWakeTimer(body);
        if (timer) seen.timersLost.push(timer);
      },
    },
  });
  // Before the first tick: the poller and the sweeper arm a timer on the waker's queue for the work they leave.
  for (const fn of ['poller', 'sweeper'] as const) sleepers[fn].wakeTimers = waker.timersFor(fn);
  const startedAtMs = Date.now();
  const ticked = (tickAtMs: number): boolean =>
    options.tickless === undefined || tickAtMs < startedAtMs + options.tickless.fromMs || tickAtMs >= startedAtMs + options.tickless.fromMs + options.tickless.forMs;
  const ticks = (async () => {
    for (let tickAtMs = startedAtMs; !stop.signal.aborted; tickAtMs += options.tickMs) {
      // Ended by the stop, so a run ends with its jobs rather than at the next tick.
      await abortableSleep(tickAtMs - Date.now(), stop.signal);
      if (!stop.signal.aborted && ticked(tickAtMs)) tick();
    }
  })();

  return {
    startedAtMs,
    seen,
    errors,
    /** The waker's mapping on the table's stream, to take down for a spell. */
    stream: waker.stream,
    api: () => processOf('api'),
    injected: (fn?: QueueFunctionName) => faultCounts.reduce((sum, { fn: of, counts }) => sum + (fn === undefined || fn === of ? counts.injected : 0), 0),
    calls: (fn: QueueFunctionName) => faultCounts.reduce((sum, { fn: of, counts }) => sum + (fn === of ? counts.calls : 0), 0),
    async stop() {
      stop.abort();
      await ticks;
      while (invocations.size > 0) await Promise.allSettled([...invocations]);
      await waker.stop();
      await lambda?.close();
      for (const clients of faultyClients.values()) clients.base.destroy();
    },
  };
}

/** An enqueue that was answered: when it was sent and answered, and when its job falls due. */
export interface Accepted {
  type: string;
  id: string;
  dueOnArrival: boolean;
  sentAtMs: number;
  answeredAtMs: number;
  runAfterMs: number;
}

export interface BurstPlan {
  /**
   * When each burst begins, from the stack's start, the share of its jobs due on arrival (half by default), and how
   * far ahead the others fall due (at most).
   */
  bursts: readonly { atMs: number; dueOnArrival?: number; aheadMs: number }[];
  jobsPerBurst: number;
  /** A burst's jobs are sent evenly over this long. */
  burstMs: number;
  /** One job in this many is of the limited type; none when not given. */
  limitedEvery?: number;
  /** How often an enqueue whose outcome is unknown is sent. */
  sendTries: number;
  /** Every `every`-th job (from the second) runs `ms`, past half its type's visibility timeout, so its claim is renewed. */
  longWork?: { every: number; ms: number };
}

/** The plan's bursts from api `instances`, each job sent again while its outcome is unknown. */
export async function enqueueBursts(instances: QueueContext[], types: Map<string, JobType>, random: () => number, fromMs: number, plan: BurstPlan) {
  const accepted: Accepted[] = [];
  /** Enqueues never answered: each may have made its job, or not. */
  const unanswered: { type: string; id: string }[] = [];
  const LANES = 5;
  const jobs = plan.bursts.length * plan.jobsPerBurst;
  await Promise.all(
    Array.from({ length: LANES }, async (_, lane) => {
      for (let i = lane; i < jobs; i += LANES) {
        const burst = plan.bursts[Math.floor(i / plan.jobsPerBurst)]!;
        await sleepUntil(fromMs + burst.atMs + ((i % plan.jobsPerBurst) * plan.burstMs) / plan.jobsPerBurst);
        const type = plan.limitedEvery !== undefined && i % plan.limitedEvery === 0 ? 'limited' : ['plain', 'once'][i % 2]!;
        const dueOnArrival = random() < (burst.dueOnArrival ?? 0.5);
        const workMs = plan.longWork && i % plan.longWork.every === 1 ? { workMs: plan.longWork.ms } : {};
        const input: JobInput = { data: { i, ...workMs }, priority: 100, weight: 1, ...(dueOnArrival ? {} : { runAfterMs: Date.now() + Math.floor(random() * burst.aheadMs) }) };
        const sentAtMs = Date.now();
        for (let send = 1; send <= plan.sendTries; send++) {
          try {
            const { job } = await enqueueJob(instances[lane % instances.length]!, types.get(type)!, `${type}-${i}`, input);
            accepted.push({ type, id: job.id, dueOnArrival, sentAtMs, answeredAtMs: Date.now(), runAfterMs: job.runAfterMs });
            break;
          } catch {
            if (send === plan.sendTries) unanswered.push({ type, id: `${type}-${i}` });
          }
        }
      }
    }),
  );
  return { accepted, unanswered };
}

/** How long after it was due and written (its due time or its enqueue's answer, whichever came later) a job was first claimed. */
export const latenessOf =
  (seen: Seen) =>
  (job: Accepted): number =>
    Math.max(0, (seen.firstClaimAtMs.get(job.id) ?? Infinity) - Math.max(job.runAfterMs, job.answeredAtMs));

/** The first tick at or after `atMs`, or Infinity when the run had none after it. */
export const firstTickAfter = (seen: Seen, atMs: number): number => seen.tickAtMs.find((tickMs) => tickMs >= atMs) ?? Infinity;

/**
 * How late the jobs were claimed, due on arrival and due later, and which broke their promise: `promisedMsOf` says
 * how long after it was due and written each may be claimed (Infinity: not judged). The limited type's jobs wait
 * for a slot as well as for a poller, so only the others measure the wakes.
 */
export function judgeLateness(accepted: Accepted[], seen: Seen, promisedMsOf: (job: Accepted) => number) {
  const lateness = latenessOf(seen);
  const measured = accepted.filter((job) => job.type !== 'limited');
  return {
    dueNowMs: distribution(measured.filter((job) => job.dueOnArrival).map(lateness)),
    dueLaterMs: distribution(measured.filter((job) => !job.dueOnArrival).map(lateness)),
    broken: measured.flatMap((job) => {
      const promisedMs = promisedMsOf(job);
      return lateness(job) <= promisedMs ? [] : [`${job.id}: claimed ${lateness(job)} ms after it was due and written, promised within ${promisedMs} ms`];
    }),
  };
}

export const LIMITED_CONCURRENCY = 2;

/**
 * The types the bursts enqueue: at_least_once (plain), at_most_once (once), and at_least_once two at a time
 * (limited), each claim lapsing `visibilityTimeoutS` after it was made or renewed.
 */
export async function defineTypes(ctx: QueueContext, visibilityTimeoutS = 2): Promise<Map<string, JobType>> {
  const body = { target: { kind: 'handler', name: 'count' }, attempts: 10, retry: { kind: 'fixed', delay_s: 1 }, visibility_timeout_s: visibilityTimeoutS };
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

/**
 * Quiets the functions' logs for the file (each run prints its own summary), keeping their warnings and errors
 * (console.error): `take` hands those logged since it was last called, for the audit to refuse each that is not
 * an injected fault.
 */
export function keepFunctionWarnings(): { take: () => ScenarioError[] } {
  const logged: string[] = [];
  beforeAll(() => {
    vi.spyOn(console, 'log').mockImplementation(() => undefined);
    vi.spyOn(console, 'error').mockImplementation((...args: unknown[]) => void logged.push(args.map(String).join(' ')));
  });
  afterAll(() => vi.restoreAllMocks());
  return { take: () => logged.splice(0).map((line): ScenarioError => ({ by: line.includes('"sweep') ? 'sweeper' : 'poller', error: new Error(line) })) };
}
