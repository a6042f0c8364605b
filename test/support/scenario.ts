/**
 * Drives the real poller, worker and sweeper code against DynamoDB Local with
 * several pollers and sweepers at once, collecting every error they report, then
 * audits every job in the table against the invariants of docs/concepts/design.md
 * (auditJobs).
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
import { ScanCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { itemToJob } from '../../lib/store/items.js';
import { PARTITION_PREFIX } from '../../lib/store/keys.js';
import { eventually } from './eventually.js';

export interface ScenarioComponents {
  /** One context per poller: its own client (maybe faulty) and clock (maybe skewed). */
  pollers: QueueContext[];
  sweepers: QueueContext[];
  workers: QueueContext;
}

/** Handler starts by job id and attempt number. */
export type StartsByAttempt = Map<string, Map<number, number>>;

export interface StartCounter {
  /** Handler starts by job id. */
  starts: Map<string, number>;
  byAttempt: StartsByAttempt;
  handler: JobHandler;
}

/** Counts one handler start of `job` in `starts` and `byAttempt`. */
export function countStart(counter: Pick<StartCounter, 'starts' | 'byAttempt'>, job: Pick<Job, 'id' | 'attempt'>): void {
  counter.starts.set(job.id, (counter.starts.get(job.id) ?? 0) + 1);
  const attempts = counter.byAttempt.get(job.id) ?? new Map<number, number>();
  attempts.set(job.attempt, (attempts.get(job.attempt) ?? 0) + 1);
  counter.byAttempt.set(job.id, attempts);
}

/** `handler`, counting how often each job (and each of its attempts) starts, for the audit's `starts` and `startsByAttempt`. */
export function countStarts(handler: JobHandler): StartCounter {
  const counter = { starts: new Map<string, number>(), byAttempt: new Map<string, Map<number, number>>() };
  return {
    ...counter,
    handler: (data, context) => {
      countStart(counter, context.job);
      return handler(data, context);
    },
  };
}

/** A handler that counts how often each job (and each of its attempts) starts and takes a few milliseconds. */
export function countingHandler(maxWorkMs = 10): StartCounter {
  return countStarts(async () => {
    await new Promise((resolve) => setTimeout(resolve, Math.random() * maxWorkMs));
    return 'done';
  });
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
}): Promise<SettleOutcome> {
  const stop = new AbortController();
  const inFlight = new Set<Promise<unknown>>();
  const errors: ScenarioError[] = [];
  const invoker: WorkerInvoker = {
    async invoke(batch: WorkerBatch) {
      const payload = JSON.parse(JSON.stringify(batch)) as WorkerBatch;
      const run = runWorkerBatch(options.components.workers, payload, {
        registry: options.registry,
        worker: { id: 'scenario-worker', host: 'localhost' },
        onError: (job, error) => errors.push({ by: 'worker', at: `${job.type}/${job.id}`, error }),
      });
      inFlight.add(run);
      void run.finally(() => inFlight.delete(run));
    },
  };
  const startedAtMs = Date.now();
  const loops = [
    ...options.components.pollers.map((ctx) =>
      runPollerLoop(ctx, { invoker, runForMs: options.pollerRunForMs ?? options.timeoutMs, signal: stop.signal, jobTypesRefreshMs: 1_000, onError: (error) => errors.push({ by: 'poller', error }) }),
    ),
    ...options.components.sweepers.map(async (ctx) => {
      while (!stop.signal.aborted) {
        await sweepOnce(ctx, {
          customPolicies: options.registry.retryPolicies,
          onError: (failure, error) => errors.push({ by: 'sweeper', at: JSON.stringify(failure), error }),
        }).catch((error: unknown) => errors.push({ by: 'sweeper', error }));
        await abortableSleep(options.sweepIntervalMs ?? 200, stop.signal);
      }
    }),
  ];
  const settled = (await waitUntilTerminal(options.auditor, options.jobs, options.timeoutMs)) === 0;
  stop.abort();
  await Promise.all(loops);
  await Promise.allSettled([...inFlight]);
  const count = (by: ScenarioError['by']) => errors.filter((error) => error.by === by).length;
  return { settled, elapsedMs: Date.now() - startedAtMs, workerErrors: count('worker'), pollErrors: count('poller'), sweepErrors: count('sweeper'), errors };
}

/** Waits until every job in `jobs` is terminal or `withinMs` passes; answers how many are not. */
export async function waitUntilTerminal(auditor: QueueContext, jobs: JobRef[], withinMs: number): Promise<number> {
  const open = new Set(jobs);
  const countOpen = async (): Promise<number> => {
    // Oldest first, stopping at the first job still open: each job is read about once, however many there are.
    for (const job of open) {
      const read = await getJob(auditor, job.type, job.id);
      if (!read || !isTerminal(read.status)) break;
      open.delete(job);
    }
    return open.size;
  };
  return eventually(countOpen, (count) => count === 0, withinMs, 250);
}

/** An error a worker, a poller or a sweeper reported while a scenario ran (`at`: the job, or the sweep's lane or job). */
export interface ScenarioError {
  by: 'worker' | 'poller' | 'sweeper' | 'waker';
  at?: string;
  error: unknown;
}

export interface SettleOutcome {
  settled: boolean;
  elapsedMs: number;
  workerErrors: number;
  pollErrors: number;
  sweepErrors: number;
  /** Every error reported; logs carry the counts, audits check the errors (auditJobs' `errors`). */
  errors: ScenarioError[];
}

/**
 * The errors that are not `expected`; by default every error is unexpected. A test that injects faults expects
 * exactly those: pass `isInjected` (support/faults.ts).
 */
export function unexpectedErrors(errors: ScenarioError[], expected: (error: unknown) => boolean = () => false): ScenarioError[] {
  return errors.filter(({ error }) => !expected(error));
}

const describeError = (error: unknown): string => (error instanceof Error ? `${error.name}: ${error.message}` : String(error));

export interface AuditFinding {
  /** The job (`type/id`), or the component whose error it is. */
  id: string;
  problem: string;
}

/**
 * Why a job may end `failed` with no handler run: its target could not be prepared at all (lib/targets/index.ts,
 * notRunnable). Any other failure comes from a run: a handler's throw, a result too large, a callback, a timeout
 * of a recorded start.
 */
export const FAILURES_WITHOUT_A_RUN: ReadonlySet<string> = new Set(['UnknownHandlerError', 'TargetNotConfiguredError']);

export interface AuditOptions {
  /**
   * Enqueues whose answer was lost (a timeout, a reset connection): the job may or may not have been written.
   * Each that was is held to every rule an accepted one is; one that was not is no finding.
   */
  unknown?: JobRef[];
  /** Handler starts by job id and attempt number (StartCounter.byAttempt): checks that no attempt started twice. */
  startsByAttempt?: StartsByAttempt;
  /** A job still open that may legitimately be (beyond one queued and not due yet): within its limits, say. */
  mayStillWait?: (job: Job) => boolean;
  /** What the components reported (SettleOutcome.errors): each one not `expectedError` is a finding. */
  errors?: ScenarioError[];
  /** The errors the test injects on purpose (support/faults.ts, isInjected); none by default. */
  expectedError?: (error: unknown) => boolean;
}

type JobRef = { type: string; id: string };
const refKey = ({ type, id }: JobRef): string => `${type}/${id}`;

/** Every job in the table, read consistently. */
async function tableJobs(auditor: QueueContext): Promise<Job[]> {
  const jobs: Job[] = [];
  let startKey: Record<string, unknown> | undefined;
  do {
    const page = await auditor.db.send(new ScanCommand({ TableName: auditor.settings.tableName, ConsistentRead: true, ExclusiveStartKey: startKey }));
    for (const item of page.Items ?? []) if (String(item.pk).startsWith(PARTITION_PREFIX.job) && item.sk === 'JOB') jobs.push(itemToJob(item));
    startKey = page.LastEvaluatedKey;
  } while (startKey);
  return jobs;
}

/** What is wrong with one job in the table, by the invariants (design.md#invariants). */
function jobProblems(job: Job, started: number, byAttempt: Map<number, number> | undefined, options: AuditOptions, nowMs: number): string[] {
  const problems: string[] = [];
  const open = job.status === 'running' || job.status === 'awaiting_callback';
  // 1. Nothing lost: every job ends terminal, unless it legitimately waits (not due yet, or as the test allows).
  const waiting = job.status === 'queued' && job.runAfterMs > nowMs;
  if (!isTerminal(job.status) && !waiting && !options.mayStillWait?.(job)) problems.push(`not terminal: ${job.status}`);
  // The history explains every attempt: one entry each (the open one has none yet), numbered 1..n.
  const ended = job.attempt - (open ? 1 : 0);
  if (job.history.length + job.historyDropped !== ended) {
    problems.push(`history has ${job.history.length}+${job.historyDropped} entries for ${job.attempt} attempts${open ? ' (one open)' : ''}`);
  }
  const numbers = job.history.map((entry) => entry.attempt);
  const expected = job.history.map((_, index) => job.historyDropped + index + 1);
  if (numbers.join() !== expected.join()) problems.push(`history numbers attempts ${numbers.join(',')}, not ${expected.join(',')}`);
  if (job.attempt > job.maxAttempts) problems.push(`attempt ${job.attempt} of ${job.maxAttempts}`);
  const successes = job.history.filter((entry) => entry.outcome === 'succeeded').length;
  if (job.status === 'succeeded' && (successes !== 1 || job.history.at(-1)?.outcome !== 'succeeded')) problems.push(`succeeded with ${successes} succeeded attempts`);
  if (job.status === 'succeeded' && started < 1) problems.push('succeeded without a start');
  // 2. Starts within the delivery strategy: at_most_once once at most; never an attempt twice, nor more starts than attempts.
  if (job.deliveryStrategy === 'at_most_once' && started > 1) problems.push(`at_most_once started ${started} times`);
  if (started > job.attempt) problems.push(`${started} handler starts for ${job.attempt} attempts`);
  for (const [attempt, count] of byAttempt ?? []) if (count > 1) problems.push(`attempt ${attempt} started ${count} times`);
  // No failure without a run, or a reason that says why there was none. A start recorded whose handler never ran
  // (the worker died, or the start's answer was lost) counts as a run.
  for (const entry of job.history) {
    if ((entry.outcome === 'failed' || entry.outcome === 'timed_out') && entry.startedAtMs === null && !FAILURES_WITHOUT_A_RUN.has(entry.error?.class ?? '')) {
      problems.push(`attempt ${entry.attempt} ${entry.outcome} (${entry.error?.class ?? 'no error'}) without a start`);
    }
  }
  if (job.status === 'failed') {
    const last = job.history.at(-1);
    const ran = started > 0 || (last !== undefined && last.startedAtMs !== null);
    if (!ran && !FAILURES_WITHOUT_A_RUN.has(last?.error?.class ?? '')) problems.push(`failed without a run (${last?.error?.class ?? 'no history'})`);
  }
  return problems;
}

/**
 * Audits every job in the table (a scan, not only the jobs it is given) against the invariants: each accepted
 * job is in the table; each job there is terminal or legitimately waiting, its history explains each attempt
 * (numbered 1..n), a succeeded job succeeded once and ran, an at_most_once job never started twice, no attempt
 * started twice, no more starts than attempts, and no job failed without a run or a reason for none. With
 * `errors`, each error the components reported that the test did not inject is a finding too.
 * `byStatus` counts the statuses of the `jobs` given; `unknownLanded`, the `unknown` enqueues that were written.
 */
export async function auditJobs(
  auditor: QueueContext,
  jobs: JobRef[],
  starts: Map<string, number>,
  _jobTypes: Map<string, JobType>,
  options: AuditOptions = {},
): Promise<{ findings: AuditFinding[]; byStatus: Record<string, number>; unknownLanded: number }> {
  const findings: AuditFinding[] = [];
  const byStatus: Record<string, number> = {};
  const nowMs = auditor.nowMs();
  const inTable = new Map((await tableJobs(auditor)).map((job) => [refKey(job), job]));
  for (const ref of jobs) {
    const job = inTable.get(refKey(ref));
    if (!job) findings.push({ id: ref.id, problem: 'lost: no item' });
    else byStatus[job.status] = (byStatus[job.status] ?? 0) + 1;
  }
  for (const job of inTable.values()) {
    for (const problem of jobProblems(job, starts.get(job.id) ?? 0, options.startsByAttempt?.get(job.id), options, nowMs)) findings.push({ id: job.id, problem });
  }
  for (const { by, at, error } of unexpectedErrors(options.errors ?? [], options.expectedError)) {
    findings.push({ id: by, problem: `unexpected error${at ? ` at ${at}` : ''}: ${describeError(error)}` });
  }
  const unknownLanded = (options.unknown ?? []).filter((ref) => inTable.has(refKey(ref))).length;
  return { findings, byStatus, unknownLanded };
}
