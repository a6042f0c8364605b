/**
 * The worker: runs a batch of claimed jobs with a bound on concurrency, each
 * through its type's target, and records every outcome under the claim's guard.
 * One job's failure, timeout or crash ends that job's attempt only.
 */
import pLimit from 'p-limit';
import { deferAttempt, endAttempt, extendClaim, guardOf, markStarted, type AttemptEnding } from './claims.js';
import type { QueueContext } from './config.js';
import { ClaimLostError, NonRetryableError, RetryAfterError } from './errors.js';
import { jsonBytes } from './jobs.js';
import { MAX_RESULT_BYTES, type Job, type JobType, type WorkerIdentity } from './model.js';
import type { WorkerBatch } from './poller.js';
import type { AttemptFailure, CustomRetryPolicies } from './retry.js';

/** Returned by a handler to leave the job `awaiting_callback` until a status callback or `timeout_s`. */
export const AWAIT_CALLBACK: unique symbol = Symbol.for('delayed-job-queue.await-callback');

export interface JobContext {
  readonly job: Readonly<Job>;
  /**
   * Extends the claim to `extendS` (default: the type's visibility timeout) from now. The worker already
   * renews the claim while the handler runs; call this to hold it longer than that, e.g. before a long pause.
   * Throws ClaimLostError when the attempt no longer holds the claim.
   */
  heartbeat(extendS?: number): Promise<void>;
  /** Aborted when the attempt reaches the type's `timeout_s` or loses its claim. */
  readonly signal: AbortSignal;
}

export type JobHandler = (data: unknown, context: JobContext) => unknown;

/** The worker's code: handlers by name and custom retry policies by name. */
export interface WorkerRegistry {
  handlers: Readonly<Record<string, JobHandler>>;
  retryPolicies: CustomRetryPolicies;
}

export class JobTimeoutError extends Error {
  override readonly name = 'TimeoutError';
}

export function failureFromError(error: unknown): AttemptFailure {
  if (!(error instanceof Error)) return { error: { class: 'NonError', message: String(error) }, retryable: true };
  return {
    error: { class: error.name, message: error.message, ...(error.stack ? { trace: error.stack } : {}) },
    retryable: !(error instanceof NonRetryableError),
    ...(error instanceof RetryAfterError ? { retryAfterMs: error.retryAfterMs } : {}),
  };
}

export type JobRunOutcome =
  | 'succeeded'
  | 'failed'
  | 'retrying'
  | 'awaiting_callback'
  | 'expired'
  /** The claim was taken back before the worker got to it; another attempt owns the job now. */
  | 'claim_lapsed'
  /** An at_most_once job this claim already started (a duplicate delivery). */
  | 'already_started'
  /** The outcome could not be recorded: another worker, callback or sweep got there first. */
  | 'stale';

/**
 * Runs the handler as one attempt. While it runs, the worker renews the claim
 * every half visibility timeout, so a live job is never rescued however long it
 * takes, and a dead worker's job comes back one visibility timeout after its
 * last renewal. The attempt ends at `timeout_s`, or as soon as the claim is lost.
 */
async function runAttempt(ctx: QueueContext, handler: JobHandler, job: Job, jobType: JobType): Promise<unknown> {
  const controller = new AbortController();
  const guard = guardOf(job);
  const visibilityMs = jobType.visibilityTimeoutS * 1000;
  const extend = async (extendMs: number): Promise<void> => {
    if (await extendClaim(ctx, guard, ctx.nowMs() + extendMs)) return;
    const error = new ClaimLostError(`the claim on job "${job.id}" attempt ${job.attempt} is no longer held`);
    controller.abort(error);
    throw error;
  };
  const context: JobContext = {
    job,
    signal: controller.signal,
    heartbeat: (extendS = jobType.visibilityTimeoutS) => extend(extendS * 1000),
  };
  const stopped = new Promise<never>((_, reject) => {
    controller.signal.addEventListener('abort', () => reject(controller.signal.reason), { once: true });
  });
  const timeoutTimer = setTimeout(
    () => controller.abort(new JobTimeoutError(`the attempt ran longer than ${jobType.timeoutS} s`)),
    jobType.timeoutS * 1000,
  );
  // A renewal that fails on a passing store error is simply tried again at the next tick.
  const renewTimer = setInterval(() => extend(visibilityMs).catch(() => undefined), visibilityMs / 2);
  try {
    return await Promise.race([Promise.resolve().then(() => handler(job.data, context)), stopped]);
  } finally {
    clearTimeout(timeoutTimer);
    clearInterval(renewTimer);
  }
}

export async function runClaimedJob(
  ctx: QueueContext,
  job: Job,
  jobType: JobType,
  options: { registry: WorkerRegistry; worker: WorkerIdentity },
): Promise<JobRunOutcome> {
  const { registry, worker } = options;
  const nowMs = ctx.nowMs();
  if (job.claimedUntilMs === undefined) return 'claim_lapsed';
  const visibilityMs = jobType.visibilityTimeoutS * 1000;
  // A batch that reached the worker late holds claims that lapsed or soon will: renew them while they are
  // still ours rather than drop jobs the sweeper has not taken back yet.
  if (job.claimedUntilMs - nowMs < visibilityMs / 2 && !(await extendClaim(ctx, guardOf(job), nowMs + visibilityMs))) {
    return 'claim_lapsed';
  }
  const end = async (ending: AttemptEnding, startedAtMs?: number): Promise<JobRunOutcome> => {
    const ended = await endAttempt(ctx, job, {
      ending,
      jobType,
      customPolicies: registry.retryPolicies,
      worker,
      ...(startedAtMs !== undefined ? { startedAtMs } : {}),
    });
    if (!ended) return 'stale';
    return ended.next.status === 'queued' ? 'retrying' : ended.next.status;
  };
  if (job.expiresAtMs !== undefined && nowMs >= job.expiresAtMs) return end({ outcome: 'expired' });

  const handler = registry.handlers[jobType.target.name];
  if (handler === undefined) {
    return end({
      outcome: 'failed',
      failure: { error: { class: 'UnknownHandlerError', message: `no handler named "${jobType.target.name}"` }, retryable: false },
    });
  }
  if (job.deliveryStrategy === 'at_most_once' && !(await markStarted(ctx, job, worker))) return 'already_started';

  const startedAtMs = ctx.nowMs();
  let value: unknown;
  try {
    value = await runAttempt(ctx, handler, job, jobType);
  } catch (error) {
    return end({ outcome: 'failed', failure: failureFromError(error) }, startedAtMs);
  }
  if (value === AWAIT_CALLBACK) {
    const deferred = await deferAttempt(ctx, job, jobType, { startedAtMs, worker });
    return deferred ? 'awaiting_callback' : 'stale';
  }
  const resultBytes = jsonBytes(value);
  if (resultBytes > MAX_RESULT_BYTES) {
    const message = `the result is ${resultBytes} bytes; the limit is ${MAX_RESULT_BYTES}`;
    return end({ outcome: 'failed', failure: { error: { class: 'ResultTooLargeError', message }, retryable: false } }, startedAtMs);
  }
  return end({ outcome: 'succeeded', result: value }, startedAtMs);
}

export type BatchResult = Record<JobRunOutcome | 'error', number>;

export async function runWorkerBatch(
  ctx: QueueContext,
  batch: WorkerBatch,
  options: { registry: WorkerRegistry; worker: WorkerIdentity; onError?: (job: Job, error: unknown) => void },
): Promise<BatchResult> {
  const counts: BatchResult = {
    succeeded: 0,
    failed: 0,
    retrying: 0,
    awaiting_callback: 0,
    expired: 0,
    claim_lapsed: 0,
    already_started: 0,
    stale: 0,
    error: 0,
  };
  const limit = pLimit(ctx.settings.workerConcurrency);
  await Promise.all(
    batch.jobs.map((job) =>
      limit(async () => {
        const jobType = batch.jobTypes[job.type];
        try {
          if (!jobType) throw new Error(`batch carries no configuration for job type "${job.type}"`);
          counts[await runClaimedJob(ctx, job, jobType, options)]++;
        } catch (error) {
          // Recording the outcome failed (the store is unreachable): the claim runs out and the sweeper decides.
          counts.error++;
          options.onError?.(job, error);
        }
      }),
    ),
  );
  return counts;
}
