/**
 * idle-types: what `npm start` at its defaults costs while nothing is due:
 * job types defined and no jobs, DynamoDB calls counted by operation through a proxy in front of DynamoDB
 * Local, and the poller's and sweeper's billed Lambda time added up from the runtime's report lines
 * (infra/local/invocation-report.ts), over a window of idle time, scaled to an hour.
 *
 * It runs `npm start` itself rather than the bench's in-process system: that is what the target names, and
 * only it runs the poller and sweeper as the runtime's invocations, at their Lambda timeouts, with report lines.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { JOB_TYPES_REFRESH_MS } from '../lib/queue/job-types.js';
import type { HttpStorage } from './args.js';
import { lambdaDollarsPerMonth, perHour } from './cost.js';
import { fmt } from './stats.js';
import { startHttpSystem, type CallCounts, type LoggedReport } from './http-system.js';

/** The job type counts measured: one, and the ten of the target. */
export const IDLE_TYPE_COUNTS = [1, 10] as const;

/** The functions that run whatever the traffic, on the minute's schedule deployed. */
export const SCHEDULED_FUNCTIONS = ['poller', 'sweeper'] as const;
export type ScheduledFunction = (typeof SCHEDULED_FUNCTIONS)[number];

export interface BilledWithin {
  billedMs: number;
  /** Billed milliseconds times the function's memory in GB: what Lambda prices. */
  gbSeconds: number;
}

/**
 * The billed time of `fn`'s invocations that falls within [fromMs, toMs]. An invocation running across an edge
 * counts only its share inside, so invocations a minute long still count right in a window of twenty seconds.
 */
export function billedWithin(reports: readonly LoggedReport[], fn: string, fromMs: number, toMs: number): BilledWithin {
  let billedMs = 0;
  let gbSeconds = 0;
  for (const report of reports) {
    if (report.function !== fn || report.durationMs <= 0) continue;
    const startedAtMs = report.endedAtMs - report.durationMs;
    const insideMs = Math.max(0, Math.min(report.endedAtMs, toMs) - Math.max(startedAtMs, fromMs));
    const billedInsideMs = (insideMs * report.billedDurationMs) / report.durationMs;
    billedMs += billedInsideMs;
    gbSeconds += ((billedInsideMs / 1_000) * (report.memorySizeMb ?? 0)) / 1_024;
  }
  return { billedMs, gbSeconds };
}

export interface IdleTypesResult {
  jobTypes: number;
  windowMs: number;
  /** DynamoDB calls per hour, by operation (Query, GetItem, ...). */
  callsPerHourByOperation: Record<string, number>;
  callsPerHour: number;
  /** Billed Lambda seconds per hour, by function. */
  billedSecondsPerHour: Record<ScheduledFunction, number>;
  /** The poller's and the sweeper's together: the target's figure. */
  scheduledBilledSecondsPerHour: number;
  /** The same at the stack's memory sizes, in dollars a month of Lambda duration. */
  scheduledLambdaDollarsPerMonth: number;
  /** Report lines of the poller and sweeper the window overlapped. */
  reportLines: number;
}

function callsBetween(start: CallCounts, end: CallCounts): Record<string, number> {
  const calls: Record<string, number> = {};
  for (const [operation, count] of Object.entries(end)) {
    const made = count - (Object.hasOwn(start, operation) ? (start[operation] ?? 0) : 0);
    if (made > 0) calls[operation] = made;
  }
  return calls;
}

/** One measurement: `npm start` with `jobTypes` types and no jobs, counted for `windowMs`. */
export async function runIdleTypes(jobTypes: number, windowMs: number, storage: HttpStorage, log: (line: string) => void): Promise<IdleTypesResult> {
  const system = await startHttpSystem({ countCalls: true, storage });
  const calls = system.calls as CallCounts;
  let startCalls: CallCounts;
  let endCalls: CallCounts;
  let fromMs: number;
  let toMs: number;
  try {
    for (let index = 0; index < jobTypes; index++) await system.client.defineType(`idle-${index}`, { target: { kind: 'handler', name: 'echo' } });
    // Until every poller has listed the new types, its polls read fewer lanes than the steady state's.
    await sleep(JOB_TYPES_REFRESH_MS + 1_000);
    log(`idle-types with ${jobTypes} type(s): counting for ${windowMs / 1_000} s`);
    startCalls = { ...calls };
    fromMs = Date.now();
    await sleep(windowMs);
    endCalls = { ...calls };
    toMs = Date.now();
  } finally {
    // Stopping ends the invocations under way, so their report lines are logged and the window's share of them counted.
    await system.stop();
  }
  const made = callsBetween(startCalls, endCalls);
  const billed = Object.fromEntries(SCHEDULED_FUNCTIONS.map((fn) => [fn, billedWithin(system.reports, fn, fromMs, toMs)])) as Record<ScheduledFunction, BilledWithin>;
  const elapsedMs = toMs - fromMs;
  const billedSecondsPerHour = Object.fromEntries(SCHEDULED_FUNCTIONS.map((fn) => [fn, perHour(billed[fn].billedMs / 1_000, elapsedMs)])) as Record<ScheduledFunction, number>;
  const gbSecondsPerHour = perHour(billed.poller.gbSeconds + billed.sweeper.gbSeconds, elapsedMs);
  return {
    jobTypes,
    windowMs: elapsedMs,
    callsPerHourByOperation: Object.fromEntries(Object.entries(made).map(([operation, count]) => [operation, perHour(count, elapsedMs)])),
    callsPerHour: perHour(Object.values(made).reduce((sum, count) => sum + count, 0), elapsedMs),
    billedSecondsPerHour,
    scheduledBilledSecondsPerHour: billedSecondsPerHour.poller + billedSecondsPerHour.sweeper,
    scheduledLambdaDollarsPerMonth: lambdaDollarsPerMonth(gbSecondsPerHour),
    reportLines: system.reports.filter((report) => (SCHEDULED_FUNCTIONS as readonly string[]).includes(report.function) && report.endedAtMs >= fromMs).length,
  };
}

/** The measurements as a table: calls an hour by operation, billed seconds an hour by function. */
export function idleTypesTable(results: readonly IdleTypesResult[], table: (headers: string[], rows: string[][]) => string): string {
  const operations = [...new Set(results.flatMap((idle) => Object.keys(idle.callsPerHourByOperation)))].sort();
  const heading = `idle npm start at its defaults, per hour (counted over ${fmt((results[0]?.windowMs ?? 0) / 1_000)} s each): DynamoDB calls through a proxy, billed s from the report lines`;
  return `${heading}\n${table(
    ['job types', 'calls', ...operations, 'poller billed s', 'sweeper billed s', 'both billed s', 'Lambda $/month'],
    results.map((idle) => [
      String(idle.jobTypes),
      fmt(idle.callsPerHour),
      ...operations.map((operation) => fmt(Object.hasOwn(idle.callsPerHourByOperation, operation) ? idle.callsPerHourByOperation[operation] : 0)),
      fmt(idle.billedSecondsPerHour.poller),
      fmt(idle.billedSecondsPerHour.sweeper),
      fmt(idle.scheduledBilledSecondsPerHour),
      fmt(idle.scheduledLambdaDollarsPerMonth, 2),
    ]),
  )}`;
}
