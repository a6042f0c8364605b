/**
 * The workloads of docs/performance.md#workloads against the real queue (W1-delayed, W1-immediate,
 * W2-steady), the bare-call ceiling, and the idle poller's cost.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import pLimit from 'p-limit';
import { createJobTypeCache } from '../lib/queue/catalog/job-type-cache.js';
import { claimJob } from '../lib/queue/attempt/claim.js';
import { endAttempt } from '../lib/queue/attempt/end-attempt.js';
import { createQueueContext, type QueueContext } from '../lib/queue/context.js';
import { type QueueSettings } from '../lib/queue/settings.js';
import { createDynamoClients } from '../lib/store/client.js';
import { enqueueJob } from '../lib/queue/enqueue/enqueue.js';
import { replaySpacingMs } from '../lib/queue/bulk/run-bulk-operations.js';
import { startBulkOperation } from '../lib/queue/bulk/start-bulk-operation.js';
import { setJobTypePaused } from '../lib/queue/catalog/job-types.js';
import { bucketOf, lanePartition, shardOf } from '../lib/store/keys.js';
import { queryDue } from '../lib/store/due-index.js';
import { jobInputFromBody, jobInputSchema } from '../lib/wire/jobs.js';
import { parseWith } from '../lib/wire/parse.js';
import { perHour } from './cost.js';
import { cpuSince, sampleCpu, sampleSteal, stealPercentSince, type CpuSample } from './cpu.js';
import { summariseLag, type LagSummary } from './stats.js';
import { BENCH_TYPE, PHASES, startSystem, type Phase, type PhaseCapacity, type RunningSystem } from './system.js';

export interface BenchConfig {
  endpoint: string;
  /** Settings for the queue, without the table name (each run gets a fresh table). */
  settings: Omit<QueueSettings, 'tableName'>;
  pollers: number;
  splitShards: boolean;
  workerConcurrency: number;
  producerConcurrency: number;
  delivery: 'at_least_once' | 'at_most_once';
  typeConcurrency: number | undefined;
  /** Jobs never run this long after the last is due count as lost. */
  deadlineMs: number;
  /** DynamoDB Local's process, for its CPU time. */
  dynamoPid: number | undefined;
}

export interface WorkloadResult {
  workload: string;
  n: number;
  enqueueJobsPerS: number;
  drainJobsPerS: number;
  lagMs: LagSummary;
  /** The lag split: due to claimed (finding the job: the poll interval and the query) and claimed to started (the handover). */
  dueToClaimMs: LagSummary;
  claimToStartMs: LagSummary;
  duplicates: number;
  lost: number;
  notSucceeded: number;
  enqueuedAfterDue: number;
  perJob: { writeUnits: number; readUnits: number; workerInvocations: number; byPhase: Record<Phase, { writeUnits: number; readUnits: number; calls: number }> };
  capacity: Record<Phase, PhaseCapacity>;
  /** Claims won and polls made by the pollers; more claims than jobs means some ran again. */
  claimed: number;
  polls: number;
  lostRaces: number;
  claimLapsed: number;
  pollErrors: number;
  maxQueuedBatches: number;
  /** CPU time per job, this process (producer, poller, worker, SDK) and DynamoDB Local. */
  cpuMsPerJob: CpuSample;
  machine: MachineDuringRun;
}

/** How quiet the machine was while a run's numbers were taken: a tail is only worth reading from a quiet run. */
export interface MachineDuringRun {
  /** The machine's time lost to steal; undefined off Linux. */
  stealPercent: number | undefined;
  /** The longest this process's event loop was held up (its own work, GC, or the VM descheduled). */
  eventLoopStallMaxMs: number;
}

function perJobCpu(cpu: CpuSample, n: number): CpuSample {
  return { nodeMs: cpu.nodeMs / n, dynamoMs: cpu.dynamoMs === undefined ? undefined : cpu.dynamoMs / n };
}

/** One per process: runs do not overlap. 10 ms resolution is finer than any lag worth reading. */
const eventLoopDelay = monitorEventLoopDelay({ resolution: 10 });

const PAYLOAD_TEXT = 'x'.repeat(170);

/** About 200 bytes of JSON. */
export function payloadOf(index: number): unknown {
  return { index, text: PAYLOAD_TEXT };
}

/** Prints one line, refreshed every second, while a workload runs. */
export function progressLine(render: () => string): () => void {
  const tty = process.stderr.isTTY;
  let ticks = 0;
  const timer = setInterval(() => {
    ticks++;
    if (tty) process.stderr.write(`\r\x1b[K${render()}`);
    else if (ticks % 5 === 0) process.stderr.write(`${render()}\n`);
  }, 1_000);
  return () => {
    clearInterval(timer);
    if (tty) process.stderr.write('\r\x1b[K');
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The producer: the api handler's enqueue path minus HTTP (the job type as the api keeps it, validate the
 * body, conditional put), `concurrency` requests in flight. Returns the count enqueued after their due time.
 */
async function produce(
  system: RunningSystem,
  config: BenchConfig,
  spec: Pick<WorkloadSpec, 'n' | 'feature'>,
  runAfterOf: (index: number) => number | undefined,
  runId: string,
  onEnqueued: () => void,
): Promise<number> {
  const { n, feature } = spec;
  const limit = pLimit(config.producerConcurrency);
  // As the api does: the type is read once per JOB_TYPES_REFRESH_MS, not per job.
  const jobTypes = createJobTypeCache(system.producerCtx);
  let enqueuedAfterDue = 0;
  await Promise.all(
    Array.from({ length: n }, (_, index) =>
      limit(async () => {
        const runAfterMs = runAfterOf(index);
        const body = {
          data: payloadOf(index),
          ...(runAfterMs !== undefined ? { run_after: new Date(runAfterMs).toISOString() } : {}),
          ...feature?.fieldsOf(index),
        };
        const jobType = await jobTypes.require(BENCH_TYPE);
        const input = jobInputFromBody(parseWith(jobInputSchema, body));
        // Further enqueues of one job (a debounce's) come one after another, as a producer's repeats would.
        for (let repeat = 0; repeat < (feature?.enqueuesPerJob ?? 1); repeat++) {
          await enqueueJob(system.producerCtx, jobType, repeat === 0 ? `${runId}-${index}` : `${runId}-${index}-${repeat}`, input);
        }
        if (runAfterMs !== undefined && Date.now() > runAfterMs) enqueuedAfterDue++;
        onEnqueued();
      }),
    ),
  );
  return enqueuedAfterDue;
}

function perJobOf(capacity: Record<Phase, PhaseCapacity>, n: number, invocations: number): WorkloadResult['perJob'] {
  const byPhase = Object.fromEntries(
    PHASES.map((phase) => [phase, { writeUnits: capacity[phase].writeUnits / n, readUnits: capacity[phase].readUnits / n, calls: capacity[phase].calls / n }]),
  ) as WorkloadResult['perJob']['byPhase'];
  return {
    writeUnits: PHASES.reduce((sum, phase) => sum + byPhase[phase].writeUnits, 0),
    readUnits: PHASES.reduce((sum, phase) => sum + byPhase[phase].readUnits, 0),
    workerInvocations: invocations / n,
    byPhase,
  };
}

export interface WorkloadSpec {
  name: string;
  n: number;
  /** When job `index` is due, relative to the start of the enqueue phase; undefined: due at enqueue. */
  dueOffsetMs: (index: number) => number | undefined;
  /** Drain throughput is measured from here (relative to the enqueue start). */
  firstDueOffsetMs: number;
  lastDueOffsetMs: number;
  /** Jobs of a throttle key at limit 0, all due, all in shard 0, enqueued before the workload's own: they never run. */
  blockedBacklog?: number;
  /** Failed jobs of another type, bulk-retried by the sweeper while the workload runs. */
  bulkRetryBeside?: number;
  /** Jobs of another type due at BULK_JOBS_PER_S while the workload runs: a bulk retry's replays without the bulk operation. */
  plainBeside?: number;
  /** A feature every job uses, to tell what it costs from what a plain job costs. */
  feature?: FeatureUse;
}

/** Fields each job is enqueued with, how often each job is enqueued, and the type's throttle. */
export interface FeatureUse {
  fieldsOf: (index: number) => Record<string, unknown>;
  enqueuesPerJob?: number;
  throttle?: unknown;
}

/**
 * W1-immediate with every job using one feature each: none (the baseline of the same size and run), three tags,
 * a dedup key, a debounce key enqueued twice (the second enqueue folds into the job), a throttle key with a rate
 * (ten keys, at a rate no run reaches, so the buckets are written and nothing waits).
 */
export function featureWorkloads(n: number): WorkloadSpec[] {
  const plain = w1Immediate(n);
  const features: Record<string, FeatureUse> = {
    'F-none': { fieldsOf: () => ({}) },
    'F-tags': { fieldsOf: (index) => ({ tags: ['bench', `customer:${index % 100}`, 'campaign-2026-11'] }) },
    'F-dedup': { fieldsOf: (index) => ({ dedup: { key: `order-${index}`, window_s: 3_600 } }) },
    'F-debounce': { fieldsOf: (index) => ({ debounce: { key: `doc-${index}`, delay_s: 1 } }), enqueuesPerJob: 2 },
    'F-key-rate': { fieldsOf: (index) => ({ throttle_key: `customer-${index % 10}` }), throttle: { limits: { '*': { rate_per_s: 100_000 } } } },
  };
  return Object.entries(features).map(([name, feature]) => ({ ...plain, name, feature }));
}

export function w1Delayed(n: number): WorkloadSpec {
  return { name: 'W1-delayed', n, dueOffsetMs: (index) => 5_000 + Math.floor((index * 10_000) / n), firstDueOffsetMs: 5_000, lastDueOffsetMs: 15_000 };
}

export function w1Immediate(n: number, name = 'W1-immediate'): WorkloadSpec {
  return { name, n, dueOffsetMs: () => undefined, firstDueOffsetMs: 0, lastDueOffsetMs: 0 };
}

/**
 * W2 (12 000 jobs at 200/s, the first due 30 s in), at `ratePerS` and scaled down to `maxJobs`
 * so a quick run stays quick.
 */
export function w2Scaled(maxJobs: number, ratePerS: number): WorkloadSpec {
  const jobs = Math.round((Math.min(12_000, maxJobs) * ratePerS) / 200);
  return w2Steady(jobs, ratePerS, Math.max(5_000, Math.round((W2_LEAD_MS * jobs) / 12_000)));
}

/** W2: the first job is due this long after the enqueue phase begins, so the producer is done by then. */
export const W2_LEAD_MS = 30_000;

/** Due at a steady `ratePerS` from `leadMs` after the enqueue phase begins. */
export function w2Steady(n: number, ratePerS: number, leadMs: number): WorkloadSpec {
  return {
    name: 'W2-steady',
    n,
    dueOffsetMs: (index) => leadMs + Math.floor((index * 1_000) / ratePerS),
    firstDueOffsetMs: leadMs,
    lastDueOffsetMs: leadMs + Math.floor(((n - 1) * 1_000) / ratePerS),
  };
}

/** W2-steady beside `backlog` jobs of a key at limit 0 in the shard of a quarter of W2's own: a blocked key must not delay the others. */
export function w2Blocked(w2: WorkloadSpec, backlog: number): WorkloadSpec {
  return { ...w2, name: 'W2-blocked', blockedBacklog: backlog };
}

const BLOCKED_KEY = 'blocked';

/** W2-steady while the sweeper bulk-retries `failed` failed jobs of another type, at BULK_JOBS_PER_S: a bulk operation must not delay the other types' jobs. */
export function w2BesideBulk(w2: WorkloadSpec, failed: number): WorkloadSpec {
  return { ...w2, name: 'W2-bulk', bulkRetryBeside: failed };
}

/**
 * W2-steady while `jobs` ordinary jobs of another type fall due at the bulk pace: the same extra work as
 * W2-bulk's replays, without the bulk operation, to tell what the operation costs from what its jobs cost.
 */
export function w2BesidePlain(w2: WorkloadSpec, jobs: number): WorkloadSpec {
  return { ...w2, name: 'W2-beside', plainBeside: jobs };
}

/** A context on a client of its own, outside the system's tallies; `close` when done with it. */
function ownContext(config: BenchConfig, tableName: string): { ctx: QueueContext; close: () => void } {
  const clients = createDynamoClients({ endpoint: config.endpoint });
  return { ctx: createQueueContext(clients.db, { ...config.settings, tableName }), close: () => clients.base.destroy() };
}

/** Fails `count` jobs of the other type (claimed and ended failed, through a client of their own) and starts their bulk retry. */
async function startBulkRetryBeside(config: BenchConfig, system: RunningSystem, tableName: string, count: number): Promise<void> {
  const { ctx, close } = ownContext(config, tableName);
  const jobType = system.otherType;
  const limit = pLimit(config.producerConcurrency);
  try {
    await Promise.all(
      Array.from({ length: count }, (_, index) =>
        limit(async () => {
          await enqueueJob(ctx, jobType, `failed-${index}`, { data: payloadOf(index), priority: 100, weight: 1 });
          const claim = await claimJob(ctx, { type: jobType.name, id: `failed-${index}` }, jobType);
          if (claim.kind !== 'claimed') throw new Error(`W2-bulk: could not claim failed-${index}`);
          await endAttempt(ctx, claim.job, { ending: { outcome: 'failed', failure: { error: { class: 'Bench', message: 'failed on purpose' }, retryable: false } }, jobType, customPolicies: {} });
        }),
      ),
    );
    await startBulkOperation(ctx, jobType, { action: 'retry', status: 'failed' }, 'bench');
    await setJobTypePaused(ctx, jobType.name, false);
  } finally {
    close();
  }
}

/** Enqueues `count` jobs of the other type due at BULK_JOBS_PER_S from when they are all in, as a bulk retry's replays are. */
async function enqueuePlainBeside(config: BenchConfig, system: RunningSystem, tableName: string, count: number): Promise<void> {
  const { ctx, close } = ownContext(config, tableName);
  const limit = pLimit(config.producerConcurrency);
  const spacingMs = replaySpacingMs(config.settings);
  // Whole milliseconds, as every API input is: an index sort key keeps only those, so a claim from a timer at a
  // fractional due time's floor would be refused as not due yet, and the job left to a later poll.
  const firstDueMs = Date.now() + Math.ceil((count / 300) * 1_000);
  try {
    await Promise.all(
      Array.from({ length: count }, (_, index) =>
        limit(() => enqueueJob(ctx, system.otherType, `beside-${index}`, { data: payloadOf(index), priority: 100, weight: 1, runAfterMs: firstDueMs + index * spacingMs })),
      ),
    );
    await setJobTypePaused(ctx, system.otherType.name, false);
  } finally {
    close();
  }
}

/** Enqueues the blocked backlog, due a minute ago, through a client of its own so its writes are not the workload's. */
async function enqueueBlockedBacklog(config: BenchConfig, system: RunningSystem, tableName: string, count: number): Promise<void> {
  const { ctx, close } = ownContext(config, tableName);
  const limit = pLimit(config.producerConcurrency);
  const runAfterMs = Date.now() - 60_000;
  const ids: string[] = [];
  for (let index = 0; ids.length < count; index++) if (shardOf(`blocked-${index}`, config.settings.shards) === 0) ids.push(`blocked-${index}`);
  try {
    await Promise.all(
      ids.map((id, index) => limit(() => enqueueJob(ctx, system.jobType, id, { data: payloadOf(index), priority: 100, weight: 1, runAfterMs, throttleKey: BLOCKED_KEY }))),
    );
  } finally {
    close();
  }
}

/** The system a workload runs on: the bench's configuration, with `settings` over its queue settings. */
export function systemOptions(config: BenchConfig, settings: Partial<BenchConfig['settings']> & { tableName: string }) {
  return {
    endpoint: config.endpoint,
    settings: { ...config.settings, ...settings },
    pollers: config.pollers,
    splitShards: config.splitShards,
    workerConcurrency: config.workerConcurrency,
    delivery: config.delivery,
    typeConcurrency: config.typeConcurrency,
    startNow: true,
  };
}

export async function runWorkload(config: BenchConfig, spec: WorkloadSpec, tableName: string, label: string): Promise<WorkloadResult> {
  const system = await startSystem({
    ...systemOptions(config, { tableName }),
    ...(spec.blockedBacklog ? { blockedKeys: [BLOCKED_KEY] } : {}),
    ...(spec.feature?.throttle !== undefined ? { throttle: spec.feature.throttle } : {}),
  });
  if (spec.blockedBacklog) await enqueueBlockedBacklog(config, system, tableName, spec.blockedBacklog);
  if (spec.bulkRetryBeside) await startBulkRetryBeside(config, system, tableName, spec.bulkRetryBeside);
  if (spec.plainBeside) await enqueuePlainBeside(config, system, tableName, spec.plainBeside);
  const { n } = spec;
  let enqueued = 0;
  const stopProgress = progressLine(() => {
    const c = system.counts;
    return `${label}: enqueued ${enqueued}/${n}, started ${system.startLog.distinct}, succeeded ${c.outcomes.succeeded}, lost races ${c.lostRaces}, duplicates ${system.startLog.duplicates()}`;
  });
  try {
    const cpuStart = sampleCpu(config.dynamoPid);
    const stealStart = sampleSteal();
    eventLoopDelay.reset();
    eventLoopDelay.enable();
    const enqueueStartMs = Date.now();
    const runId = label.replace(/[^A-Za-z0-9]+/g, '-').replace(/-$/, '');
    const enqueuedAfterDue = await produce(
      system,
      config,
      spec,
      (index) => {
        const offset = spec.dueOffsetMs(index);
        return offset === undefined ? undefined : enqueueStartMs + offset;
      },
      runId,
      () => enqueued++,
    );
    const enqueueEndMs = Date.now();
    const deadlineMs = Math.max(enqueueEndMs, enqueueStartMs + spec.lastDueOffsetMs) + config.deadlineMs;
    while (system.counts.outcomes.succeeded < n && Date.now() < deadlineMs) await sleep(20);
    // Anything still in flight (a duplicate, a late finish) is counted before the totals are read.
    await sleep(Math.max(200, config.settings.pollIntervalMs * 2));
    const cpu = cpuSince(cpuStart, config.dynamoPid);
    eventLoopDelay.disable();
    const machine = { stealPercent: stealPercentSince(stealStart), eventLoopStallMaxMs: eventLoopDelay.max / 1e6 };
    await system.stop();

    const succeededAt = system.counts.succeededAtMs;
    const drainEndMs = succeededAt[Math.min(n, succeededAt.length) - 1] ?? Date.now();
    const capacity = system.capacity();
    return {
      workload: spec.name,
      n,
      enqueueJobsPerS: (n * 1_000) / (enqueueEndMs - enqueueStartMs),
      drainJobsPerS: (Math.min(n, succeededAt.length) * 1_000) / Math.max(1, drainEndMs - (enqueueStartMs + spec.firstDueOffsetMs)),
      lagMs: summariseLag(system.startLog.spansMs('dueAtMs', 'startedAtMs')),
      dueToClaimMs: summariseLag(system.startLog.spansMs('dueAtMs', 'claimedAtMs')),
      claimToStartMs: summariseLag(system.startLog.spansMs('claimedAtMs', 'startedAtMs')),
      duplicates: system.startLog.duplicates(),
      lost: n - system.startLog.distinct,
      notSucceeded: Math.max(0, n - system.counts.outcomes.succeeded),
      enqueuedAfterDue,
      perJob: perJobOf(capacity, n, system.counts.invocations),
      capacity,
      claimed: system.counts.claimed,
      polls: system.counts.polls,
      lostRaces: system.counts.lostRaces,
      claimLapsed: system.counts.outcomes.claim_lapsed,
      pollErrors: system.counts.pollErrors,
      maxQueuedBatches: system.counts.maxQueuedBatches,
      cpuMsPerJob: perJobCpu(cpu, n),
      machine,
    };
  } finally {
    eventLoopDelay.disable();
    stopProgress();
  }
}

export interface CeilingResult {
  n: number;
  concurrency: number;
  jobsPerS: number;
  cpuMsPerJob: CpuSample;
}

/**
 * The most any design could drain here: the calls one job needs (the put, one
 * polling query per page, the claim, the finish) issued back to back from
 * `concurrency` loops, through the same lib calls, with no poller or worker around them.
 */
export async function runCeiling(config: BenchConfig, n: number, tableName: string, label: string): Promise<CeilingResult> {
  const system = await startSystem({
    endpoint: config.endpoint,
    settings: { ...config.settings, tableName },
    pollers: 0,
    splitShards: false,
    workerConcurrency: config.workerConcurrency,
    delivery: config.delivery,
    typeConcurrency: config.typeConcurrency,
    startNow: false,
  });
  const { ctx, close } = ownContext(config, tableName);
  const jobType = system.jobType;
  const worker = { id: 'ceiling', host: 'localhost' };
  let next = 0;
  let done = 0;
  const stopProgress = progressLine(() => `${label}: ${done}/${n} jobs through put, claim and finish`);
  try {
    const cpuStart = sampleCpu(config.dynamoPid);
    const startMs = Date.now();
    await Promise.all(
      Array.from({ length: config.workerConcurrency }, async () => {
        for (let index = next++; index < n; index = next++) {
          const id = `${label.replace(/[^A-Za-z0-9]+/g, '-')}-${index}`;
          await enqueueJob(ctx, jobType, id, { data: payloadOf(index), priority: 100, weight: 1 });
          if (index % config.settings.claimPageSize === 0) {
            const nowMs = ctx.nowMs();
            const partition = lanePartition({ kind: 'queued', type: jobType.name }, bucketOf(nowMs, config.settings.bucketMs), shardOf(id, config.settings.shards));
            await queryDue(ctx, partition, nowMs, config.settings.claimPageSize);
          }
          const claim = await claimJob(ctx, { type: jobType.name, id }, jobType);
          if (claim.kind !== 'claimed') throw new Error(`ceiling: could not claim ${id}`);
          await endAttempt(ctx, claim.job, { ending: { outcome: 'succeeded' }, jobType, customPolicies: {}, worker });
          done++;
        }
      }),
    );
    const jobsPerS = (n * 1_000) / (Date.now() - startMs);
    return { n, concurrency: config.workerConcurrency, jobsPerS, cpuMsPerJob: perJobCpu(cpuSince(cpuStart, config.dynamoPid), n) };
  } finally {
    stopProgress();
    close();
    await system.stop();
  }
}

export interface IdleResult {
  measuredMs: number;
  pollIntervalMs: number;
  /** Jobs of a key at limit 0 waiting in shard 0 the whole time: what a blocked backlog costs on top of idling. */
  blockedBacklog: number;
  pollers: number;
  pollerReadUnitsPerHour: number;
  pollerWriteUnitsPerHour: number;
  sweeperReadUnitsPerHour: number;
  sweeperWriteUnitsPerHour: number;
  pollerCallsPerHour: number;
  pollsPerHour: number;
  /**
   * Queries an hour once a lane is older than one bucket: the previous bucket stays in every scan until
   * CURSOR_SAFETY_MARGIN_MS after it ended, with the defaults (both 60 s) always, so two per shard per poll.
   */
  steadyStateQueriesPerHour: number;
  sweeperCallsPerHour: number;
  /**
   * DynamoDB Local reports 0 units for a query that returns nothing; DynamoDB bills at least 0.5 RRU for
   * every eventually consistent read call, so an empty queue costs at least this on AWS.
   */
  awsReadUnitsPerHourAtLeast: number;
}

/** Buckets each lane scan reads in steady state: the current one and those still within the cursor's safety margin. */
export function scannedBuckets(settings: Pick<QueueSettings, 'bucketMs' | 'cursorSafetyMarginMs'>): number {
  return 1 + Math.ceil(settings.cursorSafetyMarginMs / settings.bucketMs);
}

/** What an empty queue costs: the pollers and the sweeper running with nothing to do. */
/** Units and calls per phase between two readings of the same system. */
function capacitySince(before: Record<Phase, PhaseCapacity>, after: Record<Phase, PhaseCapacity>): Record<Phase, PhaseCapacity> {
  return Object.fromEntries(
    PHASES.map((phase) => [
      phase,
      { ...after[phase], writeUnits: after[phase].writeUnits - before[phase].writeUnits, readUnits: after[phase].readUnits - before[phase].readUnits, calls: after[phase].calls - before[phase].calls },
    ]),
  ) as Record<Phase, PhaseCapacity>;
}

export async function runIdle(
  config: BenchConfig,
  pollIntervalMs: number,
  measureMs: number,
  tableName: string,
  label: string,
  blockedBacklog = 0,
): Promise<IdleResult> {
  const system = await startSystem({ ...systemOptions(config, { pollIntervalMs, tableName }), ...(blockedBacklog > 0 ? { blockedKeys: [BLOCKED_KEY] } : {}) });
  if (blockedBacklog > 0) await enqueueBlockedBacklog(config, system, tableName, blockedBacklog);
  // What the pollers paid while the backlog went in is not idling.
  const before = system.capacity();
  const pollsBefore = system.counts.polls;
  const startMs = Date.now();
  const stopProgress = progressLine(() => `${label}: idle for ${Math.round((Date.now() - startMs) / 1000)}/${Math.round(measureMs / 1000)} s`);
  try {
    await sleep(measureMs);
    const capacity = capacitySince(before, system.capacity());
    const elapsedMs = Date.now() - startMs;
    return {
      measuredMs: elapsedMs,
      pollIntervalMs,
      blockedBacklog,
      pollers: config.pollers,
      pollerReadUnitsPerHour: perHour(capacity.poll.readUnits + capacity.claim.readUnits, elapsedMs),
      pollerWriteUnitsPerHour: perHour(capacity.poll.writeUnits + capacity.claim.writeUnits, elapsedMs),
      pollerCallsPerHour: perHour(capacity.poll.calls + capacity.claim.calls, elapsedMs),
      pollsPerHour: perHour(system.counts.polls - pollsBefore, elapsedMs),
      steadyStateQueriesPerHour: perHour(system.counts.polls - pollsBefore, elapsedMs) * config.settings.shards * scannedBuckets(config.settings),
      sweeperReadUnitsPerHour: perHour(capacity.sweep.readUnits, elapsedMs),
      sweeperWriteUnitsPerHour: perHour(capacity.sweep.writeUnits, elapsedMs),
      sweeperCallsPerHour: perHour(capacity.sweep.calls, elapsedMs),
      awsReadUnitsPerHourAtLeast: perHour(
        Math.max(capacity.poll.readUnits, capacity.poll.calls * 0.5) + Math.max(capacity.sweep.readUnits, capacity.sweep.calls * 0.5),
        elapsedMs,
      ),
    };
  } finally {
    stopProgress();
    await system.stop();
  }
}
