/**
 * wake-outcomes: what sleeping pollers and sweepers cost and how late they start jobs, measured beside each other in
 * one fresh `npm start` at its defaults (a counting proxy in front of DynamoDB Local, billed Lambda time from the
 * runtime's report lines), in this order:
 * 1. idle: 10 job types and no jobs, counted over IDLE_MS (after the tick that follows the types' creation);
 * 2. jobs due on arrival after idle spells of 1 to 5 minutes (the first after the idle window), each its start lag;
 * 3. the first job of a type made a moment before, pollers asleep, each its start lag;
 * 4. 5 jobs each due 65 s after it was sent, one every 20 s: each start's lag, and the poller's and sweeper's
 *    billed seconds over the window beyond what the idle rate bills in as long;
 * 5. W2-steady at 100 jobs/s through HTTP, an `http` target (the same workload as HTTP-W2-steady).
 * A job's start lag is its attempt's started_at minus its run_after, both from the runtime's clock.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { HttpStorage } from './args.js';
import { perHour } from './cost.js';
import { runHttpWorkload, type HttpWorkloadResult } from './http-workloads.js';
import { startHttpSystem, type CallCounts, type HttpSystem } from './http-system.js';
import { billedWithin, SCHEDULED_FUNCTIONS } from './idle-types.js';
import { fmt } from './stats.js';
import { startLagMs } from './wake-latency.js';
import { W2_LEAD_MS, w2Steady } from './workloads.js';

export interface WakeOutcomesOptions {
  /** The idle window, and the first idle spell. */
  idleMs: number;
  /** The idle spells before the later jobs due on arrival. */
  spellsMs: readonly number[];
  newTypeTries: number;
  spacedJobs: number;
  spacedEveryMs: number;
  spacedAheadMs: number;
  w2RatePerS: number;
  w2Jobs: number;
}

export const WAKE_OUTCOMES_DEFAULTS: WakeOutcomesOptions = {
  idleMs: 300_000,
  spellsMs: [60_000, 90_000, 120_000, 240_000],
  newTypeTries: 3,
  spacedJobs: 5,
  spacedEveryMs: 20_000,
  spacedAheadMs: 65_000,
  w2RatePerS: 100,
  w2Jobs: 6_000,
};

export interface WakeOutcomesResult {
  idle: { jobTypes: number; windowMs: number; callsPerHour: number; billedSecondsPerHour: number };
  dueOnArrival: { spellMs: number; startLagMs: number }[];
  newTypeStartLagMs: number[];
  spaced: { startLagsMs: number[]; windowMs: number; billedSeconds: number; billedSecondsByFunction: Record<string, number>; idleBilledSeconds: number; extraBilledSeconds: number };
  w2: HttpWorkloadResult;
}

/** Past the first minute tick after the types were defined, and the invocation it started. */
const AFTER_TYPES_CHANGED_MS = 70_000;
const IDLE_TYPES = 10;
/** After the last spaced job fell due: the poller's last look, and a sweeper woken for its claim, have ended. */
const SPACED_TAIL_MS = 40_000;
const echo = { target: { kind: 'handler' as const, name: 'echo' } };

const totalCalls = (counts: CallCounts): number => Object.values(counts).reduce((sum, count) => sum + count, 0);
const billedSecondsByFunction = (system: HttpSystem, fromMs: number, toMs: number): Record<string, number> =>
  Object.fromEntries(SCHEDULED_FUNCTIONS.map((fn) => [fn, billedWithin(system.reports, fn, fromMs, toMs).billedMs / 1_000]));
const billedSeconds = (system: HttpSystem, fromMs: number, toMs: number): number => Object.values(billedSecondsByFunction(system, fromMs, toMs)).reduce((sum, s) => sum + s, 0);

export async function runWakeOutcomes(storage: HttpStorage, options: WakeOutcomesOptions, log: (line: string) => void): Promise<WakeOutcomesResult> {
  const system = await startHttpSystem({ countCalls: true, storage });
  const calls = system.calls as CallCounts;
  let idleWindow: { fromMs: number; toMs: number; calls: number };
  let spacedWindow: { fromMs: number; toMs: number };
  const dueOnArrival: WakeOutcomesResult['dueOnArrival'] = [];
  const newTypeStartLagMs: number[] = [];
  const spacedLags: number[] = [];
  let w2: HttpWorkloadResult;
  try {
    for (let index = 0; index < IDLE_TYPES; index++) await system.client.defineType(`idle-${index}`, echo);
    await sleep(AFTER_TYPES_CHANGED_MS);
    log(`wake-outcomes: idle with ${IDLE_TYPES} types for ${options.idleMs / 1_000} s`);
    const idleFromCalls = totalCalls(calls);
    const idleFromMs = Date.now();
    await sleep(options.idleMs);
    idleWindow = { fromMs: idleFromMs, toMs: Date.now(), calls: totalCalls(calls) - idleFromCalls };

    for (const [at, spellMs] of [options.idleMs, ...options.spellsMs].entries()) {
      if (at > 0) await sleep(spellMs);
      const id = `due-now-${at}`;
      await system.client.enqueue('idle-0', { data: {} }, { id });
      dueOnArrival.push({ spellMs, startLagMs: await startLagMs(system, 'idle-0', id) });
      log(`wake-outcomes: due on arrival after ${spellMs / 1_000} s idle: started ${fmt(dueOnArrival.at(-1)!.startLagMs)} ms after due`);
    }

    for (let attempt = 0; attempt < options.newTypeTries; attempt++) {
      // Past the last job's poller and any sweeper woken for its claim.
      await sleep(SPACED_TAIL_MS);
      const type = `fresh-${attempt}`;
      await system.client.defineType(type, echo);
      await system.client.enqueue(type, { data: {} }, { id: 'first' });
      newTypeStartLagMs.push(await startLagMs(system, type, 'first'));
      log(`wake-outcomes: a new type's first job started ${fmt(newTypeStartLagMs.at(-1)!)} ms after due`);
    }

    await sleep(SPACED_TAIL_MS);
    const spacedFromMs = Date.now();
    const sent: { id: string }[] = [];
    for (let index = 0; index < options.spacedJobs; index++) {
      if (index > 0) await sleep(options.spacedEveryMs);
      const id = `spaced-${index}`;
      await system.client.enqueue('idle-1', { data: {}, run_after: new Date(Date.now() + options.spacedAheadMs) }, { id });
      sent.push({ id });
    }
    for (const { id } of sent) spacedLags.push(await startLagMs(system, 'idle-1', id));
    await sleep(SPACED_TAIL_MS);
    spacedWindow = { fromMs: spacedFromMs, toMs: Date.now() };
    log(`wake-outcomes: spaced jobs started ${spacedLags.map((lag) => fmt(lag)).join(', ')} ms after due`);

    const spec = w2Steady(options.w2Jobs, options.w2RatePerS, W2_LEAD_MS);
    w2 = await runHttpWorkload(system, { ...spec, name: 'HTTP-W2-steady', target: 'http', concurrency: 16, batch: false }, 'wake-outcomes W2', Date.now() + 600_000);
  } finally {
    await system.stop();
  }
  const idleElapsedMs = idleWindow.toMs - idleWindow.fromMs;
  const idleBilledS = billedSeconds(system, idleWindow.fromMs, idleWindow.toMs);
  const spacedWindowMs = spacedWindow.toMs - spacedWindow.fromMs;
  const spacedBilledS = billedSeconds(system, spacedWindow.fromMs, spacedWindow.toMs);
  const idleBilledInSpacedS = (idleBilledS * spacedWindowMs) / idleElapsedMs;
  return {
    idle: { jobTypes: IDLE_TYPES, windowMs: idleElapsedMs, callsPerHour: perHour(idleWindow.calls, idleElapsedMs), billedSecondsPerHour: perHour(idleBilledS, idleElapsedMs) },
    dueOnArrival,
    newTypeStartLagMs,
    spaced: {
      startLagsMs: spacedLags,
      windowMs: spacedWindowMs,
      billedSeconds: spacedBilledS,
      billedSecondsByFunction: billedSecondsByFunction(system, spacedWindow.fromMs, spacedWindow.toMs),
      idleBilledSeconds: idleBilledInSpacedS,
      extraBilledSeconds: spacedBilledS - idleBilledInSpacedS,
    },
    w2,
  };
}

export function wakeOutcomesTable(result: WakeOutcomesResult, table: (headers: string[], rows: string[][]) => string): string {
  const { idle, spaced, w2 } = result;
  const rows: string[][] = [
    [`${idle.jobTypes} idle types, per hour`, `${fmt(idle.callsPerHour)} DynamoDB calls, ${fmt(idle.billedSecondsPerHour, 1)} billed poller+sweeper s`],
    ...result.dueOnArrival.map(({ spellMs, startLagMs }) => [`due on arrival after ${fmt(spellMs / 1_000)} s idle`, `started ${fmt(startLagMs)} ms after due`]),
    ...result.newTypeStartLagMs.map((lagMs) => ["a new type's first job", `started ${fmt(lagMs)} ms after due`]),
    [`${spaced.startLagsMs.length} jobs due 65 s after sent, one every 20 s`, `started ${spaced.startLagsMs.map((lag) => fmt(lag)).join(', ')} ms after due`],
    [
      '  their billed poller+sweeper s beyond idle',
      `${fmt(spaced.extraBilledSeconds, 1)} s (${fmt(spaced.billedSeconds, 1)} s in ${fmt(spaced.windowMs / 1_000)} s: ${Object.entries(spaced.billedSecondsByFunction)
        .map(([fn, seconds]) => `${fn} ${fmt(seconds, 1)}`)
        .join(', ')}; idle rate ${fmt(spaced.idleBilledSeconds, 1)} s)`,
    ],
    [`W2-steady over HTTP, ${w2.n} jobs`, `p99 ${fmt(w2.lagMs?.p99 ?? NaN)} ms, max ${fmt(w2.lagMs?.max ?? NaN)} ms, ${w2.lost} lost, ${w2.duplicates} duplicates`],
  ];
  return `wake outcomes, one fresh npm start at its defaults\n${table(['measured', 'outcome'], rows)}`;
}
