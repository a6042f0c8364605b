/** Outcomes reported from outside the worker: status callbacks and heartbeats of remote workers. */
import { endAttempt } from './end-attempt.js';
import { extendClaim } from './renew-claim.js';
import { guardOf, type AttemptEnding, type CallbackInput } from '../../domain/attempts.js';
import type { QueueContext } from '../context.js';
import { ConflictError } from '../../domain/errors.js';
import { assertJsonSize } from '../../domain/json-size.js';
import { activeHolder, correlationPointers, type CorrelationPointer, releaseCorrelationKey } from '../enqueue/correlation-keys.js';
import { requireJob } from '../read-job.js';
import { isTerminal, MAX_RESULT_BYTES, type Job } from '../../domain/job.js';
import type { JobType } from '../../domain/job-type.js';
import type { CustomRetryPolicies } from '../../domain/retry.js';
import { assertProgressFits, type ProgressReport } from '../../domain/progress.js';


/** The attempt a callback or heartbeat reports on: `attempt` when it is the open one, the open one when absent. */
function assertCurrentAttempt(job: Job, attempt: number | undefined): void {
  const open = job.status === 'running' || job.status === 'awaiting_callback';
  if (attempt === undefined && !open) {
    throw new ConflictError(`no attempt of job "${job.id}" is open: it is ${job.status}`);
  }
  if (!open || (attempt !== undefined && job.attempt !== attempt)) {
    throw new ConflictError(
      `attempt ${attempt} is not open: job "${job.id}" is ${job.status} at attempt ${job.attempt}`,
    );
  }
}

/**
 * Ends the current attempt from a callback; a stale attempt, or one that already ended, is a ConflictError.
 * The write is guarded by the claim token and attempt of the job as read, so a callback without `attempt`
 * ends the attempt that was open then, never one that began since.
 */
export async function completeFromCallback(
  ctx: QueueContext,
  jobType: JobType,
  id: string,
  input: CallbackInput,
  customPolicies: CustomRetryPolicies,
): Promise<Job> {
  assertJsonSize('result', input.result, MAX_RESULT_BYTES);
  return completeJob(ctx, jobType, await requireJob(ctx, jobType.name, id), input, customPolicies);
}

async function completeJob(
  ctx: QueueContext,
  jobType: JobType,
  job: Job,
  input: CallbackInput,
  customPolicies: CustomRetryPolicies,
): Promise<Job> {
  assertCurrentAttempt(job, input.attempt);
  const ending: AttemptEnding =
    input.status === 'succeeded'
      ? { outcome: 'succeeded', result: input.result }
      : {
          outcome: 'failed',
          failure: {
            error: {
              class: input.error?.class ?? 'CallbackFailure',
              message: input.error?.message ?? 'the callback reported a failure',
              ...(input.error?.trace ? { trace: input.error.trace } : {}),
            },
            retryable: input.retryable ?? true,
          },
        };
  const ended = await endAttempt(ctx, job, { ending, jobType, customPolicies });
  if (!ended) throw new ConflictError(`attempt ${job.attempt} of job "${job.id}" ended while this callback was applied`);
  // A cancel asked while the attempt ran wins over its outcome: the job ended cancelled, and the callback is told.
  if (ended.next.status === 'cancelled') throw new ConflictError(`job "${job.id}" was cancelled while attempt ${job.attempt} ran; its outcome is not kept`);
  return ended.job;
}

/**
 * The job that holds `correlationKey`, has not finished, and is of a type `mayCallBack` lets through, with the
 * pointer that names it; undefined when there is none. Each type holds its own keys, so two such types may
 * each have a holder: that is a ConflictError naming them (types the caller may call back), since the key
 * alone does not say which is meant.
 */
export async function findActiveCorrelatedJob(
  ctx: QueueContext,
  correlationKey: string,
  mayCallBack: (type: string) => boolean,
): Promise<{ job: Job; pointer: CorrelationPointer } | undefined> {
  const pointers = (await correlationPointers(ctx, correlationKey)).filter((pointer) => mayCallBack(pointer.type));
  const held = await Promise.all(
    pointers.map(async (pointer) => {
      const job = await activeHolder(ctx, pointer, correlationKey);
      return job ? [{ job, pointer }] : [];
    }),
  );
  // One holder per type at most: an untyped pointer from before holds its type's key, so no typed pointer of
  // that type names another unfinished job, and a retried enqueue of its own job writes none.
  const holders = held.flat();
  if (holders.length > 1) {
    const named = holders.map(({ job }) => job.type).sort().join(', ');
    throw new ConflictError(
      `correlation_key "${correlationKey}" is held by unfinished jobs of several types (${named}): report by job, at its callback_url or POST /v1/jobs/{type}/{id}`,
    );
  }
  return holders[0];
}

/**
 * Ends the current attempt of a job found by its correlation key, as a status
 * callback does. When the job is then terminal, the pointer that named it is
 * deleted, on condition it still names this holder; if that delete is lost,
 * the next enqueue with the key takes the stale item over.
 */
export async function completeCorrelatedJob(
  ctx: QueueContext,
  jobType: JobType,
  found: { job: Job; pointer: CorrelationPointer },
  input: CallbackInput,
  customPolicies: CustomRetryPolicies,
): Promise<Job> {
  assertJsonSize('result', input.result, MAX_RESULT_BYTES);
  const { job, pointer } = found;
  const ended = await completeJob(ctx, jobType, job, input, customPolicies);
  if (isTerminal(ended.status) && job.correlationKey !== undefined) {
    // Best effort, so a job already completed is never answered with an error.
    await releaseCorrelationKey(ctx, pointer);
  }
  return ended;
}

/**
 * A remote worker's heartbeat: extends the current attempt's claim by `extendS` (default: the visibility
 * timeout) from now, and records its progress report when it carries one (over MAX_PROGRESS_BYTES: a
 * PayloadTooLargeError naming `progress`, before anything is written).
 */
export async function heartbeatJob(
  ctx: QueueContext,
  jobType: JobType,
  id: string,
  beat: { attempt: number; extendS?: number | undefined; progress?: ProgressReport | undefined },
): Promise<Job> {
  const { attempt, extendS = jobType.visibilityTimeoutS, progress } = beat;
  if (progress !== undefined) assertProgressFits(progress);
  const job = await requireJob(ctx, jobType.name, id);
  assertCurrentAttempt(job, attempt);
  const extended = await extendClaim(ctx, guardOf(job), ctx.nowMs() + extendS * 1000, progress);
  if (!extended) throw new ConflictError(`attempt ${attempt} of job "${id}" ended before the heartbeat`);
  return extended;
}
