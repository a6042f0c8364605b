/**
 * wake-latency: how late a job due on arrival starts when the pollers of `npm start` sleep (lib/queue/wake/lease-keeper.ts).
 * Three cases of TRIES tries each: a job of an existing type enqueued while no poller is awake; the first job of a
 * type made a moment ago while none is awake; and the same while one is (kept awake by a job falling due every
 * second: a poller stays only while work is due within a few seconds).
 * Each try reads the poller's wake item straight from DynamoDB Local to say whether a poller was awake when it
 * began; the lag is the attempt's start (started_at) minus the job's run_after, both from the runtime's clock.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { createDynamoClients } from '../lib/store/client.js';
import type { Job } from '../lib/client/types.js';
import { wakeKey } from '../lib/store/keys.js';
import type { HttpStorage } from './args.js';
import { startHttpSystem, type HttpSystem } from './http-system.js';
import { fmt, summariseLag, type LagSummary } from './stats.js';

export const WAKE_TRIES = 20;
export const WAKE_CASES = ['due on arrival, poller asleep', 'new type, poller asleep', 'new type, poller awake'] as const;
export type WakeCase = (typeof WAKE_CASES)[number];

export interface WakeLatencyResult {
  case: WakeCase;
  tries: number;
  /** Tries that began as the case wants: no poller awake (or one awake, for the last case). */
  asPlanned: number;
  startLagMs: LagSummary;
}

/** How long a try waits for its job to succeed before it counts as lost. */
const TRY_TIMEOUT_MS = 120_000;
/** The longest wait for the pollers to fall asleep between tries: past any lease, look and tick. */
const ASLEEP_TIMEOUT_MS = 180_000;

function wakeItemReader(system: HttpSystem) {
  const { base, db } = createDynamoClients({ endpoint: system.dynamo.endpoint });
  return {
    /** A poller holds a lease now. */
    async awake(): Promise<boolean> {
      const { Item } = await db.send(new GetCommand({ TableName: 'jobs', Key: wakeKey('poller', 0), ConsistentRead: true }));
      return typeof Item?.awakeUntilMs === 'number' && Item.awakeUntilMs > Date.now();
    },
    destroy: () => base.destroy(),
  };
}

/** How late job `type/id` started: its first attempt's start minus its run_after, both from the runtime's clock. */
export async function startLagMs(system: HttpSystem, type: string, id: string): Promise<number> {
  const deadlineMs = Date.now() + TRY_TIMEOUT_MS;
  for (;;) {
    const job: Job = await system.client.get(type, id);
    const startedAt = job.history[0]?.started_at;
    if (startedAt && job.run_after) return Date.parse(startedAt) - Date.parse(job.run_after);
    if (Date.now() > deadlineMs) throw new Error(`${type}/${id} did not start within ${TRY_TIMEOUT_MS / 1000} s`);
    await sleep(20);
  }
}

async function untilAsleep(reader: ReturnType<typeof wakeItemReader>): Promise<void> {
  const deadlineMs = Date.now() + ASLEEP_TIMEOUT_MS;
  while ((await reader.awake()) && Date.now() < deadlineMs) await sleep(500);
}

/** Enqueues a job due a second later every second, until stopped: a poller stays awake for them. */
function keepAwake(system: HttpSystem): { stop: () => Promise<void> } {
  let stopped = false;
  const loop = (async () => {
    for (let index = 0; !stopped; index++) {
      await system.client.enqueue('probe', { data: {}, run_after: new Date(Date.now() + 1_000) }, { id: `keeps-awake-${index}` });
      await sleep(1_000);
    }
    // The runtime stopped under it (a case that failed): the bench is ending anyway.
  })().catch(() => undefined);
  return {
    stop: async () => {
      stopped = true;
      await loop;
    },
  };
}

const summary = (wakeCase: WakeCase, lags: number[], asPlanned: number): WakeLatencyResult => ({
  case: wakeCase,
  tries: lags.length,
  asPlanned,
  startLagMs: summariseLag(lags),
});

export async function runWakeLatency(storage: HttpStorage, log: (line: string) => void): Promise<WakeLatencyResult[]> {
  const system = await startHttpSystem({ countCalls: false, storage });
  const reader = wakeItemReader(system);
  const echo = { target: { kind: 'handler' as const, name: 'echo' } };
  const results: WakeLatencyResult[] = [];
  try {
    await system.client.defineType('probe', echo);
    for (const wakeCase of WAKE_CASES) {
      const lags: number[] = [];
      let asPlanned = 0;
      const wantsAwake = wakeCase === 'new type, poller awake';
      const keepingAwake = wantsAwake ? keepAwake(system) : undefined;
      for (let attempt = 0; attempt < WAKE_TRIES; attempt++) {
        if (wantsAwake) await sleep(500);
        else await untilAsleep(reader);
        if ((await reader.awake()) === wantsAwake) asPlanned++;
        const type = wakeCase === 'due on arrival, poller asleep' ? 'probe' : `fresh-${results.length}-${attempt}`;
        if (type !== 'probe') await system.client.defineType(type, echo);
        const id = `try-${results.length}-${attempt}`;
        await system.client.enqueue(type, { data: {} }, { id });
        lags.push(await startLagMs(system, type, id));
      }
      await keepingAwake?.stop();
      const result = summary(wakeCase, lags, asPlanned);
      log(`wake-latency ${wakeCase}: p50 ${fmt(result.startLagMs.p50)} ms, p99 ${fmt(result.startLagMs.p99)} ms over ${lags.length} tries (${asPlanned} as planned)`);
      results.push(result);
    }
  } finally {
    reader.destroy();
    await system.stop();
  }
  return results;
}

export function wakeLatencyTable(results: readonly WakeLatencyResult[], table: (headers: string[], rows: string[][]) => string): string {
  return `wake latency under npm start at its defaults: an attempt's start minus its job's run_after, ${WAKE_TRIES} tries a case\n${table(
    ['case', 'tries', 'as planned', 'p50 ms', 'p99 ms', 'max ms'],
    results.map((result) => [result.case, String(result.tries), String(result.asPlanned), fmt(result.startLagMs.p50), fmt(result.startLagMs.p99), fmt(result.startLagMs.max)]),
  )}`;
}
