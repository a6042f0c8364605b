/**
 * Overload over HTTP: jobs due on arrival are offered open-loop (each sent on
 * its schedule whatever the answers before it, as independent producers do)
 * at 1x, 2x and 5x the knee, the enqueue rate `npm start` sustains with 64
 * requests in flight, measured first in the same run. Each `PUT` is sent once,
 * without the client's retries, so every answer is counted as it came:
 * accepted, refused with 429, or 5xx (which must never happen). Accepted jobs
 * target the bench's sink, whose start times give the lag from each answer.
 */
import pLimit from 'p-limit';
import type { Json } from '../lib/client/index.js';
import { JOB_TYPES_REFRESH_MS } from '../lib/queue/catalog/job-types.js';
import { cpuBetween, type HttpSystem, type ProcessCpu } from './http-system.js';
import { defineTypes, retireTypes, startSink } from './http-workloads.js';
import { summariseLag, type LagSummary } from './stats.js';
import { payloadOf, progressLine } from './workloads.js';

export const OVERLOAD_FACTORS = [1, 2, 5] as const;
const OFFER_MS = 10_000;
const KNEE_MS = 10_000;
const KNEE_IN_FLIGHT = 64;

export interface OverloadLevel {
  factor: number;
  offeredPerS: number;
  acceptedPerS: number;
  throttled: number;
  serverErrors: number;
  /** Answers neither 2xx, 429 nor 5xx, or no answer at all. */
  other: number;
  /** `other` by status, or by why no answer came (ECONNRESET, UND_ERR_CONNECT_TIMEOUT, ...). */
  otherKinds: Record<string, number>;
  lagMs: LagSummary;
  lost: number;
  duplicates: number;
  cpuMsPerAcceptedJob: ProcessCpu;
}

export interface OverloadResult {
  kneePerS: number;
  levels: OverloadLevel[];
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** An answer's status, or why none came (the error's code), so a run can say what its `other` answers were. */
function putJob(system: HttpSystem, type: string, id: string, index: number): Promise<number | string> {
  return fetch(`${system.url}/v1/jobs/${type}/${id}`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${system.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ data: payloadOf(index) }),
  }).then(
    async (response) => {
      await response.arrayBuffer();
      return response.status;
    },
    (error: unknown) => {
      const cause = (error as { cause?: { code?: string; name?: string } }).cause;
      return cause?.code ?? cause?.name ?? 'no answer';
    },
  );
}

/** Jobs accepted per second with KNEE_IN_FLIGHT requests in flight, each refused one sent again after a second. */
async function measureKnee(system: HttpSystem, type: string, label: string): Promise<number> {
  const limit = pLimit(KNEE_IN_FLIGHT);
  const startMs = Date.now();
  let accepted = 0;
  let index = 0;
  const stopProgress = progressLine(() => `${label}: knee, ${accepted} accepted`);
  try {
    await Promise.all(
      Array.from({ length: KNEE_IN_FLIGHT }, () =>
        limit(async () => {
          while (Date.now() - startMs < KNEE_MS) {
            const at = index++;
            const status = await putJob(system, type, `knee-${at}`, at);
            if (typeof status === 'number' && status < 300) accepted++;
            else await sleep(1_000);
          }
        }),
      ),
    );
  } finally {
    stopProgress();
  }
  return (accepted * 1_000) / (Date.now() - startMs);
}

async function offer(system: HttpSystem, ratePerS: number, factor: number, label: string, deadlineMs: number): Promise<OverloadLevel> {
  const sink = await startSink();
  const runId = `${label}-x${factor}`.toLowerCase().replace(/[^a-z0-9]+/g, '-');
  try {
    const types = await defineTypes(system.client, runId, sink);
    const type = types.http;
    await sleep(JOB_TYPES_REFRESH_MS + 500);
    const n = Math.round((ratePerS * OFFER_MS) / 1_000);
    const acceptedAtMs = new Map<string, number>();
    const counts = { throttled: 0, serverErrors: 0, other: 0 };
    const otherKinds = new Map<string, number>();
    const stopProgress = progressLine(() => `${label} x${factor}: sent at ${ratePerS.toFixed(0)}/s, accepted ${acceptedAtMs.size}, 429 ${counts.throttled}, 5xx ${counts.serverErrors}`);
    const cpuStart = system.sampleCpu();
    const startMs = Date.now();
    try {
      await Promise.all(
        Array.from({ length: n }, async (_, index) => {
          await sleep(startMs + (index * 1_000) / ratePerS - Date.now());
          const id = `${runId}-${index}`;
          const status = await putJob(system, type, id, index);
          if (typeof status === 'number' && status < 300) acceptedAtMs.set(id, Date.now());
          else if (status === 429) counts.throttled++;
          else if (typeof status === 'number' && status >= 500) counts.serverErrors++;
          else {
            counts.other++;
            otherKinds.set(String(status), (otherKinds.get(String(status)) ?? 0) + 1);
          }
        }),
      );
      const answeredMs = Date.now();
      while ([...acceptedAtMs.keys()].some((id) => !sink.startsMs.has(id)) && Date.now() < answeredMs + deadlineMs) await sleep(50);
    } finally {
      stopProgress();
    }
    const cpu = cpuBetween(cpuStart, system.sampleCpu(), Math.max(1, acceptedAtMs.size));
    await retireTypes(system.client, types);
    const lags = [...acceptedAtMs].flatMap(([id, atMs]) => {
      const starts = sink.startsMs.get(id);
      return starts ? [Math.max(0, (starts[0] as number) - atMs)] : [];
    });
    return {
      factor,
      offeredPerS: ratePerS,
      acceptedPerS: (acceptedAtMs.size * 1_000) / OFFER_MS,
      ...counts,
      otherKinds: Object.fromEntries(otherKinds),
      lagMs: summariseLag(lags),
      lost: [...acceptedAtMs.keys()].filter((id) => !sink.startsMs.has(id)).length,
      duplicates: [...sink.startsMs.values()].reduce((sum, starts) => sum + starts.length - 1, 0),
      cpuMsPerAcceptedJob: cpu,
    };
  } finally {
    await sink.close();
  }
}

export async function runOverload(system: HttpSystem, label: string, deadlineMs: number): Promise<OverloadResult> {
  const kneeSink = await startSink();
  let kneePerS: number;
  try {
    const types = await defineTypes(system.client, `${label}-knee`.toLowerCase().replace(/[^a-z0-9]+/g, '-'), kneeSink);
    await sleep(JOB_TYPES_REFRESH_MS + 500);
    kneePerS = await measureKnee(system, types.echo, label);
    await retireTypes(system.client, types);
  } finally {
    await kneeSink.close();
  }
  const levels: OverloadLevel[] = [];
  for (const factor of OVERLOAD_FACTORS) levels.push(await offer(system, kneePerS * factor, factor, label, deadlineMs));
  return { kneePerS, levels };
}

export interface BurstResult {
  n: number;
  /** The first answer to each of the n PUTs sent at once, by status (or why none came). */
  firstAnswers: Record<string, number>;
  /** From the burst to every job in, the refused ones sent again by the typed client after Retry-After. */
  allAcceptedMs: number;
  /** From the burst to every job run. */
  allRunMs: number | undefined;
  lost: number;
  duplicates: number;
}

/**
 * `n` PUTs sent at once to `npm start`: every first answer counted, then the typed client
 * (which waits out Retry-After) enqueues every job again by its id, and each job must run exactly once.
 */
export async function runBurst(system: HttpSystem, n: number, label: string, deadlineMs: number): Promise<BurstResult> {
  const sink = await startSink();
  const runId = label.toLowerCase().replace(/[^a-z0-9]+/g, '-');
  try {
    const types = await defineTypes(system.client, runId, sink);
    const type = types.http;
    await sleep(JOB_TYPES_REFRESH_MS + 500);
    const firstAnswers = new Map<string, number>();
    const ids = Array.from({ length: n }, (_, index) => `${runId}-${index}`);
    const startMs = Date.now();
    const statuses = await Promise.all(ids.map((id, index) => putJob(system, type, id, index)));
    for (const status of statuses) firstAnswers.set(String(status), (firstAnswers.get(String(status)) ?? 0) + 1);
    await Promise.all(ids.map((id, index) => system.client.enqueue(type, { data: payloadOf(index) as Json }, { id })));
    const allAcceptedMs = Date.now() - startMs;
    while (ids.some((id) => !sink.startsMs.has(id)) && Date.now() < startMs + allAcceptedMs + deadlineMs) await sleep(50);
    const lastStartMs = Math.max(...ids.map((id) => sink.startsMs.get(id)?.[0] ?? Number.NaN));
    await retireTypes(system.client, types);
    return {
      n,
      firstAnswers: Object.fromEntries(firstAnswers),
      allAcceptedMs,
      allRunMs: Number.isNaN(lastStartMs) ? undefined : lastStartMs - startMs,
      lost: ids.filter((id) => !sink.startsMs.has(id)).length,
      duplicates: [...sink.startsMs.values()].reduce((sum, starts) => sum + starts.length - 1, 0),
    };
  } finally {
    await sink.close();
  }
}
