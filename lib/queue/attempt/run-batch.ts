/**
 * The worker: runs a batch of claimed jobs with a bound on concurrency, each
 * through its type's target, and records every outcome under the claim's guard.
 * One job's failure, timeout or crash ends that job's attempt only.
 */
import pLimit from 'p-limit';
import { type JobRunOutcome, guardOf, type AttemptEnding } from '../../domain/attempts.js';
import { markStarted, recordBatchStarts, type StartResult } from './claim.js';
import { endCancelled, endAttempt, releaseClaim, deferAttempt } from './end-attempt.js';
import { recordProgress, extendClaim } from './renew-claim.js';
import { assertProgressFits } from '../../domain/progress.js';
import type { QueueContext } from '../context.js';
import { createSlotReturnQueue } from '../limits/slot-returns.js';
import { ClaimLostError } from '../../domain/errors.js';
import { createSigningSecretCache } from '../catalog/job-type-cache.js';
import { type SigningSecrets } from '../../targets/target.js';
import { jsonBytes } from '../../domain/json-size.js';
import { MAX_RESULT_BYTES, type WorkerIdentity, type Job } from '../../domain/job.js';
import type { JobTypeWithoutSecrets } from '../../domain/job-type.js';
import type { WorkerBatch } from '../../domain/invocations.js';
import type { CustomRetryPolicies } from '../../domain/retry.js';
import { failureFromError, type JobHandler } from '../../targets/handler.js';
import { prepareTarget, type TargetClients, type TargetRunner, type TargetOutcome, type TargetRun } from '../../targets/index.js';
import { effectiveWindows, firstInstantInWindows } from '../../domain/windows.js';
import { ownEntry } from '../../domain/own.js';
import { MAX_WORKER_ATTEMPT_S } from '../../domain/limits.js';
import { childTraceparent } from '../../domain/trace-context.js';
import { inSpan, SpanKind } from '../../domain/spans.js';
import { CANCEL_WATCH_INTERVAL_MS, createCancelWatch, type CancelWatch } from './cancel-watch.js';

export { CANCEL_WATCH_INTERVAL_MS } from './cancel-watch.js';
export { AWAIT_CALLBACK, failureFromError, type JobContext, type JobHandler } from '../../targets/handler.js';

/** The worker's code: handlers by name and custom retry policies by name. */
export interface WorkerRegistry {
  handlers: Readonly<Record<string, JobHandler>>;
  retryPolicies: CustomRetryPolicies;
}

export class JobTimeoutError extends Error {
  override readonly name = 'TimeoutError';
}

/** The reason a handler's `signal` is aborted with when its job is cancelled while it runs. */
export class JobCancelledError extends Error {
  override readonly name = 'JobCancelledError';
  constructor(
    message: string,
    /** Who cancelled it: the id of the key that asked, or of the bulk operation; undefined when not known. */
    readonly by: string | undefined,
  ) {
    super(message);
  }
}

/** What an attempt came to: its target's outcome, or a cancel asked while it ran (`by`: who asked, when known). */
type AttemptOutcomeSeen = TargetOutcome | { kind: 'cancelled'; by?: string | undefined };


/**
 * Runs the job through its target as one attempt. While it runs, the worker
 * renews the claim every half visibility timeout, so a live job is never rescued
 * however long it takes, and a dead worker's job comes back one visibility
 * timeout after its last renewal. The attempt ends at `timeout_s`, or as soon as
 * the claim is lost, whether or not the target notices, and as soon as the
 * worker sees a cancel asked for it: its watch, or a renewal that finds the mark.
 */
async function runAttempt(
  ctx: QueueContext,
  job: Job,
  jobType: JobTypeWithoutSecrets,
  run: TargetRunner,
  cancelWatch: CancelWatch,
): Promise<AttemptOutcomeSeen> {
  const controller = new AbortController();
  const guard = guardOf(job);
  const visibilityMs = jobType.visibilityTimeoutS * 1000;
  const cancel = (by: string | undefined): void => {
    if (controller.signal.aborted) return;
    controller.abort(new JobCancelledError(by === undefined ? `job "${job.id}" was cancelled` : `job "${job.id}" was cancelled by ${by}`, by));
  };
  const stopWatching = cancelWatch.watch(job, (seen) => cancel(seen.by));
  const claimLost = (): never => {
    const error = new ClaimLostError(`the claim on job "${job.id}" attempt ${job.attempt} is no longer held`);
    controller.abort(error);
    throw error;
  };
  const extend = async (extendMs: number): Promise<void> => {
    const extended = await extendClaim(ctx, guard, ctx.nowMs() + extendMs);
    if (!extended) claimLost();
    else if (extended.cancelRequestedAtMs !== undefined) cancel(extended.cancelledBy);
  };
  const context: TargetRun = {
    job,
    jobType,
    signal: controller.signal,
    heartbeat: (extendS = jobType.visibilityTimeoutS) => extend(extendS * 1000),
    progress: async (report) => {
      assertProgressFits(report);
      if (!(await recordProgress(ctx, guard, report))) claimLost();
    },
    nowMs: ctx.nowMs,
  };
  const stopped = new Promise<never>((_, reject) => {
    controller.signal.addEventListener('abort', () => reject(controller.signal.reason), { once: true });
  });
  // Lambda stops the worker after WORKER_TIMEOUT_S; ending the attempt first leaves time to record it.
  const runLimitS = Math.min(jobType.timeoutS, MAX_WORKER_ATTEMPT_S);
  const timeoutTimer = setTimeout(
    () =>
      controller.abort(
        new JobTimeoutError(
          runLimitS < jobType.timeoutS
            ? `the attempt ran longer than ${runLimitS} s, the most a worker function can give it (timeout_s bounds only the callback wait beyond that)`
            : `the attempt ran longer than ${runLimitS} s`,
        ),
      ),
    runLimitS * 1000,
  );
  // Renewed whenever the claim has half a visibility timeout left, the first time counted from the claim's deadline,
  // not from the start: a claim taken up with little more than half left (a batch that reached the worker late)
  // would otherwise lapse, with the start recorded since, before its first renewal, and the sweeper hand it back
  // while the handler runs. A renewal that fails on a passing store error is simply tried again at the next one.
  const renewEveryMs = visibilityMs / 2;
  let renewTimer: ReturnType<typeof setTimeout> | undefined;
  const renewIn = (delayMs: number): void => {
    renewTimer = setTimeout(() => {
      void extend(visibilityMs).catch(() => undefined);
      renewIn(renewEveryMs);
    }, delayMs);
  };
  renewIn(Math.max(0, (job.claimedUntilMs ?? ctx.nowMs() + visibilityMs) - ctx.nowMs() - renewEveryMs));
  const attributes = { 'djq.job.type': job.type, 'djq.job.id': job.id, 'djq.attempt': job.attempt };
  try {
    // A span of the job's trace: the SDK's when one records it, else a new span id of the same trace.
    const outcome = await inSpan<TargetOutcome>('djq run', job.traceparent, { kind: SpanKind.CONSUMER, attributes, failed: (outcome) => outcome.kind === 'failed' }, (recorded) => {
      const traceparent = recorded ?? (job.traceparent !== undefined ? childTraceparent(job.traceparent) : undefined);
      return Promise.race([Promise.resolve().then(() => run({ ...context, traceparent })), stopped]).catch((error: unknown) => ({
        kind: 'failed' as const,
        failure: failureFromError(error),
      }));
    });
    const reason: unknown = controller.signal.reason;
    return reason instanceof JobCancelledError ? { kind: 'cancelled', by: reason.by } : outcome;
  } finally {
    stopWatching();
    clearTimeout(timeoutTimer);
    clearTimeout(renewTimer);
  }
}

export interface WorkerOptions {
  registry: WorkerRegistry;
  worker: WorkerIdentity;
  /** Clients for the http, lambda and eventbridge targets; handler targets need none. */
  targets?: TargetClients;
  /**
   * Where http targets' signing secrets are read from. A process keeps one across its batches.
   * @default a cache of its own for each batch (for each job, given to runClaimedJob)
   */
  signingSecrets?: SigningSecrets;
  /** @default CANCEL_WATCH_INTERVAL_MS */
  cancelWatchIntervalMs?: number;
}

/**
 * The job with its claim held for at least half a visibility timeout more: as it is when it has that long left,
 * renewed when it has less (a batch that reached the worker late, or a target slow to prepare); undefined when the
 * claim is no longer ours, the sweeper having taken it back. No job starts on a claim about to lapse.
 */
async function holdClaim(ctx: QueueContext, job: Job, jobType: JobTypeWithoutSecrets): Promise<Job | undefined> {
  if (job.claimedUntilMs === undefined) return undefined;
  const nowMs = ctx.nowMs();
  const visibilityMs = jobType.visibilityTimeoutS * 1000;
  if (job.claimedUntilMs - nowMs >= visibilityMs / 2) return job;
  return extendClaim(ctx, guardOf(job), nowMs + visibilityMs);
}

/** Whether the job may start at `nowMs`: not expired, and inside its time windows (runClaimedJob ends or defers it otherwise). */
function mayStartAt(job: Job, jobType: JobTypeWithoutSecrets, nowMs: number): boolean {
  if (job.expiresAtMs !== undefined && nowMs >= job.expiresAtMs) return false;
  const windows = effectiveWindows(job, jobType);
  return !windows || firstInstantInWindows(windows, nowMs) <= nowMs;
}

/**
 * Runs one claimed job. `recordedStart` is the start its batch recorded for its claim's group
 * (recordBatchStarts); without it, the job records a start of its own before its target runs.
 */
export async function runClaimedJob(
  ctx: QueueContext,
  job: Job,
  jobType: JobTypeWithoutSecrets,
  options: WorkerOptions & { cancelWatch?: CancelWatch },
  recordedStart?: StartResult,
): Promise<JobRunOutcome> {
  // Another delivery of the batch has the job: this one must not touch its claim at all.
  if (recordedStart === 'already_started' || recordedStart === 'claim_lapsed') return recordedStart;
  const endCancelledAs = async (by: string | undefined, startedAtMs?: number): Promise<JobRunOutcome> =>
    (await endCancelled(ctx, job, { by, worker: options.worker, ...(startedAtMs !== undefined ? { startedAtMs } : {}) })) ? 'cancelled' : 'stale';
  if (typeof recordedStart === 'object') return endCancelledAs(recordedStart.by);
  const { registry, worker } = options;
  const targetDeps = {
    ...options.targets,
    handlers: registry.handlers,
    signingSecrets: options.signingSecrets ?? createSigningSecretCache(ctx),
  };
  const nowMs = ctx.nowMs();
  if (!(await holdClaim(ctx, job, jobType))) return 'claim_lapsed';
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
  const windows = effectiveWindows(job, jobType);
  if (windows) {
    // Claimed inside a window but reached here after it closed (or the type's windows changed since).
    const checkedAtMs = ctx.nowMs();
    const startableAtMs = firstInstantInWindows(windows, checkedAtMs);
    if (job.expiresAtMs !== undefined && startableAtMs >= job.expiresAtMs) return end({ outcome: 'expired' });
    if (startableAtMs > checkedAtMs) return (await releaseClaim(ctx, job, startableAtMs)) ? 'rescheduled' : 'stale';
  }

  const target = await prepareTarget(jobType, targetDeps);
  if ('failure' in target) return end({ outcome: 'failed', failure: target.failure });
  // Every attempt records its start, whatever its delivery strategy: an invoke Lambda throttled or delivered
  // after the claim lapsed then costs the job no attempt, and a batch delivered twice runs each job once.
  const started = recordedStart ?? (await markStarted(ctx, job, worker));
  if (typeof started === 'object') return endCancelledAs(started.by);
  if (started !== 'started') return started;
  // A start recorded for the batch checked no claim: preparing the target may have taken long enough for it to lapse.
  if (recordedStart && !(await holdClaim(ctx, job, jobType))) return 'claim_lapsed';

  const startedAtMs = ctx.nowMs();
  const outcome = await runAttempt(ctx, job, jobType, target.run, options.cancelWatch ?? createCancelWatch(ctx, options.cancelWatchIntervalMs ?? CANCEL_WATCH_INTERVAL_MS));
  if (outcome.kind === 'cancelled') return endCancelledAs(outcome.by, startedAtMs);
  if (outcome.kind === 'failed') return end({ outcome: 'failed', failure: outcome.failure }, startedAtMs);
  if (outcome.kind === 'awaiting_callback') {
    const deferred = await deferAttempt(ctx, job, jobType, { startedAtMs, worker });
    if (!deferred) return 'stale';
    return deferred.status === 'cancelled' ? 'cancelled' : 'awaiting_callback';
  }
  const resultBytes = jsonBytes(outcome.result);
  if (resultBytes > MAX_RESULT_BYTES) {
    const message = `the result is ${resultBytes} bytes; the limit is ${MAX_RESULT_BYTES}`;
    return end({ outcome: 'failed', failure: { error: { class: 'ResultTooLargeError', message }, retryable: false } }, startedAtMs);
  }
  return end({ outcome: 'succeeded', result: outcome.result }, startedAtMs);
}

export type BatchResult = Record<JobRunOutcome | 'error', number>;

/**
 * Takes up a batch's claims: each is held first (renewed if it was about to lapse, undefined if the sweeper took it
 * back), so a claim the sweeper sees lapsed is one no worker took up; then the start of the at_least_once jobs
 * that run at once (the first WORKER_CONCURRENCY that may start now) is recorded for the batch, a write per group
 * of claims. An at_most_once job, or one that waits for a free slot, records a start of its own just before it
 * runs: it is checked against its claim then, and a start recorded long before would charge an attempt to a job
 * whose claim lapsed while it waited.
 */
async function startBatch(
  ctx: QueueContext,
  batch: WorkerBatch,
  worker: WorkerIdentity,
): Promise<{ held: Map<Job, Job | undefined | Error>; starts: Map<Job, StartResult | Error> }> {
  // A job whose type the batch lacks is not taken up: runWorkerBatch reports it.
  const typed = batch.jobs.flatMap((job) => {
    const jobType = ownEntry(batch.jobTypes, job.type);
    return jobType ? [{ job, jobType }] : [];
  });
  const held = new Map<Job, Job | undefined | Error>();
  await Promise.all(
    typed.map(async ({ job, jobType }) => {
      held.set(job, await holdClaim(ctx, job, jobType).catch((error: unknown) => (error instanceof Error ? error : new Error(String(error)))));
    }),
  );
  const nowMs = ctx.nowMs();
  const startNow = typed
    .flatMap(({ job, jobType }) => {
      const current = held.get(job);
      const startable = current !== undefined && !(current instanceof Error) && current.deliveryStrategy === 'at_least_once' && mayStartAt(current, jobType, nowMs);
      return startable ? [current] : [];
    })
    .slice(0, ctx.settings.workerConcurrency);
  return { held, starts: await recordBatchStarts(ctx, startNow, worker) };
}

/**
 * The jobs of a batch often end close together: their slots go back in one write per counter for all those
 * ending within this window, instead of one each, and are free that much later.
 */
const SLOT_RETURN_WINDOW_MS = 25;

export async function runWorkerBatch(
  ctx: QueueContext,
  batch: WorkerBatch,
  options: WorkerOptions & {
    onError?: (job: Job, error: unknown) => void;
    /** Each job's outcome as it is recorded, for what needs it per type (the counts are per batch). */
    onOutcome?: (job: Job, outcome: JobRunOutcome) => void;
  },
): Promise<BatchResult> {
  const counts: BatchResult = {
    succeeded: 0,
    failed: 0,
    retrying: 0,
    awaiting_callback: 0,
    expired: 0,
    rescheduled: 0,
    claim_lapsed: 0,
    already_started: 0,
    cancelled: 0,
    stale: 0,
    error: 0,
  };
  const limit = pLimit(ctx.settings.workerConcurrency);
  const jobOptions = {
    ...options,
    signingSecrets: options.signingSecrets ?? createSigningSecretCache(ctx),
    cancelWatch: createCancelWatch(ctx, options.cancelWatchIntervalMs ?? CANCEL_WATCH_INTERVAL_MS),
  };
  const batchCtx: QueueContext = { ...ctx, slotReturns: createSlotReturnQueue(ctx, SLOT_RETURN_WINDOW_MS) };
  const { held, starts } = await startBatch(batchCtx, batch, options.worker);
  await Promise.all(
    batch.jobs.map((job) =>
      limit(async () => {
        const jobType = ownEntry(batch.jobTypes, job.type);
        try {
          if (!jobType) throw new Error(`batch carries no configuration for job type "${job.type}"`);
          const current = held.get(job);
          if (current instanceof Error) throw current;
          const start = current ? starts.get(current) : undefined;
          if (start instanceof Error) throw start;
          const outcome = current ? await runClaimedJob(batchCtx, current, jobType, jobOptions, start) : 'claim_lapsed';
          counts[outcome]++;
          options.onOutcome?.(job, outcome);
        } catch (error) {
          // The store did not answer (recording the outcome, or reading a signing secret): the claim runs out and the sweeper decides.
          counts.error++;
          options.onError?.(job, error);
        }
      }),
    ),
  );
  return counts;
}
