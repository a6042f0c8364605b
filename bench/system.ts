/**
 * The queue as it runs in production, wired in one process for a benchmark: the
 * real poller loop, worker batches and sweeper, each on its own DynamoDB client
 * so capacity is counted per phase, and a no-op handler that records when each
 * job started.
 */
import { randomUUID } from 'node:crypto';
import { DeleteTableCommand } from '@aws-sdk/client-dynamodb';
import { createSweeperHandler } from '../functions/sweeper/app.js';
import { createJobGate } from './job-gate.js';
import type { AttemptSpan } from './mix-analysis.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { trackConsumedCapacity, type CapacityTotals } from '../infra/local/aws/capacity-meter.js';
import { createQueueContext, type QueueContext } from '../lib/queue/context.js';
import { type QueueSettings } from '../lib/queue/settings.js';
import { createDynamoClients, type DynamoClients } from '../lib/store/client.js';
import { putJobType, setJobTypePaused } from '../lib/queue/catalog/job-types.js';
import { parseJobTypeDefinition } from '../lib/wire/job-types.js';
import type { DeliveryStrategy, JobType } from '../lib/domain/job-type.js';
import { runPollerLoop } from '../lib/queue/poll/poller-loop.js';
import { leaseLoopOptions, startPollerAwake, type PollerAwake } from '../lib/queue/wake/poller-stays.js';
import type { WakeInvoker, WorkerInvoker, WorkerBatch } from '../lib/domain/invocations.js';
import { scheduledRole } from './stack-like.js';
import { ensureTable } from '../lib/store/table.js';
import { runWorkerBatch, type WorkerRegistry, type BatchResult, type JobHandler } from '../lib/queue/attempt/run-batch.js';

export const PHASES = ['enqueue', 'poll', 'claim', 'finish', 'sweep'] as const;
export type Phase = (typeof PHASES)[number];

export interface PhaseCapacity {
  writeUnits: number;
  readUnits: number;
  calls: number;
  byCommand: CapacityTotals['byCommand'];
}

export const BENCH_TYPE = 'bench-noop';
const NOOP_HANDLER = 'bench_noop';
/** Another type beside the bench's own, paused at first, whose jobs run uncounted (W2-bulk's replays). */
export const OTHER_TYPE = 'bench-other';
const OTHER_HANDLER = 'bench_other';

export interface SystemOptions {
  endpoint: string;
  settings: QueueSettings;
  /** Pollers running at once. */
  pollers: number;
  /** Give each poller its own subset of shards instead of letting them race over all of them. */
  splitShards: boolean;
  /** Jobs the one worker process runs at once. */
  workerConcurrency: number;
  delivery: DeliveryStrategy;
  /** The job type's concurrency limit; undefined: unlimited. */
  typeConcurrency: number | undefined;
  /** Throttle keys held at limit 0, so their jobs wait for ever; none by default. */
  blockedKeys?: string[];
  /** The no-op type's `throttle`, as the API takes it (a feature workload's per-key rates). */
  throttle?: unknown;
  /** Start the pollers and the sweeper now, or later with `start()`. */
  startNow: boolean;
  /** The weighted mix instead of the no-op type (bench/mix.ts): limits, and a handler that works and fails as told. */
  mix?: MixType;
}

export interface MixType {
  concurrency: number;
  /** Each key's share of the concurrency; the job's `region` is its key. */
  shares: Record<string, number>;
}

/** What a mix job's handler is told to do. */
export interface MixPayload {
  region: string;
  workMs: number;
  failFirst: boolean;
}

export interface Start {
  dueAtMs: number;
  claimedAtMs: number;
  startedAtMs: number;
}

/** Who started what, when: the no-op handler's record. */
export class StartLog {
  readonly starts = new Map<string, Start[]>();
  distinct = 0;
  total = 0;
  record(id: string, start: Start): void {
    const seen = this.starts.get(id);
    if (seen) seen.push(start);
    else {
      this.starts.set(id, [start]);
      this.distinct++;
    }
    this.total++;
  }
  duplicates(): number {
    return this.total - this.distinct;
  }
  /** `to - from` of each job's first start: started - due is the scheduling lag, claimed - due and started - claimed split it. */
  spansMs(from: keyof Start, to: keyof Start): number[] {
    const spans: number[] = [];
    for (const [first] of this.starts.values()) if (first) spans.push(first[to] - first[from]);
    return spans;
  }
  lastStartMs(): number {
    let last = 0;
    for (const [first] of this.starts.values()) if (first && first.startedAtMs > last) last = first.startedAtMs;
    return last;
  }
}

export interface RunningSystem {
  tableName: string;
  jobType: JobType;
  otherType: JobType;
  producerCtx: QueueContext;
  startLog: StartLog;
  /** The mix's attempts as its handler saw them; empty for the no-op type. */
  attemptSpans: AttemptSpan[];
  counts: {
    outcomes: BatchResult;
    invocations: number;
    claimed: number;
    polls: number;
    lostRaces: number;
    pollErrors: number;
    /** Time the outcome of the n-th succeeded job was recorded, for the drain time. */
    succeededAtMs: number[];
    maxQueuedBatches: number;
  };
  capacity(): Record<Phase, PhaseCapacity>;
  start(): void;
  stop(): Promise<void>;
}

function emptyOutcomes(): BatchResult {
  return { succeeded: 0, failed: 0, retrying: 0, awaiting_callback: 0, expired: 0, rescheduled: 0, claim_lapsed: 0, already_started: 0, cancelled: 0, stale: 0, error: 0 };
}

const READ_COMMANDS = new Set(['QueryCommand', 'GetItemCommand', 'BatchGetItemCommand', 'ScanCommand']);

function sumCommands(totals: CapacityTotals, include: (command: string) => boolean): PhaseCapacity {
  const phase: PhaseCapacity = { writeUnits: 0, readUnits: 0, calls: 0, byCommand: {} };
  for (const [command, entry] of Object.entries(totals.byCommand)) {
    if (!include(command)) continue;
    phase.writeUnits += entry.writeUnits;
    phase.readUnits += entry.readUnits;
    phase.calls += entry.calls;
    phase.byCommand[command] = { ...entry };
  }
  return phase;
}

/** The bench's own table name, so concurrent runs never share one. */
export function benchTableName(label: string): string {
  return `bench-${label}-${randomUUID().slice(0, 8)}`;
}

export async function startSystem(options: SystemOptions): Promise<RunningSystem> {
  const { endpoint, settings } = options;
  const admin = createDynamoClients({ endpoint });
  await ensureTable(admin.base, settings.tableName);
  const adminCtx = createQueueContext(admin.db, settings);
  const { jobType } = await putJobType(
    adminCtx,
    BENCH_TYPE,
    parseJobTypeDefinition({
      target: { kind: 'handler', name: NOOP_HANDLER },
      delivery_strategy: options.delivery,
      concurrency: options.mix?.concurrency ?? options.typeConcurrency ?? null,
      ...(options.blockedKeys?.length ? { throttle: { limits: Object.fromEntries(options.blockedKeys.map((key) => [key, { limit: 0 }])) } } : {}),
      ...(options.throttle !== undefined ? { throttle: options.throttle } : {}),
      ...(options.mix
        ? {
            attempts: 3,
            retry: { kind: 'fixed', delay_s: 0 },
            throttle: { key_field: 'region', limits: Object.fromEntries(Object.entries(options.mix.shares).map(([key, share]) => [key, { share }])) },
          }
        : {}),
    }),
  );

  // Paused until a workload that uses it has set up its jobs: the pollers would claim them first.
  await putJobType(adminCtx, OTHER_TYPE, parseJobTypeDefinition({ target: { kind: 'handler', name: OTHER_HANDLER }, attempts: 1 }));
  const otherType = await setJobTypePaused(adminCtx, OTHER_TYPE, true);

  // One client per role, as in AWS where each is its own function: capacity is then counted per phase.
  const clients = {
    producer: createDynamoClients({ endpoint }),
    poller: createDynamoClients({ endpoint }),
    worker: createDynamoClients({ endpoint }),
    sweeper: createDynamoClients({ endpoint }),
  } satisfies Record<string, DynamoClients>;
  const tracked = {
    producer: trackConsumedCapacity(clients.producer.base),
    poller: trackConsumedCapacity(clients.poller.base),
    worker: trackConsumedCapacity(clients.worker.base),
    sweeper: trackConsumedCapacity(clients.sweeper.base),
  };
  // Pollers and the sweeper sleep and wake as deployed: every role's writes may wake them, each with its own waker.
  const pollerRole = scheduledRole();
  const sweeperRole = scheduledRole();
  const waker: WakeInvoker = { wake: (request) => (request.role === 'poller' ? pollerRole : sweeperRole).waker.wake(request) };
  const ctxOf = (role: keyof typeof clients): QueueContext => createQueueContext(clients[role].db, settings, { waker: { wake: (request) => waker.wake(request) } });

  const startLog = new StartLog();
  const attemptSpans: AttemptSpan[] = [];
  const noop: JobHandler = async (data, { job }) => {
    const startedAtMs = Date.now();
    // A mix job's retries are its design, not duplicates: only first attempts are the workload's starts.
    if (!options.mix || job.attempt === 1) startLog.record(job.id, { dueAtMs: job.runAfterMs, claimedAtMs: job.claimedAtMs ?? Number.NaN, startedAtMs });
    if (!options.mix) return undefined;
    const { region, workMs, failFirst } = data as MixPayload;
    await sleep(workMs);
    attemptSpans.push({ key: region, weight: job.weight, readyAtMs: job.runAfterMs, startedAtMs, endedAtMs: Date.now() });
    if (failFirst && job.attempt === 1) throw new Error('a mix job failing its first attempt, as told');
    return undefined;
  };
  const registry: WorkerRegistry = { handlers: { [NOOP_HANDLER]: noop, [OTHER_HANDLER]: () => undefined }, retryPolicies: {} };
  const worker = { id: `bench-${process.pid}`, host: 'localhost' };
  const counts: RunningSystem['counts'] = {
    outcomes: emptyOutcomes(),
    invocations: 0,
    claimed: 0,
    polls: 0,
    lostRaces: 0,
    pollErrors: 0,
    succeededAtMs: [],
    maxQueuedBatches: 0,
  };

  // One worker process running `workerConcurrency` jobs at once, each batch holding the jobs it runs at once.
  const workerCtx = ctxOf('worker');
  const jobGate = createJobGate(options.workerConcurrency);
  const inFlight = new Set<Promise<void>>();
  const invoker: WorkerInvoker = {
    async invoke(batch) {
      // Accepted at once, like Lambda's async invoke; the JSON round trip is the one Lambda makes.
      const payload = JSON.parse(JSON.stringify(batch)) as WorkerBatch;
      counts.invocations++;
      const run = jobGate.run(Math.min(payload.jobs.length, settings.workerConcurrency), async () => {
        // Only the bench type's jobs are the workload's: another type's (W2-bulk's replays) run beside it uncounted.
        await runWorkerBatch(workerCtx, payload, {
          registry,
          worker,
          onOutcome: (job, outcome) => {
            if (job.type !== BENCH_TYPE) return;
            counts.outcomes[outcome]++;
            if (outcome === 'succeeded') counts.succeededAtMs.push(Date.now());
          },
          onError: (job) => {
            if (job.type === BENCH_TYPE) counts.outcomes.error++;
          },
        });
      });
      counts.maxQueuedBatches = Math.max(counts.maxQueuedBatches, jobGate.waiting);
      inFlight.add(run);
      void run.finally(() => inFlight.delete(run));
    },
  };

  const shutdown = new AbortController();
  const loops: Promise<unknown>[] = [];
  const pollerCtx = ctxOf('poller');
  const sweeperCtx = ctxOf('sweeper');
  let started = false;
  const start = (): void => {
    if (started) return;
    started = true;
    const pollLoop = (shards: number[] | undefined, runForMs: number, awake?: Extract<PollerAwake, { stays: true }>) =>
      runPollerLoop(pollerCtx, {
        invoker,
        runForMs,
        signal: shutdown.signal,
        ...(shards ? { shards } : {}),
        ...(awake ? leaseLoopOptions(awake) : {}),
        onPoll: (result) => {
          counts.polls++;
          counts.claimed += result.claimed;
          counts.lostRaces += result.lostRaces;
        },
        onError: () => counts.pollErrors++,
      });
    if (options.pollers === 1) {
      // One poller, as the stack runs it: started by ticks and wakes, a minute's run at most, asleep when idle.
      const allShards = Array.from({ length: settings.shards }, (_, shard) => shard);
      const invocation = async (kind: 'tick' | 'wake') => {
        const endsAtMs = Date.now() + settings.pollerRunMs;
        const awake = await startPollerAwake(pollerCtx, { shards: allShards, endsAtMs, kind });
        if (awake.stays) await pollLoop(undefined, settings.pollerRunMs, awake);
      };
      loops.push(pollerRole.run(invocation, shutdown.signal));
    } else {
      // Several pollers racing over the shards (or splitting them) run on for the whole run, as a stress of claims.
      for (let index = 0; index < options.pollers; index++) {
        const shards = options.splitShards ? Array.from({ length: settings.shards }, (_, shard) => shard).filter((shard) => shard % options.pollers === index) : undefined;
        loops.push(pollLoop(shards, 24 * 3_600_000));
      }
    }
    const sweeper = createSweeperHandler({ ctx: sweeperCtx, registry, signal: shutdown.signal });
    loops.push(sweeperRole.run((kind) => sweeper(kind === 'wake' ? { wake: true } : {}, { getRemainingTimeInMillis: () => settings.pollerRunMs + 5_000 }), shutdown.signal));
  };
  if (options.startNow) start();

  return {
    tableName: settings.tableName,
    jobType,
    otherType,
    producerCtx: ctxOf('producer'),
    startLog,
    attemptSpans,
    counts,
    capacity: () => ({
      enqueue: sumCommands(tracked.producer, () => true),
      poll: sumCommands(tracked.poller, (command) => READ_COMMANDS.has(command)),
      claim: sumCommands(tracked.poller, (command) => !READ_COMMANDS.has(command)),
      finish: sumCommands(tracked.worker, () => true),
      sweep: sumCommands(tracked.sweeper, () => true),
    }),
    start,
    stop: async () => {
      shutdown.abort();
      await Promise.allSettled(loops);
      await Promise.allSettled([...inFlight]);
      for (const client of Object.values(clients)) client.base.destroy();
      await admin.base.send(new DeleteTableCommand({ TableName: settings.tableName }));
      admin.base.destroy();
    },
  };
}
