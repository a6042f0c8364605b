/**
 * cost: what the queue would cost on AWS, from the local runtime's meter (infra/local/aws/meter.ts), in two
 * scenarios, each on a fresh runtime as `npm start` runs it (its own DynamoDB Local on disk, its data
 * directory, the default settings), read between two snapshots of its meter:
 *
 * - arrival: a steady rate of jobs a day (a million: 11.6 jobs/s) on one of 10 job types, each due on arrival,
 *   for a window; units per job by service and dollars per million jobs.
 * - idle: 10 job types and nothing due, for a window; units per hour and dollars a month.
 *
 * The runtime runs in this process, so its meter is read directly rather than through GET /v1/stats, whose own
 * reads would land in the window; its info lines are counted by the meter and not printed.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort, startDynamoDbLocal } from '../infra/local/aws/dynamodb-local.js';
import { addUsage, dollarsOf, fixedDollarsPerMonth, noUsage, SERVICES, sumOf, USAGE_FIELDS, type Service, type Usage } from '../infra/local/aws/billing.js';
import { METERED_SOURCES, type MeteredSource, type MeterSnapshot } from '../infra/local/aws/meter.js';
import { HOURS_PER_MONTH, priced } from '../infra/local/aws/prices.js';
import { startLocalRuntime, type LocalRuntime } from '../infra/local/runtime.js';
import { createClient, type QueueClient } from '../lib/client/index.js';
import type { HttpStorage } from './args.js';
import { AFTER_TYPES_CHANGED_MS } from './idle-types.js';
import { fmt } from './stats.js';

export const COST_JOB_TYPES = 10;

export interface CostScenarioOptions {
  jobsPerDay: number;
  arrivalSeconds: number;
  idleMinutes: number;
  storage: HttpStorage;
}

export interface CostScenarioResult {
  scenario: 'arrival' | 'idle';
  description: string;
  windowMs: number;
  jobs: number;
  /** Every unit the meter counted in the window, all functions together. */
  usage: Usage;
  /** The same, by function (and the gateway): where the units go. */
  usageBySource: Partial<Record<MeteredSource, Usage>>;
  /** Distinct custom metrics sent in the window: in the steady state it samples, each is billed every hour. */
  customMetrics: number;
  /** The window's traffic, by service, with its metrics at the steady state's rate. */
  trafficDollars: Record<Service, number>;
  fixedDollarsPerMonth: Record<Service, number>;
}

const difference = (start: Usage, end: Usage): Usage => Object.fromEntries(USAGE_FIELDS.map((field) => [field, end[field] - start[field]])) as unknown as Usage;

/** The usage between two snapshots of one meter, all sources together. */
function usageBetween(before: MeterSnapshot, after: MeterSnapshot): Usage {
  const total = (snapshot: MeterSnapshot): Usage => METERED_SOURCES.reduce((sum, source) => addUsage(sum, snapshot.usage[source]), noUsage());
  return difference(total(before), total(after));
}

/** The usage between two snapshots of one meter, by source. */
function usageBySourceBetween(before: MeterSnapshot, after: MeterSnapshot): Partial<Record<MeteredSource, Usage>> {
  return Object.fromEntries(METERED_SOURCES.map((source) => [source, difference(before.usage[source], after.usage[source])]));
}

/**
 * Priced as the steady state the window samples: CloudWatch bills a metric per hour it is sent in, so a window
 * shorter than an hour counts each metric it saw for the window's share of an hour, not a whole metric-hour.
 */
function windowDollars(usage: Usage, customMetrics: number, windowMs: number, snapshot: MeterSnapshot): Record<Service, number> {
  const dollars = dollarsOf({ ...usage, customMetricHours: 0 }, snapshot.stack);
  return { ...dollars, cloudwatch_metrics: priced('cloudWatchCustomMetric', (customMetrics * windowMs) / 3_600_000 / HOURS_PER_MONTH) };
}

/** The runtime's info lines would bury the bench's: counted by the meter, they are not printed. */
async function quietly<T>(run: () => Promise<T>): Promise<T> {
  const print = console.log;
  console.log = () => undefined;
  try {
    return await run();
  } finally {
    console.log = print;
  }
}

/** A fresh `npm start` with its own DynamoDB Local and data directory, `COST_JOB_TYPES` echo types defined, past the first tick after. */
async function withFreshRuntime<T>(storage: HttpStorage, run: (runtime: LocalRuntime, client: QueueClient, types: string[]) => Promise<T>): Promise<T> {
  const dataDir = await mkdtemp(join(tmpdir(), 'bench-cost-'));
  const dynamo = await startDynamoDbLocal(storage === 'memory' ? {} : { dbPath: dataDir, sync: storage === 'disk' ? 'full' : 'off' });
  try {
    const runtime = await startLocalRuntime({ ...process.env, PORT: String(await freePort()), DATA_DIR: dataDir, DYNAMODB_ENDPOINT: dynamo.endpoint, API_TOKEN: '', TABLE_NAME: 'jobs' });
    try {
      const client = createClient({ url: runtime.url, token: runtime.adminKey, retries: 3 });
      const types = Array.from({ length: COST_JOB_TYPES }, (_, index) => `cost-${index}`);
      for (const type of types) await client.defineType(type, { target: { kind: 'handler', name: 'echo' } });
      // The first tick after a type change reads every lane's cursors once; the window starts at the steady state.
      await sleep(AFTER_TYPES_CHANGED_MS);
      return await run(runtime, client, types);
    } finally {
      await runtime.stop();
    }
  } finally {
    await dynamo.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
}

/** Waits until `ids` have all succeeded, by the runtime's lifecycle events (read in memory: they cost the meter nothing). */
async function allSucceeded(runtime: LocalRuntime, ids: ReadonlySet<string>, deadlineMs: number): Promise<void> {
  const succeeded = new Set<string>();
  while (succeeded.size < ids.size) {
    if (Date.now() > deadlineMs) throw new Error(`cost: only ${succeeded.size} of ${ids.size} jobs succeeded in time`);
    for (const event of runtime.lifecycleEvents) if (event.name === 'job.succeeded' && ids.has(event.id)) succeeded.add(event.id);
    await sleep(250);
  }
}

async function runArrival(options: CostScenarioOptions, log: (line: string) => void): Promise<CostScenarioResult> {
  const ratePerS = options.jobsPerDay / 86_400;
  const description = `${fmt(ratePerS, 1)} jobs/s due on arrival on one of ${COST_JOB_TYPES} types for ${options.arrivalSeconds} s`;
  return withFreshRuntime(options.storage, async (runtime, client, [type]) => {
    log(`cost arrival: ${description}`);
    const before = runtime.meter.snapshot();
    const ids = new Set<string>();
    const enqueued: Promise<unknown>[] = [];
    const startMs = Date.now();
    for (let index = 0; index < Math.round(ratePerS * options.arrivalSeconds); index++) {
      await sleep(Math.max(0, startMs + (index * 1_000) / ratePerS - Date.now()));
      const id = `arrival-${index}`;
      ids.add(id);
      enqueued.push(client.enqueue(type as string, { data: { index } }, { id }));
    }
    await Promise.all(enqueued);
    await allSucceeded(runtime, ids, Date.now() + 120_000);
    const after = runtime.meter.snapshot();
    const usage = usageBetween(before, after);
    const windowMs = after.atMs - before.atMs;
    return { scenario: 'arrival', description, windowMs, jobs: ids.size, usage, usageBySource: usageBySourceBetween(before, after), ...priceWindow(runtime, usage, before, windowMs) };
  });
}

/** The window's dollars; its custom metrics are those sent in it, not the ones the runtime's start sent (the types defined, the first tick's). */
function priceWindow(runtime: LocalRuntime, usage: Usage, before: MeterSnapshot, windowMs: number) {
  const customMetrics = runtime.meter.customMetricsSentSince(before.atMs);
  return { customMetrics, trafficDollars: windowDollars(usage, customMetrics, windowMs, before), fixedDollarsPerMonth: fixedDollarsPerMonth(before.stack) };
}

async function runIdle(options: CostScenarioOptions, log: (line: string) => void): Promise<CostScenarioResult> {
  const description = `${COST_JOB_TYPES} job types, nothing due, for ${options.idleMinutes} min`;
  return withFreshRuntime(options.storage, async (runtime) => {
    log(`cost idle: ${description}`);
    const before = runtime.meter.snapshot();
    await sleep(options.idleMinutes * 60_000);
    const after = runtime.meter.snapshot();
    const usage = usageBetween(before, after);
    const windowMs = after.atMs - before.atMs;
    return { scenario: 'idle', description, windowMs, jobs: 0, usage, usageBySource: usageBySourceBetween(before, after), ...priceWindow(runtime, usage, before, windowMs) };
  });
}

export async function runCostScenarios(options: CostScenarioOptions, log: (line: string) => void): Promise<CostScenarioResult[]> {
  return quietly(async () => [await runArrival(options, log), await runIdle(options, log)]);
}

type Table = (headers: string[], rows: string[][]) => string;

/** DynamoDB calls and units, and billed Lambda time, by function: where the scenario's units go. */
function bySourceTable(result: CostScenarioResult, per: number, unitsHeading: string, table: Table): string {
  const rows = METERED_SOURCES.flatMap((source) => {
    const usage = result.usageBySource[source];
    if (!usage || usage.dynamoDbCalls + usage.lambdaBilledMs === 0) return [];
    const readUnits = usage.dynamoDbReadUnits + usage.dynamoDbUnreportedReadUnits;
    return [[source, ...[usage.dynamoDbCalls, usage.dynamoDbWriteUnits + usage.dynamoDbFailedConditionalWriteUnits, readUnits, usage.lambdaBilledMs].map((value) => fmt(value / per, 3))]];
  });
  return table(['function', `DynamoDB calls ${unitsHeading}`, 'WRU', 'RRU', 'billed Lambda ms'], rows);
}

/** Arrival: units per job and dollars per million jobs. Idle: units per hour and dollars a month, the stack's fixed costs in. */
export function costTables(results: readonly CostScenarioResult[], table: Table): string {
  return results
    .map((result) => {
      const hours = result.windowMs / 3_600_000;
      const per = result.scenario === 'arrival' ? result.jobs : hours;
      const unitsHeading = result.scenario === 'arrival' ? 'per job' : 'per hour';
      const scale = result.scenario === 'arrival' ? 1_000_000 / result.jobs : HOURS_PER_MONTH / hours;
      const dollarsHeading = result.scenario === 'arrival' ? '$ per million jobs' : '$ a month';
      // Metrics are priced by how many are sent, not per job or per hour: the heading says how many.
      const unitFields = USAGE_FIELDS.filter((field) => field !== 'customMetrics' && field !== 'customMetricHours');
      const units = table(['unit', unitsHeading], unitFields.map((field) => [field, fmt(result.usage[field] / per, 3)]));
      const dollarRows = SERVICES.map((service) => [service, fmt(result.trafficDollars[service] * scale, 4), fmt(result.fixedDollarsPerMonth[service], 2)]);
      dollarRows.push(['total', fmt(sumOf(result.trafficDollars) * scale, 4), fmt(sumOf(result.fixedDollarsPerMonth), 2)]);
      const dollars = table(['service', dollarsHeading, 'fixed $ a month'], dollarRows);
      const allIn =
        result.scenario === 'arrival'
          ? `the fixed $${fmt(sumOf(result.fixedDollarsPerMonth), 2)} a month come on top, whatever the traffic`
          : `all in: $${fmt(sumOf(result.trafficDollars) * scale + sumOf(result.fixedDollarsPerMonth), 2)} a month`;
      const bySource = bySourceTable(result, per, unitsHeading, table);
      return `cost ${result.scenario}: ${result.description} (${result.jobs} jobs, ${fmt(result.windowMs / 1_000)} s; ${result.customMetrics} custom metrics, priced as sent every hour)\n${units}\n${bySource}\n${dollars}\n${allIn}`;
    })
    .join('\n\n');
}
