/**
 * The HTTP half of `npm run bench`: `npm start` at its defaults, driven over
 * HTTP, beside two ceilings measured on the same DynamoDB Local in the same
 * run (bare job PutItems, and the in-process ceiling), then one more pass
 * through a counting proxy for the DynamoDB calls each job costs.
 */
import pLimit from 'p-limit';
import { createQueueContext } from '../lib/queue/context.js';
import { enqueueJob } from '../lib/queue/enqueue/enqueue.js';
import { putJobType } from '../lib/queue/catalog/job-types.js';
import { createDynamoClients } from '../lib/store/client.js';
import { ensureTable } from '../lib/store/table.js';
import { parseJobTypeDefinition } from '../lib/wire/job-types.js';
import type { HttpStorage } from './args.js';
import { cpuBetween, startHttpSystem, storageDescription, type CallCounts, type HttpSystem } from './http-system.js';
import { runBurst, runOverload, type BurstResult, type OverloadLevel, type OverloadResult } from './http-overload.js';

/** The burst case: this many PUTs at once against npm start. */
const BURST_PUTS = 1_000;
import { runNaiveQueue, type NaiveQueueSpec } from './naive-queue.js';
import { runHttpWorkload, type HttpWorkloadResult, type HttpWorkloadSpec } from './http-workloads.js';
import { jitCompilerCpuMs, processCpuMs } from './cpu.js';
import { fmt, lagAndOutcomeCells, median, type WorkloadSummary } from './stats.js';
import { benchTableName } from './system.js';
import { payloadOf, progressLine, runCeiling, W2_LEAD_MS, w1Immediate, w2Scaled, w2Steady, type BenchConfig } from './workloads.js';

export const HTTP_WORKLOADS = [
  'put-ceiling',
  'disk-ceiling',
  'naive-W1',
  'naive-W2',
  'HTTP-W1-immediate',
  'HTTP-W1-batch',
  'HTTP-W1-http',
  'HTTP-W2-steady',
  'HTTP-due-on-arrival',
  'HTTP-overload',
  'HTTP-burst',
  'HTTP-calls',
] as const;

export interface HttpBenchOptions {
  n: number;
  runs: number;
  concurrency: number;
  w2RatePerS: number;
  arrivalRatePerS: number;
  deadlineMs: number;
  storage: HttpStorage;
  wants: (name: string) => boolean;
}

export interface HttpBenchResults {
  putCeilingJobsPerS: number[];
  diskCeilingJobsPerS: number[];
  workloads: Record<string, HttpWorkloadResult[]>;
  /** DynamoDB calls per job by operation, from the counting pass, by workload. */
  callsPerJob: Record<string, Record<string, number>>;
  overload: OverloadResult[];
  bursts: BurstResult[];
}

/** Job PutItems as the api sends them (one conditional put each), `concurrency` in flight, on a table of their own. */
async function runPutCeiling(endpoint: string, config: BenchConfig, n: number, concurrency: number, label: string): Promise<number> {
  const clients = createDynamoClients({ endpoint });
  const settings = { ...config.settings, tableName: benchTableName('put-ceiling') };
  await ensureTable(clients.base, settings.tableName);
  const ctx = createQueueContext(clients.db, settings);
  const { jobType } = await putJobType(ctx, 'put-ceiling', parseJobTypeDefinition({ target: { kind: 'handler', name: 'echo' } }));
  let done = 0;
  const stopProgress = progressLine(() => `${label}: ${done}/${n} job puts`);
  try {
    const limit = pLimit(concurrency);
    const startMs = Date.now();
    await Promise.all(
      Array.from({ length: n }, (_, index) =>
        limit(async () => {
          await enqueueJob(ctx, jobType, `p-${index}`, { data: payloadOf(index), priority: 100, weight: 1 });
          done++;
        }),
      ),
    );
    return (n * 1_000) / (Date.now() - startMs);
  } finally {
    stopProgress();
    clients.base.destroy();
  }
}

function specs(options: HttpBenchOptions): HttpWorkloadSpec[] {
  const { n, concurrency } = options;
  const arrivals = Math.min(n, options.arrivalRatePerS * 30);
  return [
    { ...w1Immediate(n, 'HTTP-W1-immediate'), target: 'echo', concurrency, batch: false },
    { ...w1Immediate(n, 'HTTP-W1-batch'), target: 'echo', concurrency: Math.max(1, Math.round(concurrency / 8)), batch: true },
    { ...w1Immediate(n, 'HTTP-W1-http'), target: 'http', concurrency, batch: false },
    // Scaled from --http-n as the in-process one is from --n (12 000 at 5 000), but always due from W2's 30 s
    // on: single PUTs over HTTP need that long to finish before the first job is due, which is what W2 measures.
    { ...w2Steady(w2Scaled(Math.round(n * 2.4), options.w2RatePerS).n, options.w2RatePerS, W2_LEAD_MS), name: 'HTTP-W2-steady', target: 'http', concurrency, batch: false },
    {
      ...w1Immediate(arrivals, 'HTTP-due-on-arrival'),
      target: 'http',
      concurrency,
      batch: false,
      sendOffsetMs: (index) => Math.floor((index * 1_000) / options.arrivalRatePerS),
      lastDueOffsetMs: Math.floor((arrivals * 1_000) / options.arrivalRatePerS),
    },
  ] satisfies HttpWorkloadSpec[];
}

/** The naive queue (one process on the same DynamoDB Local) under W1-immediate's and HTTP-W2-steady's jobs. */
function naiveSpecs(options: HttpBenchOptions): NaiveQueueSpec[] {
  const w2 = w2Steady(w2Scaled(Math.round(options.n * 2.4), options.w2RatePerS).n, options.w2RatePerS, W2_LEAD_MS);
  return [
    { name: 'naive-W1', n: options.n, concurrency: options.concurrency, firstDueOffsetMs: 0 },
    { name: 'naive-W2', n: w2.n, concurrency: options.concurrency, dueOffsetMs: (index) => w2.dueOffsetMs?.(index) ?? 0, firstDueOffsetMs: w2.firstDueOffsetMs },
  ];
}

/** Calls per job of one echo and one http workload, through the counting proxy. */
async function countCalls(options: HttpBenchOptions): Promise<HttpBenchResults['callsPerJob']> {
  const system = await startHttpSystem({ countCalls: true, storage: options.storage });
  const perJob: HttpBenchResults['callsPerJob'] = {};
  try {
    const n = Math.min(options.n, 2_000);
    for (const spec of specs({ ...options, n }).filter((candidate) => ['HTTP-W1-immediate', 'HTTP-W1-http'].includes(candidate.name))) {
      const before = { ...(system.calls as CallCounts) };
      await runHttpWorkload(system, spec, `${spec.name} counted`, options.deadlineMs);
      const after = system.calls as CallCounts;
      perJob[spec.name] = Object.fromEntries(Object.keys(after).map((operation) => [operation, ((after[operation] ?? 0) - (before[operation] ?? 0)) / n]));
    }
  } finally {
    await system.stop();
  }
  return perJob;
}

/** Warm-up rounds stop once the JIT compilers take less than this share of DynamoDB Local's CPU. */
const WARM_JIT_SHARE = 0.1;
const MAX_WARM_UP_ROUNDS = 12;

/**
 * Runs 1 000-job rounds until DynamoDB Local's JIT compilers go quiet. A fresh JVM spends a minute or more
 * of load compiling (half its CPU at first, measured), which a runtime left running has long done; timing
 * that would measure DynamoDB Local's start, not the queue.
 */
async function warmUp(system: HttpSystem, options: HttpBenchOptions, log: (line: string) => void): Promise<void> {
  const pid = system.dynamo.process.pid ?? 0;
  for (let round = 1; round <= MAX_WARM_UP_ROUNDS; round++) {
    const [jitBefore, jvmBefore] = [jitCompilerCpuMs(pid), processCpuMs(pid) ?? 0];
    await runHttpWorkload(system, { ...specs(options)[0]!, n: Math.min(options.n, 1_000), name: 'warm-up' }, `http warm-up ${round}`, options.deadlineMs);
    const jitShare = (jitCompilerCpuMs(pid) - jitBefore) / Math.max(1, (processCpuMs(pid) ?? 0) - jvmBefore);
    log(`http warm-up ${round}: JIT compilers took ${(100 * jitShare).toFixed(0)} % of DynamoDB Local's CPU`);
    if (jitShare < WARM_JIT_SHARE) return;
  }
}

export async function runHttpBench(config: BenchConfig, options: HttpBenchOptions, log: (line: string) => void): Promise<HttpBenchResults> {
  const results: HttpBenchResults = { putCeilingJobsPerS: [], diskCeilingJobsPerS: [], workloads: {}, callsPerJob: {}, overload: [], bursts: [] };
  log(`http: starting DynamoDB Local (${storageDescription[options.storage]}) and npm start at its defaults`);
  const system: HttpSystem = await startHttpSystem({ countCalls: false, storage: options.storage });
  const diskConfig: BenchConfig = { ...config, endpoint: system.dynamo.endpoint, dynamoPid: system.dynamo.process.pid };
  try {
    await runPutCeiling(diskConfig.endpoint, diskConfig, Math.min(options.n, 2_000), options.concurrency, 'http warm-up: puts');
    await warmUp(system, options, log);
    for (let run = 1; run <= options.runs; run++) {
      if (options.wants('put-ceiling')) {
        results.putCeilingJobsPerS.push(await runPutCeiling(diskConfig.endpoint, diskConfig, options.n, options.concurrency, `put-ceiling run ${run}`));
      }
      if (options.wants('disk-ceiling')) {
        results.diskCeilingJobsPerS.push((await runCeiling(diskConfig, options.n, benchTableName('disk-ceiling'), `disk-ceiling run ${run}`)).jobsPerS);
      }
      for (const spec of naiveSpecs(options).filter((candidate) => options.wants(candidate.name))) {
        const cpuStart = system.sampleCpu();
        const naive = await runNaiveQueue(diskConfig.endpoint, spec, `${spec.name} run ${run}`, options.deadlineMs);
        (results.workloads[spec.name] ??= []).push({ ...naive, enqueuedAfterDue: 0, resentBatchItems: 0, cpuMsPerJob: cpuBetween(cpuStart, system.sampleCpu(), spec.n) });
        log(`${spec.name} run ${run}: enqueue ${naive.enqueueJobsPerS.toFixed(0)}/s, drain ${naive.drainJobsPerS.toFixed(0)}/s, lag p99 ${naive.lagMs.p99 ?? '-'} ms, duplicates ${naive.duplicates}, lost ${naive.lost}`);
      }
      for (const spec of specs(options).filter((candidate) => options.wants(candidate.name))) {
        const result = await runHttpWorkload(system, spec, `${spec.name} run ${run}`, options.deadlineMs);
        (results.workloads[spec.name] ??= []).push(result);
        log(
          `${spec.name} run ${run}: enqueue ${result.enqueueJobsPerS.toFixed(0)}/s, drain ${result.drainJobsPerS?.toFixed(0)}/s, lag p99 ${result.lagMs?.p99 ?? '-'} ms max ${result.lagMs?.max ?? '-'} ms, duplicates ${result.duplicates}, lost ${result.lost}, sent again after 5xx ${result.resentBatchItems}`,
        );
      }
      if (options.wants('HTTP-burst')) {
        const burst = await runBurst(system, BURST_PUTS, `HTTP-burst run ${run}`, options.deadlineMs);
        results.bursts.push(burst);
        log(`HTTP-burst run ${run}: ${burst.n} PUTs at once, first answers ${JSON.stringify(burst.firstAnswers)}; all in after ${burst.allAcceptedMs} ms, all run after ${burst.allRunMs ?? '-'} ms; lost ${burst.lost}, duplicates ${burst.duplicates}`);
      }
      if (options.wants('HTTP-overload')) {
        const overload = await runOverload(system, `HTTP-overload run ${run}`, options.deadlineMs);
        results.overload.push(overload);
        log(`HTTP-overload run ${run}: knee ${overload.kneePerS.toFixed(0)}/s; ${overload.levels.map((level) => `x${level.factor}: accepted ${level.acceptedPerS.toFixed(0)}/s, 429 ${level.throttled}, 5xx ${level.serverErrors}, other ${JSON.stringify(level.otherKinds)}, lag p99 ${level.lagMs.p99 ?? '-'} ms, lost ${level.lost}`).join('; ')}`);
      }
    }
  } finally {
    await system.stop();
  }
  if (options.wants('HTTP-calls')) results.callsPerJob = await countCalls(options);
  return results;
}

const pct = (part: number | undefined, whole: number | undefined): string => (part !== undefined && whole ? `${fmt((100 * part) / whole)} %` : '-');

export interface HttpSummary extends WorkloadSummary {
  cpuMsPerJob: { runtimeMs: number | undefined; dynamoMs: number | undefined; benchMs: number | undefined };
}

export function summariseHttp(results: HttpWorkloadResult[]): HttpSummary {
  const first = results[0]!;
  const med = (pick: (result: HttpWorkloadResult) => number | undefined) => median(results.map(pick));
  return {
    workload: first.workload,
    n: first.n,
    enqueueJobsPerS: med((r) => r.enqueueJobsPerS),
    drainJobsPerS: med((r) => r.drainJobsPerS),
    lagP50: med((r) => r.lagMs?.p50),
    lagP95: med((r) => r.lagMs?.p95),
    lagP99: med((r) => r.lagMs?.p99),
    lagMax: med((r) => r.lagMs?.max),
    duplicates: results.reduce((sum, r) => sum + r.duplicates, 0),
    lost: results.reduce((sum, r) => sum + r.lost, 0),
    enqueuedAfterDue: med((r) => r.enqueuedAfterDue),
    cpuMsPerJob: { runtimeMs: med((r) => r.cpuMsPerJob.runtimeMs), dynamoMs: med((r) => r.cpuMsPerJob.dynamoMs), benchMs: med((r) => r.cpuMsPerJob.benchMs) },
  };
}

export function httpTables(
  summaries: HttpSummary[],
  ceilings: { putJobsPerS: number | undefined; diskJobsPerS: number | undefined },
  callsPerJob: HttpBenchResults['callsPerJob'],
  table: (headers: string[], rows: string[][]) => string,
  overload: OverloadResult[] = [],
  bursts: BurstResult[] = [],
): string {
  const rows = summaries.map((s) => [
    s.workload,
    String(s.n),
    fmt(s.enqueueJobsPerS),
    pct(s.enqueueJobsPerS, ceilings.putJobsPerS),
    fmt(s.drainJobsPerS),
    s.workload === 'HTTP-W2-steady' || s.workload === 'HTTP-due-on-arrival' ? '-' : pct(s.drainJobsPerS, ceilings.diskJobsPerS),
    ...lagAndOutcomeCells(s),
    `${fmt(s.cpuMsPerJob.runtimeMs, 2)} / ${fmt(s.cpuMsPerJob.dynamoMs, 2)} / ${fmt(s.cpuMsPerJob.benchMs, 2)}`,
  ]);
  rows.push(['put-ceiling', '-', fmt(ceilings.putJobsPerS), '100 %', '-', '-', '-', '-', '-', '-', '-', '-', '-', '-']);
  rows.push(['disk-ceiling', '-', '-', '-', fmt(ceilings.diskJobsPerS), '100 %', '-', '-', '-', '-', '-', '-', '-', '-']);
  const lines = [
    'over HTTP through npm start (defaults); enqueue as % of job PutItems, drain as % of the in-process ceiling, both on the same DynamoDB Local',
    table(
      ['workload', 'N', 'enqueue/s', 'of puts', 'drain/s', 'of ceiling', 'p50', 'p95', 'p99', 'max', 'duplicates', 'lost', 'late enq', 'CPU ms/job npm start / ddb / bench'],
      rows,
    ),
  ];
  if (bursts.length > 0) {
    lines.push(`\nHTTP-burst: ${BURST_PUTS} PUTs at once, then the typed client sends the refused ones again after Retry-After; one row per run`);
    lines.push(
      table(
        ['run', 'first answers', 'all in (ms)', 'all run (ms)', 'lost', 'duplicates'],
        bursts.map((burst, index) => [String(index + 1), JSON.stringify(burst.firstAnswers), String(burst.allAcceptedMs), fmt(burst.allRunMs), burst.lost > 0 ? `FAILURE ${burst.lost}` : '0', burst.duplicates > 0 ? `FAILURE ${burst.duplicates}` : '0']),
      ),
    );
  }
  if (overload.length > 0) {
    lines.push('\nHTTP-overload: jobs due on arrival offered open-loop at 1x, 2x and 5x the knee (accepted/s with 64 PUTs in flight), each PUT sent once (medians of runs)');
    lines.push(table(['offered', 'offered/s', 'accepted/s', '429', '5xx', 'other', 'p50', 'p99', 'max', 'lost', 'duplicates', 'CPU ms/accepted job npm start / ddb / bench'], overloadRows(overload)));
  }
  const operations = [...new Set(Object.values(callsPerJob).flatMap((calls) => Object.keys(calls)))].sort();
  if (operations.length > 0) {
    lines.push('\nDynamoDB calls per job over HTTP (a separate pass through a counting proxy), by operation');
    lines.push(table(['workload', ...operations], Object.entries(callsPerJob).map(([workload, calls]) => [workload, ...operations.map((op) => fmt(calls[op] ?? 0, 3))])));
  }
  return lines.join('\n');
}

/** One row per load factor: medians across runs, except failures, which are summed. */
function overloadRows(runs: OverloadResult[]): string[][] {
  const knee = median(runs.map((run) => run.kneePerS));
  return runs[0]!.levels.map((_, at) => {
    const levels = runs.map((run) => run.levels[at]!);
    const pick = (value: (level: OverloadLevel) => number | undefined) => median(levels.map(value));
    const sum = (value: (level: OverloadLevel) => number) => levels.reduce((total, level) => total + value(level), 0);
    const serverErrors = sum((level) => level.serverErrors);
    return [
      `${levels[0]!.factor}x knee (${fmt(knee)}/s)`,
      fmt(pick((level) => level.offeredPerS)),
      fmt(pick((level) => level.acceptedPerS)),
      fmt(pick((level) => level.throttled)),
      serverErrors > 0 ? `FAILURE ${serverErrors}` : '0',
      fmt(pick((level) => level.other)),
      fmt(pick((level) => level.lagMs.p50)),
      fmt(pick((level) => level.lagMs.p99)),
      fmt(pick((level) => level.lagMs.max)),
      sum((level) => level.lost) > 0 ? `FAILURE ${sum((level) => level.lost)}` : '0',
      sum((level) => level.duplicates) > 0 ? `FAILURE ${sum((level) => level.duplicates)}` : '0',
      `${fmt(pick((level) => level.cpuMsPerAcceptedJob.runtimeMs), 2)} / ${fmt(pick((level) => level.cpuMsPerAcceptedJob.dynamoMs), 2)} / ${fmt(pick((level) => level.cpuMsPerAcceptedJob.benchMs), 2)}`,
    ];
  });
}
