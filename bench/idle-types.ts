/**
 * idle-types: what `npm start` at its defaults costs while nothing is due:
 * job types defined and no jobs, DynamoDB calls counted by operation through a proxy in front of DynamoDB
 * Local, and the poller's and sweeper's billed Lambda time added up from the runtime's report lines
 * (infra/local/aws/invocation-report.ts), over a window of idle time, scaled to an hour.
 *
 * It runs `npm start` itself rather than the bench's in-process system: that is what the target names, and
 * only it runs the poller and sweeper as the runtime's invocations, at their Lambda timeouts, with report lines.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { HttpStorage } from './args.js';
import { lambdaDollarsPerMonth, perHour } from './cost.js';
import { fmt } from './stats.js';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { createDynamoClients } from '../lib/store/client.js';
import { BACKSTOP_SWEEP_EVERY_MS } from '../lib/queue/wake/sweeper-stays.js';
import { wakeKey } from '../lib/store/keys.js';
import { startHttpSystem, type CallCounts, type HttpSystem, type LoggedReport } from './http-system.js';

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
  /**
   * What one whole sweep (the backstop and the counters, which an idle sweeper makes every BACKSTOP_SWEEP_EVERY_MS)
   * adds to a tick's window, and that amortized over an hour: the main window holds none, being shorter.
   */
  backstop: { calls: number; billedSeconds: number; callsPerHour: number; billedSecondsPerHour: number };
}

/** Past the first minute tick after the types were defined, and the invocation it started. */
export const AFTER_TYPES_CHANGED_MS = 70_000;

/** A window holding one sweeper tick, at least, and the poller's. */
const BACKSTOP_WINDOW_MS = 65_000;

/** Asks for a whole sweep at the next sweeper tick, as if the last were a backstop period old; not through the proxy. */
async function dueBackstop(system: HttpSystem): Promise<void> {
  const { base, db } = createDynamoClients({ endpoint: system.dynamo.endpoint });
  try {
    await db.send(new UpdateCommand({ TableName: 'jobs', Key: wakeKey('sweeper', 0), UpdateExpression: 'SET sweptAtMs = :long', ExpressionAttributeValues: { ':long': 0 } }));
  } finally {
    base.destroy();
  }
}

const sum = (values: number[]): number => values.reduce((total, value) => total + value, 0);

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
  let backstopFromMs: number;
  let backstopToMs: number;
  let backstopCalls: CallCounts;
  try {
    for (let index = 0; index < jobTypes; index++) await system.client.defineType(`idle-${index}`, { target: { kind: 'handler', name: 'echo' } });
    // A type change makes the next tick read every lane's cursors once, where the ticks after read where the walks
    // stood: the window starts past that tick, at the steady state of an idle queue.
    await sleep(AFTER_TYPES_CHANGED_MS);
    log(`idle-types with ${jobTypes} type(s): counting for ${windowMs / 1_000} s`);
    startCalls = { ...calls };
    fromMs = Date.now();
    await sleep(windowMs);
    endCalls = { ...calls };
    toMs = Date.now();
    await dueBackstop(system);
    backstopFromMs = Date.now();
    await sleep(BACKSTOP_WINDOW_MS);
    backstopCalls = { ...calls };
    backstopToMs = Date.now();
  } finally {
    // Stopping ends the invocations under way, so their report lines are logged and the window's share of them counted.
    await system.stop();
  }
  const made = callsBetween(startCalls, endCalls);
  const billed = Object.fromEntries(SCHEDULED_FUNCTIONS.map((fn) => [fn, billedWithin(system.reports, fn, fromMs, toMs)])) as Record<ScheduledFunction, BilledWithin>;
  const elapsedMs = toMs - fromMs;
  const billedSecondsPerHour = Object.fromEntries(SCHEDULED_FUNCTIONS.map((fn) => [fn, perHour(billed[fn].billedMs / 1_000, elapsedMs)])) as Record<ScheduledFunction, number>;
  const gbSecondsPerHour = perHour(billed.poller.gbSeconds + billed.sweeper.gbSeconds, elapsedMs);
  const callsInWindow = Object.values(made).reduce((sum, count) => sum + count, 0);
  const backstopWindowMs = backstopToMs - backstopFromMs;
  // Beyond what the main window's ticks make in as long a time: the whole sweep's share.
  const backstopCallsMade = sum(Object.values(callsBetween(endCalls, backstopCalls))) - (callsInWindow * backstopWindowMs) / elapsedMs;
  const billedIn = (from: number, to: number) => SCHEDULED_FUNCTIONS.reduce((total, fn) => total + billedWithin(system.reports, fn, from, to).billedMs / 1_000, 0);
  const backstopBilledS = billedIn(backstopFromMs, backstopToMs) - (billedIn(fromMs, toMs) * backstopWindowMs) / elapsedMs;
  const backstopsPerHour = 3_600_000 / BACKSTOP_SWEEP_EVERY_MS;
  return {
    backstop: {
      calls: backstopCallsMade,
      billedSeconds: backstopBilledS,
      callsPerHour: backstopCallsMade * backstopsPerHour,
      billedSecondsPerHour: backstopBilledS * backstopsPerHour,
    },
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
    ['job types', 'calls', ...operations, 'poller billed s', 'sweeper billed s', 'both billed s', 'Lambda $/month', 'backstop calls (each, /hour)', 'backstop billed s (each, /hour)'],
    results.map((idle) => [
      String(idle.jobTypes),
      fmt(idle.callsPerHour),
      ...operations.map((operation) => fmt(Object.hasOwn(idle.callsPerHourByOperation, operation) ? idle.callsPerHourByOperation[operation] : 0)),
      fmt(idle.billedSecondsPerHour.poller),
      fmt(idle.billedSecondsPerHour.sweeper),
      fmt(idle.scheduledBilledSecondsPerHour),
      fmt(idle.scheduledLambdaDollarsPerMonth, 2),
      `${fmt(idle.backstop.calls)}, ${fmt(idle.backstop.callsPerHour)}`,
      `${fmt(idle.backstop.billedSeconds, 1)}, ${fmt(idle.backstop.billedSecondsPerHour, 1)}`,
    ]),
  )}`;
}
