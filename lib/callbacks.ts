/** Outcomes reported from outside the worker: status callbacks and heartbeats of remote workers. */
import { endAttempt, extendClaim, guardOf, type AttemptEnding } from './claims.js';
import type { QueueContext } from './config.js';
import { ConflictError } from './errors.js';
import { assertJsonSize, requireJob } from './jobs.js';
import { MAX_RESULT_BYTES, type AttemptError, type Job, type JobType } from './model.js';
import type { CustomRetryPolicies } from './retry.js';

export interface CallbackInput {
  status: 'succeeded' | 'failed';
  attempt: number;
  /** For a failure: false ends the job whatever attempts remain. @default true */
  retryable?: boolean;
  error?: Partial<AttemptError>;
  result?: unknown;
}

function assertCurrentAttempt(job: Job, attempt: number): void {
  const open = job.status === 'running' || job.status === 'awaiting_callback';
  if (!open || job.attempt !== attempt) {
    throw new ConflictError(
      `attempt ${attempt} is not open: job "${job.id}" is ${job.status} at attempt ${job.attempt}`,
    );
  }
}

/** Ends the current attempt from a callback; a stale attempt, or one that already ended, is a ConflictError. */
export async function completeFromCallback(
  ctx: QueueContext,
  jobType: JobType,
  id: string,
  input: CallbackInput,
  customPolicies: CustomRetryPolicies,
): Promise<Job> {
  assertJsonSize('result', input.result, MAX_RESULT_BYTES);
  const job = await requireJob(ctx, jobType.name, id);
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
  if (!ended) throw new ConflictError(`attempt ${input.attempt} of job "${id}" ended while this callback was applied`);
  return ended.job;
}

/** A remote worker's heartbeat: extends the current attempt's claim by `extendS` (default: the visibility timeout) from now. */
export async function heartbeatJob(
  ctx: QueueContext,
  jobType: JobType,
  id: string,
  attempt: number,
  extendS: number = jobType.visibilityTimeoutS,
): Promise<Job> {
  const job = await requireJob(ctx, jobType.name, id);
  assertCurrentAttempt(job, attempt);
  const extended = await extendClaim(ctx, guardOf(job), ctx.nowMs() + extendS * 1000);
  if (!extended) throw new ConflictError(`attempt ${attempt} of job "${id}" ended before the heartbeat`);
  return extended;
}
