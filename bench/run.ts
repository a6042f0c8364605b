/**
 * `npm run bench`: the workloads of docs/performance.md#workloads on a DynamoDB Local
 * of its own, through the real poller, worker and sweeper code. Prints a table,
 * writes the raw figures to bench/results/, and exits non-zero on any duplicate
 * or lost job.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { cpus, loadavg, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startDynamoDbLocal } from '../infra/local/aws/dynamodb-local.js';
import { readQueueSettings } from '../lib/queue/settings.js';
import { parseBenchArgs, USAGE, type BenchArgs } from './args.js';
import { HTTP_WORKLOADS, httpTables, runHttpBench, summariseHttp, type HttpBenchResults } from './http-run.js';
import { dollarsPerMillionJobs, readDollarsPerMonth } from './cost.js';
import { costTables, runCostScenarios, type CostScenarioResult } from './cost-scenarios.js';
import { IDLE_TYPE_COUNTS, idleTypesTable, runIdleTypes, type IdleTypesResult } from './idle-types.js';
import { runWakeLatency, wakeLatencyTable, type WakeLatencyResult } from './wake-latency.js';
import { runWakeOutcomes, WAKE_OUTCOMES_DEFAULTS, wakeOutcomesTable, type WakeOutcomesResult } from './wake-outcomes.js';
import { runWriteDesigns, writeDesignsTables } from './write-designs.js';
import { fmt, lagAndOutcomeCells, median, type WorkloadSummary } from './stats.js';
import { benchTableName, PHASES } from './system.js';
import { runMix, type MixResult } from './mix.js';
import {
  runCeiling,
  runIdle,
  runWorkload,
  featureWorkloads,
  w1Delayed,
  w1Immediate,
  w2BesideBulk,
  w2Blocked,
  w2BesidePlain,
  w2Scaled,
  type BenchConfig,
  type CeilingResult,
  type IdleResult,
  type WorkloadResult,
  type WorkloadSpec,
} from './workloads.js';

/**
 * Queue settings the bench runs with unless the environment says otherwise: the production defaults (since
 * polls claim ahead and pace themselves by arrivals, the poll interval no longer decides how late a job
 * starts), with batches of 16 run 16 at a time, so two invocations in flight fill the worker process's 32 slots.
 */
const BENCH_SETTINGS: Record<string, string> = { WORKER_BATCH_SIZE: '16', WORKER_CONCURRENCY: '16' };

/** The production default, for the idle cost beside the bench's own interval. */
const DEFAULT_POLL_INTERVAL_MS = 500;
/** W1-limited's concurrency when --type-concurrency is not given, as in bench/RESULTS.md. */
const LIMITED_TYPE_CONCURRENCY = 64;
/** W2-blocked's backlog of a key at limit 0 in one shard, as in bench/RESULTS.md. */
const BLOCKED_BACKLOG = 5_000;
/** W-mix's jobs at most: enough for the limits to cycle many times over. */
const MIX_MAX_N = 3_000;
/** W2-bulk's failed jobs of another type: more than the sweeper retries at its pace while W2 runs. */
const BULK_RETRIED = 2_000;

const w2For = (n: number, ratePerS: number): WorkloadSpec => w2Scaled(Math.round(n * 0.6), ratePerS);

/** The feature workloads' jobs at most: capacity per job settles within a few thousand. */
const FEATURE_MAX_N = 5_000;
const FEATURE_WORKLOADS = featureWorkloads(1).map((spec) => spec.name);

interface Summary extends WorkloadSummary {
  runs: number;
  dueToClaimP50: number | undefined;
  dueToClaimP99: number | undefined;
  claimToStartP50: number | undefined;
  claimToStartP99: number | undefined;
  writeUnitsPerJob: number | undefined;
  readUnitsPerJob: number | undefined;
  invocationsPerJob: number | undefined;
  lostRaces: number | undefined;
  claimLapsed: number;
  nodeCpuMsPerJob: number | undefined;
  dynamoCpuMsPerJob: number | undefined;
  stealPercent: number | undefined;
  eventLoopStallMaxMs: number | undefined;
  byPhase: Record<string, { writeUnits: number | undefined; readUnits: number | undefined; calls: number | undefined }>;
}

function summarise(results: WorkloadResult[]): Summary {
  const first = results[0] as WorkloadResult;
  const med = (pick: (result: WorkloadResult) => number | undefined) => median(results.map(pick));
  return {
    workload: first.workload,
    n: first.n,
    runs: results.length,
    enqueueJobsPerS: med((r) => r.enqueueJobsPerS),
    drainJobsPerS: med((r) => r.drainJobsPerS),
    lagP50: med((r) => r.lagMs.p50),
    lagP95: med((r) => r.lagMs.p95),
    lagP99: med((r) => r.lagMs.p99),
    lagMax: med((r) => r.lagMs.max),
    dueToClaimP50: med((r) => r.dueToClaimMs.p50),
    dueToClaimP99: med((r) => r.dueToClaimMs.p99),
    claimToStartP50: med((r) => r.claimToStartMs.p50),
    claimToStartP99: med((r) => r.claimToStartMs.p99),
    duplicates: results.reduce((sum, r) => sum + r.duplicates, 0),
    lost: results.reduce((sum, r) => sum + r.lost, 0),
    enqueuedAfterDue: med((r) => r.enqueuedAfterDue),
    writeUnitsPerJob: med((r) => r.perJob.writeUnits),
    readUnitsPerJob: med((r) => r.perJob.readUnits),
    invocationsPerJob: med((r) => r.perJob.workerInvocations),
    lostRaces: med((r) => r.lostRaces),
    claimLapsed: results.reduce((sum, r) => sum + r.claimLapsed, 0),
    nodeCpuMsPerJob: med((r) => r.cpuMsPerJob.nodeMs),
    dynamoCpuMsPerJob: med((r) => r.cpuMsPerJob.dynamoMs),
    stealPercent: med((r) => r.machine.stealPercent),
    eventLoopStallMaxMs: med((r) => r.machine.eventLoopStallMaxMs),
    byPhase: Object.fromEntries(
      PHASES.map((phase) => [
        phase,
        {
          writeUnits: med((r) => r.perJob.byPhase[phase].writeUnits),
          readUnits: med((r) => r.perJob.byPhase[phase].readUnits),
          calls: med((r) => r.perJob.byPhase[phase].calls),
        },
      ]),
    ),
  };
}


function table(headers: string[], rows: string[][]): string {
  const widths = headers.map((header, column) => Math.max(header.length, ...rows.map((row) => (row[column] ?? '').length)));
  const line = (cells: string[]) => cells.map((cell, column) => cell.padStart(widths[column] as number)).join('  ');
  return [line(headers), line(widths.map((width) => '-'.repeat(width))), ...rows.map(line)].join('\n');
}

async function main(): Promise<number> {
  const parsed = parseBenchArgs(process.argv.slice(2));
  if (parsed === 'help') {
    console.log(USAGE);
    return 0;
  }
  const args: BenchArgs = parsed;
  const env = { ...BENCH_SETTINGS, ...process.env, TABLE_NAME: 'bench', ...(args.shards ? { SHARDS: String(args.shards) } : {}) };
  const { tableName: _unused, ...settings } = readQueueSettings(env);
  const wants = (name: string) => args.only === undefined || args.only.includes(name);
  const inProcess =
    ['W1-delayed', 'W1-immediate', 'W1-limited', 'W2-steady', 'W2-blocked', 'W2-bulk', 'W2-beside', 'W-mix', 'ceiling', 'idle', 'idle-blocked', ...FEATURE_WORKLOADS].some(wants) ||
    args.scale;

  const machine = {
    cpu: cpus()[0]?.model ?? 'unknown',
    cores: cpus().length,
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    loadAverageAtStart: loadavg(),
  };
  console.log(`bench: ${machine.cores} x ${machine.cpu}, load ${machine.loadAverageAtStart.map((l) => l.toFixed(2)).join(' ')}; starting DynamoDB Local (in memory)`);
  const dynamo = await startDynamoDbLocal();
  // Ctrl-C must not leave DynamoDB Local running behind us.
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => void dynamo.stop().finally(() => process.exit(130)));
  }
  const config: BenchConfig = {
    endpoint: dynamo.endpoint,
    settings,
    pollers: args.pollers,
    splitShards: args.splitShards,
    workerConcurrency: args.concurrency,
    producerConcurrency: args.producerConcurrency,
    delivery: args.delivery,
    typeConcurrency: args.typeConcurrency,
    deadlineMs: args.deadlineSeconds * 1_000,
    dynamoPid: dynamo.process.pid,
  };
  console.log(
    `settings: POLL_INTERVAL_MS=${settings.pollIntervalMs} SHARDS=${settings.shards} CLAIM_CONCURRENCY=${settings.claimConcurrency} CLAIM_PAGE_SIZE=${settings.claimPageSize} WORKER_BATCH_SIZE=${settings.workerBatchSize} WORKER_CONCURRENCY=${settings.workerConcurrency}; ` +
      `worker process concurrency ${args.concurrency}, ${args.pollers} poller(s)${args.pollers > 1 ? (args.splitShards ? ' on split shards' : ' racing over all shards') : ''}, ${args.delivery}, job type concurrency ${args.typeConcurrency ?? 'unlimited'}; ` +
      `producer: lib enqueueJob via the api's path minus HTTP (job type kept as the api keeps it, body validated, conditional put), ${args.producerConcurrency} in flight`,
  );

  // W1-limited is W1-immediate under a concurrency limit, beside the unlimited one, so the two compare in one run.
  const limitedConfig: BenchConfig = { ...config, typeConcurrency: args.typeConcurrency ?? LIMITED_TYPE_CONCURRENCY };
  const raw: Record<string, WorkloadResult[]> = {};
  const ceilings: CeilingResult[] = [];
  const idles: IdleResult[] = [];
  const mixes: MixResult[] = [];
  const scale: Record<string, WorkloadResult[]> = {};
  let writeDesigns: Awaited<ReturnType<typeof runWriteDesigns>> | undefined;
  try {
    // DynamoDB Local is a JVM: its first thousands of calls run slower while the JIT compiles them.
    if (inProcess) await runCeiling(config, Math.min(args.n, 3_000), benchTableName('warmup'), 'warm-up');
    const specs = [
      { spec: w1Delayed(args.n), config },
      { spec: w1Immediate(args.n), config },
      { spec: w1Immediate(args.n, 'W1-limited'), config: limitedConfig },
      { spec: w2For(args.n, args.w2RatePerS), config },
      { spec: w2Blocked(w2For(args.n, args.w2RatePerS), BLOCKED_BACKLOG), config },
      { spec: w2BesideBulk(w2For(args.n, args.w2RatePerS), BULK_RETRIED), config },
      { spec: w2BesidePlain(w2For(args.n, args.w2RatePerS), BULK_RETRIED), config },
      ...featureWorkloads(Math.min(args.n, FEATURE_MAX_N)).map((spec) => ({ spec, config })),
    ].filter(({ spec }) => wants(spec.name));
    for (let run = 1; run <= args.runs; run++) {
      // The ceiling and the workloads alternate inside each run, so load on the machine affects them alike.
      if (wants('ceiling')) ceilings.push(await runCeiling(config, args.n, benchTableName('ceiling'), `ceiling run ${run}/${args.runs}`));
      for (const { spec, config: specConfig } of specs) {
        const result = await runWorkload(specConfig, spec, benchTableName(spec.name), `${spec.name} run ${run}/${args.runs}`);
        (raw[spec.name] ??= []).push(result);
        console.log(
          `${spec.name} run ${run}: drain ${fmt(result.drainJobsPerS)} jobs/s, lag p99 ${fmt(result.lagMs.p99)} ms max ${fmt(result.lagMs.max)} ms, ${fmt(result.perJob.writeUnits, 2)} WRU/job, duplicates ${result.duplicates}, lost ${result.lost}; steal ${fmt(result.machine.stealPercent)} %, event loop held up to ${fmt(result.machine.eventLoopStallMaxMs)} ms`,
        );
      }
    }
    if (wants('idle')) {
      for (const intervalMs of new Set([settings.pollIntervalMs, DEFAULT_POLL_INTERVAL_MS])) {
        idles.push(await runIdle(config, intervalMs, args.idleSeconds * 1_000, benchTableName('idle'), `idle at POLL_INTERVAL_MS=${intervalMs}`));
      }
    }
    if (wants('idle-blocked')) {
      for (let run = 1; run <= args.runs; run++) {
        const label = `idle beside ${BLOCKED_BACKLOG} blocked jobs, run ${run}/${args.runs}`;
        idles.push(await runIdle(config, settings.pollIntervalMs, args.idleSeconds * 1_000, benchTableName('idle-blocked'), label, BLOCKED_BACKLOG));
      }
    }
    if (wants('W-mix')) {
      for (let run = 1; run <= args.runs; run++) {
        const result = await runMix(config, Math.min(args.n, MIX_MAX_N), benchTableName('mix'), `W-mix run ${run}/${args.runs}`);
        mixes.push(result);
        console.log(
          `W-mix run ${run}: ${fmt(result.drainJobsPerS)} jobs/s, in flight at most ${result.maxWeight} (${Object.entries(result.maxWeightByKey).map(([key, weight]) => `${key} ${weight}`).join(', ')}), ` +
            `free slot -> start p50 ${fmt(result.freeSlotWaitMs.p50)} p99 ${fmt(result.freeSlotWaitMs.p99)} max ${fmt(result.freeSlotWaitMs.max)} ms, ${result.waitsOverPollInterval} over ${result.pollIntervalMs} ms`,
        );
      }
    }
    if (args.scale) {
      for (const n of args.scaleNs) {
        for (let run = 1; run <= args.runs; run++) {
          const result = await runWorkload(config, w1Immediate(n, `W1-immediate N=${n}`), benchTableName(`scale-${n}`), `scale N=${n} run ${run}/${args.runs}`);
          (scale[String(n)] ??= []).push(result);
          console.log(`scale N=${n} run ${run}: drain ${fmt(result.drainJobsPerS)} jobs/s, lag p99 ${fmt(result.lagMs.p99)} ms, duplicates ${result.duplicates}, lost ${result.lost}`);
        }
      }
    }
    // Capacity units, not time: one run says it all, and a busy machine changes nothing.
    if (wants('write-designs')) writeDesigns = await runWriteDesigns(dynamo.endpoint, settings);
  } finally {
    await dynamo.stop();
  }
  const idleTypes: IdleTypesResult[] = [];
  if (wants('idle-types')) {
    for (const jobTypes of IDLE_TYPE_COUNTS) idleTypes.push(await runIdleTypes(jobTypes, args.idleTypesSeconds * 1_000, args.httpStorage, (line) => console.log(line)));
  }
  const wakeLatency: WakeLatencyResult[] = wants('wake-latency') ? await runWakeLatency(args.httpStorage, (line) => console.log(line)) : [];
  let wakeOutcomes: WakeOutcomesResult | undefined;
  if (wants('wake-outcomes')) {
    const idleMs = args.wakeIdleSeconds * 1_000;
    const scale = idleMs / WAKE_OUTCOMES_DEFAULTS.idleMs;
    wakeOutcomes = await runWakeOutcomes(
      args.httpStorage,
      { ...WAKE_OUTCOMES_DEFAULTS, idleMs, spellsMs: WAKE_OUTCOMES_DEFAULTS.spellsMs.map((spellMs) => Math.round(spellMs * scale)), w2RatePerS: args.w2RatePerS, w2Jobs: args.w2RatePerS * 60 },
      (line) => console.log(line),
    );
  }
  // Its runtime runs in this process with console.log muted: the bench's own lines go straight to stdout.
  const costScenarios: CostScenarioResult[] = wants('cost')
    ? await runCostScenarios({ jobsPerDay: args.costJobsPerDay, arrivalSeconds: args.costSeconds, idleMinutes: args.costIdleMinutes, storage: args.httpStorage }, (line) => process.stdout.write(`${line}\n`))
    : [];
  let http: HttpBenchResults | undefined;
  if (HTTP_WORKLOADS.some(wants)) {
    http = await runHttpBench(
      config,
      { n: args.httpN, runs: args.runs, concurrency: args.httpConcurrency, w2RatePerS: args.w2RatePerS, arrivalRatePerS: args.arrivalRatePerS, deadlineMs: config.deadlineMs, storage: args.httpStorage, wants },
      (line) => console.log(line),
    );
  }

  const summaries = Object.values(raw).map(summarise);
  const ceilingJobsPerS = median(ceilings.map((c) => c.jobsPerS));
  const rows = summaries.map((s) => [
    s.workload,
    String(s.n),
    fmt(s.enqueueJobsPerS),
    fmt(s.drainJobsPerS),
    // W2's drain is paced by its due times, not by the queue: no fraction of the ceiling to speak of.
    ceilingJobsPerS && s.drainJobsPerS && !s.workload.startsWith('W2-') ? `${fmt((100 * s.drainJobsPerS) / ceilingJobsPerS)} %` : '-',
    ...lagAndOutcomeCells(s),
    fmt(s.writeUnitsPerJob, 2),
    fmt(s.readUnitsPerJob, 2),
    `${fmt(s.nodeCpuMsPerJob, 2)} / ${fmt(s.dynamoCpuMsPerJob, 2)}`,
  ]);
  if (ceilingJobsPerS !== undefined) {
    const ceilingCpu = `${fmt(median(ceilings.map((c) => c.cpuMsPerJob.nodeMs)), 2)} / ${fmt(median(ceilings.map((c) => c.cpuMsPerJob.dynamoMs)), 2)}`;
    rows.push(['ceiling', String(args.n), '-', fmt(ceilingJobsPerS), '100 %', '-', '-', '-', '-', '-', '-', '-', '-', '-', ceilingCpu]);
  }
  console.log(`\nmedians of ${args.runs} run(s); lag = started_at - due_at in ms; jobs/s of the whole run's enqueue and of draining from the first due time`);
  console.log(table(['workload', 'N', 'enqueue/s', 'drain/s', 'of ceiling', 'p50', 'p95', 'p99', 'max', 'duplicates', 'lost', 'late enq', 'WRU/job', 'RRU/job', 'CPU ms/job node / ddb'], rows));

  const unlimited = summaries.find((s) => s.workload === 'W1-immediate');
  const limited = summaries.find((s) => s.workload === 'W1-limited');
  if (unlimited?.drainJobsPerS && limited?.drainJobsPerS) {
    console.log(`W1-limited (concurrency ${limitedConfig.typeConcurrency}) drained ${fmt((100 * limited.drainJobsPerS) / unlimited.drainJobsPerS)} % of W1-immediate's rate`);
  }
  console.log('\nlag split (medians, ms): due -> claimed is finding the job (poll interval, query), claimed -> started the handover (claims in the same poll, dispatch, worker queue)');
  console.log('and the machine while it ran (medians): the share lost to steal, and the longest the bench process was held up');
  console.log(
    table(
      ['workload', 'due->claimed p50', 'p99', 'claimed->started p50', 'p99', 'steal %', 'loop stall ms'],
      summaries.map((s) => [s.workload, fmt(s.dueToClaimP50), fmt(s.dueToClaimP99), fmt(s.claimToStartP50), fmt(s.claimToStartP99), fmt(s.stealPercent), fmt(s.eventLoopStallMaxMs)]),
    ),
  );

  const featureBase = summaries.find((s) => s.workload === 'F-none');
  const features = summaries.filter((s) => FEATURE_WORKLOADS.includes(s.workload));
  if (features.length > 0) {
    console.log('\nwhat each feature costs (W1-immediate with every job using it; medians): capacity per job, and beside F-none of the same run');
    console.log(
      table(
        ['workload', 'N', 'WRU/job', 'RRU/job', 'WRU/job more', 'RRU/job more', 'duplicates', 'lost'],
        features.map((s) => [
          s.workload,
          String(s.n),
          fmt(s.writeUnitsPerJob, 2),
          fmt(s.readUnitsPerJob, 2),
          featureBase?.writeUnitsPerJob !== undefined && s.writeUnitsPerJob !== undefined ? fmt(s.writeUnitsPerJob - featureBase.writeUnitsPerJob, 2) : '-',
          featureBase?.readUnitsPerJob !== undefined && s.readUnitsPerJob !== undefined ? fmt(s.readUnitsPerJob - featureBase.readUnitsPerJob, 2) : '-',
          String(s.duplicates),
          String(s.lost),
        ]),
      ),
    );
  }

  const costBasis = summaries.find((s) => s.workload === 'W1-immediate') ?? summaries[0];
  let cost: ReturnType<typeof dollarsPerMillionJobs> | undefined;
  if (costBasis?.writeUnitsPerJob !== undefined && costBasis.readUnitsPerJob !== undefined && costBasis.invocationsPerJob !== undefined) {
    console.log(`\ncapacity per job by phase (${costBasis.workload}, medians): ReturnConsumedCapacity TOTAL on every call`);
    console.log(
      table(
        ['phase', 'WRU/job', 'RRU/job', 'calls/job'],
        PHASES.map((phase) => {
          const p = costBasis.byPhase[phase];
          return [phase, fmt(p?.writeUnits, 3), fmt(p?.readUnits, 3), fmt(p?.calls, 3)];
        }),
      ),
    );
    cost = dollarsPerMillionJobs({ writeUnits: costBasis.writeUnitsPerJob, readUnits: costBasis.readUnitsPerJob, workerInvocations: costBasis.invocationsPerJob });
    console.log(
      `\ncost per million jobs on AWS on-demand: writes $${fmt(cost.writes, 2)} + reads $${fmt(cost.reads, 2)} + worker invokes $${fmt(cost.lambdaRequests, 3)} (${fmt(costBasis.invocationsPerJob, 3)}/job) = $${fmt(cost.total, 2)}, Lambda duration extra`,
    );
  }
  if (mixes.length > 0) {
    const med = (pick: (result: MixResult) => number | undefined) => fmt(median(mixes.map(pick)));
    const keys = Object.keys(mixes[0]!.maxWeightByKey).sort();
    console.log(`\nW-mix (medians of ${mixes.length}): in-flight weight from the handler's spans; free slot -> start per attempt, handler to handler`);
    console.log(
      table(
        ['N', 'attempts', 'jobs/s', 'max in flight (of 100)', ...keys.map((key) => `max ${key}`), 'free->start p50', 'p95', 'p99', 'max', `over ${mixes[0]!.pollIntervalMs} ms`, 'duplicates', 'not succeeded'],
        [
          [
            String(mixes[0]!.n),
            med((r) => r.attempts),
            med((r) => r.drainJobsPerS),
            String(Math.max(...mixes.map((r) => r.maxWeight))),
            ...keys.map((key) => String(Math.max(...mixes.map((r) => r.maxWeightByKey[key] ?? 0)))),
            med((r) => r.freeSlotWaitMs.p50),
            med((r) => r.freeSlotWaitMs.p95),
            med((r) => r.freeSlotWaitMs.p99),
            med((r) => r.freeSlotWaitMs.max),
            med((r) => r.waitsOverPollInterval),
            String(Math.max(...mixes.map((r) => r.duplicates))),
            String(Math.max(...mixes.map((r) => r.notSucceeded))),
          ],
        ],
      ),
    );
  }
  if (idles.length > 0) {
    console.log(`\nidle queue (one job type, ${settings.shards} shards), per hour; DynamoDB Local bills an empty query 0, AWS at least 0.5 RRU`);
    console.log(
      table(
        ['POLL_INTERVAL_MS', 'blocked jobs', 'polls', 'poller calls', 'steady-state queries', 'poller RRU', 'sweeper calls', 'sweeper RRU', 'AWS RRU at least', '$/month at least'],
        idles.map((idle) => [
          String(idle.pollIntervalMs),
          String(idle.blockedBacklog),
          fmt(idle.pollsPerHour),
          fmt(idle.pollerCallsPerHour),
          fmt(idle.steadyStateQueriesPerHour),
          fmt(idle.pollerReadUnitsPerHour),
          fmt(idle.sweeperCallsPerHour),
          fmt(idle.sweeperReadUnitsPerHour),
          fmt(idle.awsReadUnitsPerHourAtLeast),
          fmt(readDollarsPerMonth(idle.awsReadUnitsPerHourAtLeast), 2),
        ]),
      ),
    );
  }
  if (idleTypes.length > 0) console.log(`\n${idleTypesTable(idleTypes, table)}`);
  if (wakeLatency.length > 0) console.log(`\n${wakeLatencyTable(wakeLatency, table)}`);
  if (wakeOutcomes) console.log(`\n${wakeOutcomesTable(wakeOutcomes, table)}`);
  if (costScenarios.length > 0) console.log(`\n${costTables(costScenarios, table)}`);
  if (writeDesigns) console.log(`\n${writeDesignsTables(writeDesigns, table)}`);
  const scaleSummaries = Object.values(scale).map(summarise);
  if (scaleSummaries.length > 0) {
    console.log('\nscale curve (W1-immediate, medians)');
    console.log(table(['N', 'drain/s', 'p50', 'p99', 'max', 'WRU/job', 'RRU/job', 'duplicates', 'lost'], scaleSummaries.map((s) => [String(s.n), fmt(s.drainJobsPerS), fmt(s.lagP50), fmt(s.lagP99), fmt(s.lagMax), fmt(s.writeUnitsPerJob, 2), fmt(s.readUnitsPerJob, 2), String(s.duplicates), String(s.lost)])));
  }
  const httpSummaries = Object.values(http?.workloads ?? {}).map((results) => summariseHttp(results));
  const httpCeilings = { putJobsPerS: median(http?.putCeilingJobsPerS ?? []), diskJobsPerS: median(http?.diskCeilingJobsPerS ?? []) };
  if (http) console.log(`\n${httpTables(httpSummaries, httpCeilings, http.callsPerJob, table, http.overload, http.bursts)}`);
  machine.loadAverageAtStart = machine.loadAverageAtStart.map((l) => Number(l.toFixed(2)));
  console.log(`\nload average at start ${machine.loadAverageAtStart.join(' ')}, at end ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
  const failures = [
    ...[...summaries, ...scaleSummaries, ...httpSummaries].filter((s) => s.duplicates > 0 || s.lost > 0).map((s) => s.workload),
    ...(http?.bursts ?? []).flatMap((burst, index) => (burst.lost > 0 || burst.duplicates > 0 || Object.keys(burst.firstAnswers).some((status) => Number(status) >= 500 && Number(status) !== 503) ? [`HTTP-burst run ${index + 1} (500s, lost or duplicates)`] : [])),
    ...(http?.overload ?? []).flatMap((run, index) => (run.levels.some((level) => level.serverErrors > 0 || level.lost > 0 || level.duplicates > 0) ? [`HTTP-overload run ${index + 1} (5xx, lost or duplicates)`] : [])),
  ];
  const outDir = join(dirname(fileURLToPath(import.meta.url)), 'results');
  await mkdir(outDir, { recursive: true });
  const outFile = join(outDir, `bench-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  await writeFile(
    outFile,
    `${JSON.stringify({ args, settings, machine: { ...machine, loadAverageAtEnd: loadavg() }, summaries, ceilingJobsPerS, ceilings, cost, costScenarios, idles, idleTypes, wakeLatency, wakeOutcomes, writeDesigns, mixes, scale: scaleSummaries, raw, rawScale: scale, http: http && { summaries: httpSummaries, ceilings: httpCeilings, callsPerJob: http.callsPerJob, raw: http } }, null, 2)}\n`,
  );
  console.log(`\nwrote ${outFile}`);
  if (failures.length > 0) {
    console.error(`FAILURE: duplicates or lost jobs in ${failures.join(', ')}`);
    return 1;
  }
  return 0;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error);
    process.exit(2);
  },
);
