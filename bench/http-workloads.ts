/**
 * The workloads as users run them: through `npm start`'s HTTP API with the
 * typed client, against jobs of an in-code `echo` type or of an `http` type
 * whose target is a sink here that verifies each request's signature and
 * answers 200 at once. Each workload run gets job types of its own.
 */
import type { AddressInfo } from 'node:net';
import pLimit from 'p-limit';
import { createDownstream } from '../infra/local/downstream.js';
import type { Job, Json, QueueClient } from '../lib/client/index.js';
import { JOB_TYPES_REFRESH_MS } from '../lib/queue/catalog/job-types.js';
import { cpuBetween, type HttpSystem, type ProcessCpu } from './http-system.js';
import { summariseLag, type LagSummary } from './stats.js';
import { payloadOf, progressLine } from './workloads.js';

export interface HttpWorkloadResult {
  workload: string;
  n: number;
  enqueueJobsPerS: number;
  /** From the first enqueue (or the first due time) to the last job finished or started at the sink. */
  drainJobsPerS: number | undefined;
  /** Start at the sink minus due time (run_after as the enqueue answered it); only for `http` types. */
  lagMs: LagSummary | undefined;
  duplicates: number;
  lost: number;
  enqueuedAfterDue: number;
  /** Requests (or batch items) the api answered 5xx for even after the client's retries, and the bench sent again. */
  resentBatchItems: number;
  cpuMsPerJob: ProcessCpu;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** What the sink saw: every start of every job, by id. */
export interface Sink {
  url: string;
  secret: string | undefined;
  startsMs: Map<string, number[]>;
  close(): Promise<void>;
}

export async function startSink(): Promise<Sink> {
  const startsMs = new Map<string, number[]>();
  const sink: Sink = { url: '', secret: undefined, startsMs, close: async () => undefined };
  // The secret is known only once the type exists, which needs the sink's URL: it is read per request.
  const server = createDownstream({
    get secret() {
      return sink.secret ?? '';
    },
    onJob: (job) => startsMs.set(job.id, [...(startsMs.get(job.id) ?? []), Date.now()]),
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  sink.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/jobs`;
  sink.close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  server.keepAliveTimeout = 60_000;
  return sink;
}

export async function defineTypes(client: QueueClient, runId: string, sink: Sink) {
  const echo = `${runId}-echo`;
  const http = `${runId}-http`;
  await client.defineType(echo, { target: { kind: 'handler', name: 'echo' } });
  const created = (await client.defineType(http, { target: { kind: 'http', url: sink.url } })) as { signing_secret?: string };
  sink.secret = created.signing_secret;
  return { echo, http };
}

/**
 * Pauses a run's types once it is measured. Each run defines types of its own; left running, every later run's
 * polls would read their idle lanes too (every shard of every type, each poll), which a user's queue of a few
 * types does not pay, and later runs would measure a queue of dozens.
 */
export async function retireTypes(client: QueueClient, types: { echo: string; http: string }): Promise<void> {
  await Promise.all([client.pause(types.echo), client.pause(types.http)]);
}

export interface HttpWorkloadSpec {
  name: string;
  n: number;
  target: 'echo' | 'http';
  /** Enqueue requests in flight. */
  concurrency: number;
  /** Per request: 1 job by PUT, or up to 100 by POST .../batch. */
  batch: boolean;
  /** Due time of job `index`, from the enqueue start; undefined: due on arrival. */
  dueOffsetMs?: (index: number) => number | undefined;
  /** Enqueue job `index` no earlier than this after the start (a steady arrival rate). */
  sendOffsetMs?: (index: number) => number;
  firstDueOffsetMs: number;
  lastDueOffsetMs: number;
}

/** Enqueues every job; returns each job's due time in ms, as the api answered it, and how many were enqueued after it. */
async function produce(client: QueueClient, type: string, spec: HttpWorkloadSpec, runId: string, startMs: number, onEnqueued: () => void) {
  const dueAtMs = new Map<string, number>();
  let enqueuedAfterDue = 0;
  let resent = 0;
  const limit = pLimit(spec.concurrency);
  const bodyOf = (index: number) => {
    const offset = spec.dueOffsetMs?.(index);
    return { id: `${runId}-${index}`, data: payloadOf(index) as Json, ...(offset !== undefined ? { run_after: new Date(startMs + offset) } : {}) };
  };
  const record = (job: Job) => {
    const dueMs = Date.parse(job.run_after ?? job.created_at ?? '');
    dueAtMs.set(job.id, dueMs);
    if (job.run_after !== null && spec.dueOffsetMs?.(0) !== undefined && Date.now() > dueMs) enqueuedAfterDue++;
    onEnqueued();
  };
  const size = spec.batch ? 100 : 1;
  await Promise.all(
    Array.from({ length: Math.ceil(spec.n / size) }, (_, chunk) =>
      limit(async () => {
        const first = chunk * size;
        const sendAtMs = startMs + (spec.sendOffsetMs?.(first) ?? 0);
        if (Date.now() < sendAtMs) await sleep(sendAtMs - Date.now());
        if (!spec.batch) {
          const { id, ...job } = bodyOf(first);
          // The client already retried a 5xx three times; a producer would keep trying a PUT by id a little longer.
          for (let tries = 1; ; tries++) {
            try {
              return record(await client.enqueue(type, job, { id }));
            } catch (error) {
              if (tries >= 3) throw error;
              resent++;
              await sleep(1_000);
            }
          }
        }
        let items = Array.from({ length: Math.min(size, spec.n - first) }, (_, i) => bodyOf(first + i));
        // An item the api could not store answers 5xx inside the batch's 200; the API says to send it again by its id.
        for (let tries = 1; items.length > 0; tries++) {
          const { results } = await client.enqueueBatch(type, items);
          for (const result of results) if ('job' in result) record(result.job);
          const failed = new Set(results.flatMap((result) => ('job' in result || result.status < 500 ? [] : [result.index])));
          if (failed.size > 0 && tries >= 5) throw new Error(`${failed.size} batch items still failed after ${tries} tries: ${JSON.stringify(results.find((result) => !('job' in result)))}`);
          resent += failed.size;
          items = items.filter((_, index) => failed.has(index));
        }
      }),
    ),
  );
  return { dueAtMs, enqueuedAfterDue, resent };
}

/** Waits until every job of the type has succeeded (as `npm start` logged it), or the deadline. */
async function waitUntilSucceeded(system: HttpSystem, type: string, n: number, deadlineMs: number): Promise<void> {
  while ((system.successes.get(type)?.size ?? 0) < n && Date.now() < deadlineMs) await sleep(20);
}

/** Jobs never logged as succeeded, and runs beyond the first: a second success, an attempt after the first, a second start at the sink. */
function verify(system: HttpSystem, type: string, n: number, sink: Sink): { duplicates: number; lost: number; lastSuccessMs: number } {
  const successes = [...(system.successes.get(type)?.values() ?? [])];
  const extraRuns = successes.reduce((sum, logged) => sum + logged.length - 1 + Math.max(...logged.map((success) => success.attempt)) - 1, 0);
  const sinkDuplicates = [...sink.startsMs.values()].reduce((sum, starts) => sum + starts.length - 1, 0);
  return {
    duplicates: Math.max(extraRuns, sinkDuplicates),
    lost: n - successes.length,
    lastSuccessMs: Math.max(0, ...successes.map((logged) => logged[0]!.seenAtMs)),
  };
}

export async function runHttpWorkload(system: HttpSystem, spec: HttpWorkloadSpec, label: string, deadlineMs: number): Promise<HttpWorkloadResult> {
  const runId = label.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/-$/, '');
  const sink = await startSink();
  let enqueued = 0;
  const stopProgress = progressLine(() => `${label}: enqueued ${enqueued}/${spec.n}, started at the sink ${sink.startsMs.size}`);
  try {
    const types = await defineTypes(system.client, runId, sink);
    const type = types[spec.target];
    // Pollers pick up a new type within JOB_TYPES_REFRESH_MS; a user's type exists long before its jobs flow.
    await sleep(JOB_TYPES_REFRESH_MS + 500);
    const cpuStart = system.sampleCpu();
    const startMs = Date.now();
    const { dueAtMs, enqueuedAfterDue, resent } = await produce(system.client, type, spec, runId, startMs, () => enqueued++);
    const enqueueEndMs = Date.now();
    const lastDueMs = Math.max(enqueueEndMs, startMs + spec.lastDueOffsetMs);
    await waitUntilSucceeded(system, type, spec.n, lastDueMs + deadlineMs);
    const cpu = cpuBetween(cpuStart, system.sampleCpu(), spec.n);
    const checked = verify(system, type, spec.n, sink);
    // An http job starts when the sink sees it; an echo job's start is not seen from outside, so it ends the drain by its success.
    const endMs = spec.target === 'http' ? Math.max(0, ...[...sink.startsMs.values()].map((starts) => starts[0]!)) : checked.lastSuccessMs;
    const lags = [...sink.startsMs].map(([id, starts]) => starts[0]! - (dueAtMs.get(id) ?? starts[0]!));
    await retireTypes(system.client, types);
    return {
      workload: spec.name,
      n: spec.n,
      enqueueJobsPerS: (spec.n * 1_000) / (enqueueEndMs - startMs),
      drainJobsPerS: (spec.n * 1_000) / Math.max(1, endMs - (startMs + spec.firstDueOffsetMs)),
      lagMs: spec.target === 'http' ? summariseLag(lags) : undefined,
      duplicates: checked.duplicates,
      lost: checked.lost,
      enqueuedAfterDue,
      resentBatchItems: resent,
      cpuMsPerJob: cpu,
    };
  } finally {
    stopProgress();
    await sink.close();
  }
}
