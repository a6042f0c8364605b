/**
 * Drives the real poller, worker and sweeper code against DynamoDB Local with
 * several pollers and sweepers at once, then audits every accepted job: it is
 * terminal, its history explains every attempt, and its starts match its
 * delivery strategy.
 */
import { createQueueContext, type QueueContext } from '../../lib/queue/context.js';
import { getJob } from '../../lib/queue/read-job.js';
import { isTerminal } from '../../lib/domain/job.js';
import type { Job } from '../../lib/domain/job.js';
import type { JobType } from '../../lib/domain/job-type.js';
import { runPollerLoop } from '../../lib/queue/poll/poller-loop.js';
import type { WorkerInvoker } from '../../lib/domain/invocations.js';
import type { WorkerBatch } from '../../lib/domain/invocations.js';
import { abortableSleep } from '../../lib/domain/sleep.js';
import { sweepOnce } from '../../lib/queue/sweep/sweep.js';
import { runWorkerBatch, type WorkerRegistry } from '../../lib/queue/attempt/run-batch.js';
import type { JobHandler } from '../../lib/queue/attempt/run-batch.js';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

export interface ScenarioComponents {
  /** One context per poller: its own client (maybe faulty) and clock (maybe skewed). */
  pollers: QueueContext[];
  sweepers: QueueContext[];
  workers: QueueContext;
}

export interface StartCounter {
  starts: Map<string, number>;
  handler: JobHandler;
}

/** A handler that counts how often each job starts and takes a few milliseconds. */
export function countingHandler(maxWorkMs = 10): StartCounter {
  const starts = new Map<string, number>();
  return {
    starts,
    handler: async (_data, { job }) => {
      starts.set(job.id, (starts.get(job.id) ?? 0) + 1);
      await new Promise((resolve) => setTimeout(resolve, Math.random() * maxWorkMs));
      return 'done';
    },
  };
}

export function contextWith(base: QueueContext, overrides: { db?: DynamoDBDocumentClient; skewMs?: number }): QueueContext {
  const skewMs = overrides.skewMs ?? 0;
  return createQueueContext(overrides.db ?? base.db, base.settings, { nowMs: () => Date.now() + skewMs, random: Math.random });
}

/** Runs the components until every job in `jobIds` is terminal or `timeoutMs` passes. */
export async function runUntilSettled(options: {
  components: ScenarioComponents;
  registry: WorkerRegistry;
  auditor: QueueContext;
  jobs: { type: string; id: string }[];
  timeoutMs: number;
  sweepIntervalMs?: number;
  /** How long each poller runs on its own clock; `timeoutMs` by default (a clock faster than real time needs more). */
  pollerRunForMs?: number;
}): Promise<{ settled: boolean; elapsedMs: number; workerErrors: number; pollErrors: number }> {
  const stop = new AbortController();
  const inFlight = new Set<Promise<unknown>>();
  let workerErrors = 0;
  let pollErrors = 0;
  const invoker: WorkerInvoker = {
    async invoke(batch: WorkerBatch) {
      const payload = JSON.parse(JSON.stringify(batch)) as WorkerBatch;
      const run = runWorkerBatch(options.components.workers, payload, {
        registry: options.registry,
        worker: { id: 'scenario-worker', host: 'localhost' },
        onError: () => workerErrors++,
      });
      inFlight.add(run);
      void run.finally(() => inFlight.delete(run));
    },
  };
  const startedAtMs = Date.now();
  const loops = [
    ...options.components.pollers.map((ctx) =>
      runPollerLoop(ctx, { invoker, runForMs: options.pollerRunForMs ?? options.timeoutMs, signal: stop.signal, jobTypesRefreshMs: 1_000, onError: () => pollErrors++ }),
    ),
    ...options.components.sweepers.map(async (ctx) => {
      while (!stop.signal.aborted) {
        await sweepOnce(ctx, { customPolicies: options.registry.retryPolicies }).catch(() => undefined);
        await abortableSleep(options.sweepIntervalMs ?? 200, stop.signal);
      }
    }),
  ];
  let settled = false;
  const pending = new Set(options.jobs.map((job) => `${job.type}\u0000${job.id}`));
  while (Date.now() - startedAtMs < options.timeoutMs) {
    // Oldest first, stopping at the first job still open: each job is read about once, however many there are.
    for (const key of pending) {
      const [type, id] = key.split('\u0000') as [string, string];
      const job = await getJob(options.auditor, type, id);
      if (!job || !isTerminal(job.status)) break;
      pending.delete(key);
    }
    if (pending.size === 0) {
      settled = true;
      break;
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  stop.abort();
  await Promise.all(loops);
  await Promise.allSettled([...inFlight]);
  return { settled, elapsedMs: Date.now() - startedAtMs, workerErrors, pollErrors };
}

export interface AuditFinding {
  id: string;
  problem: string;
}

/**
 * Every accepted job holds exactly one terminal state whose history explains
 * each attempt; a succeeded job succeeded once and ran at least once; an
 * at_most_once job never started twice.
 */
export async function auditJobs(
  auditor: QueueContext,
  jobs: { type: string; id: string }[],
  starts: Map<string, number>,
  jobTypes: Map<string, JobType>,
): Promise<{ findings: AuditFinding[]; byStatus: Record<string, number> }> {
  const findings: AuditFinding[] = [];
  const byStatus: Record<string, number> = {};
  for (const { type, id } of jobs) {
    const job: Job | undefined = await getJob(auditor, type, id);
    if (!job) {
      findings.push({ id, problem: 'lost: no item' });
      continue;
    }
    byStatus[job.status] = (byStatus[job.status] ?? 0) + 1;
    const started = starts.get(id) ?? 0;
    if (!isTerminal(job.status)) findings.push({ id, problem: `not terminal: ${job.status}` });
    if (job.history.length + job.historyDropped !== job.attempt) {
      findings.push({ id, problem: `history has ${job.history.length}+${job.historyDropped} entries for ${job.attempt} attempts` });
    }
    const successes = job.history.filter((entry) => entry.outcome === 'succeeded').length;
    if (job.status === 'succeeded' && (successes !== 1 || job.history.at(-1)?.outcome !== 'succeeded')) {
      findings.push({ id, problem: `succeeded with ${successes} succeeded attempts` });
    }
    if (job.status === 'succeeded' && started < 1) findings.push({ id, problem: 'succeeded without a start' });
    if (jobTypes.get(type)?.deliveryStrategy === 'at_most_once' && started > 1) findings.push({ id, problem: `at_most_once started ${started} times` });
  }
  return { findings, byStatus };
}
