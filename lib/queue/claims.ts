/**
 * The life of an attempt: claim (a conditional visibility-timeout update), start,
 * heartbeat, defer, and end. Every write after the claim is guarded by the claim
 * token and the attempt number, so a stale worker, callback or sweep changes nothing.
 */
import { randomUUID } from 'node:crypto';
import { ConditionalCheckFailedException, TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { UpdateCommand, type UpdateCommandInput } from '@aws-sdk/lib-dynamodb';
import type { QueueContext } from './context.js';
import { eventForUnstartedJob, eventsForEndedAttempt } from '../domain/lifecycle-events.js';
import { itemToJob, unmarshallItem } from '../store/items.js';
import { recordLaneBucket } from './directory.js';
import { finishedIndexKeys, getJob, purgeAtS, queuedIndexKeys } from './jobs.js';
import { bucketOf, claimSortKey, jobKey, lanePartition, shardOf } from '../store/keys.js';
import { HISTORY_LIMIT, MAX_ERROR_MESSAGE_CHARS, MAX_TRACE_CHARS, type AttemptRecord, type HeldSlots, type WorkerIdentity } from '../domain/model.js';
import type { AttemptError, AttemptOutcome, Job, JobType } from '../domain/model.js';
import { decideRetry, type AttemptFailure, type CustomRetryPolicies } from '../domain/retry.js';
import { limitTooSmall, returnSlotItems, takeSlotItems } from './slots.js';
import { transactWrite, type TransactItem } from '../store/transactions.js';
import { earliestStartMs, effectiveWindows } from '../domain/windows.js';

export function claimIndexKeys(
  ctx: QueueContext,
  job: Pick<Job, 'type' | 'id'>,
  claimedUntilMs: number,
): { gsi1pk: string; gsi1sk: string } {
  const { bucketMs, shards } = ctx.settings;
  return {
    gsi1pk: lanePartition({ kind: 'claims' }, bucketOf(claimedUntilMs, bucketMs), shardOf(job.id, shards)),
    gsi1sk: claimSortKey(claimedUntilMs, job.type, job.id),
  };
}

async function conditionalUpdate(
  ctx: QueueContext,
  input: Omit<UpdateCommandInput, 'TableName'>,
): Promise<{ ok: true; job: Job } | { ok: false; current?: Job }> {
  await recordLaneBucket(ctx, input.ExpressionAttributeValues?.[':gsi1pk']);
  try {
    const { Attributes } = await ctx.db.send(
      new UpdateCommand({
        TableName: ctx.settings.tableName,
        ReturnValues: 'ALL_NEW',
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        ...input,
      }),
    );
    return { ok: true, job: itemToJob(Attributes ?? {}) };
  } catch (error) {
    if (!(error instanceof ConditionalCheckFailedException)) throw error;
    return error.Item ? { ok: false, current: itemToJob(unmarshallItem(error.Item)) } : { ok: false };
  }
}

type JobUpdate = Omit<UpdateCommandInput, 'TableName' | 'ReturnValues'>;

/**
 * A job update that must land together with counter updates: one transaction, whose
 * job write reports the job as it was when its condition failed. A transaction
 * returns no new image, so a caller that needs the job builds or reads it.
 */
async function conditionalUpdateWith(
  ctx: QueueContext,
  input: JobUpdate,
  extras: TransactItem[],
): Promise<{ ok: true } | { ok: false; current?: Job; failedExtra?: number }> {
  await recordLaneBucket(ctx, input.ExpressionAttributeValues?.[':gsi1pk']);
  const result = await transactWrite(ctx, [
    { Update: { TableName: ctx.settings.tableName, ReturnValuesOnConditionCheckFailure: 'ALL_OLD', ...input } as never },
    ...extras,
  ]);
  if (result.ok) return { ok: true };
  const [jobReason, ...extraReasons] = result.reasons;
  if (jobReason?.code === 'ConditionalCheckFailed') return { ok: false, ...(jobReason.item ? { current: itemToJob(jobReason.item) } : {}) };
  const failedExtra = extraReasons.findIndex((reason) => reason.code === 'ConditionalCheckFailed');
  return { ok: false, ...(failedExtra >= 0 ? { failedExtra } : {}) };
}

/** Index keys as the values `:gsi1pk` and `:gsi1sk` of an update expression, or none. */
function prefixed(keys: { gsi1pk: string; gsi1sk: string } | undefined): Record<string, string> {
  return keys ? { ':gsi1pk': keys.gsi1pk, ':gsi1sk': keys.gsi1sk } : {};
}

export function buildClaimParams(
  ctx: QueueContext,
  ref: Pick<Job, 'type' | 'id'>,
  jobType: Pick<JobType, 'visibilityTimeoutS'>,
  claimToken: string,
  slots?: HeldSlots,
): JobUpdate {
  const nowMs = ctx.nowMs();
  const claimedUntilMs = nowMs + jobType.visibilityTimeoutS * 1000;
  const index = claimIndexKeys(ctx, ref, claimedUntilMs);
  const sets =
    'SET #status = :running, attempt = attempt + :one, claimToken = :token, claimedAtMs = :now, claimedUntilMs = :until, updatedAtMs = :now, gsi1pk = :gsi1pk, gsi1sk = :gsi1sk';
  return {
    Key: jobKey(ref.type, ref.id),
    ConditionExpression:
      '#status = :queued AND runAfterMs <= :now AND attempt < maxAttempts AND (attribute_not_exists(expiresAtMs) OR expiresAtMs > :now)',
    UpdateExpression: slots
      ? `${sets}, heldSlots = :slots REMOVE startedAtMs, worker`
      : `${sets} REMOVE startedAtMs, worker, heldSlots`,
    ExpressionAttributeNames: { '#status': 'status' },
    ExpressionAttributeValues: {
      ':queued': 'queued',
      ':running': 'running',
      ':now': nowMs,
      ':one': 1,
      ':token': claimToken,
      ':until': claimedUntilMs,
      ':gsi1pk': index.gsi1pk,
      ':gsi1sk': index.gsi1sk,
      ...(slots ? { ':slots': slots } : {}),
    },
  };
}

export type ClaimResult =
  | { kind: 'claimed'; job: Job }
  /** Another poller claimed it first, or it is not due (yet) any more. */
  | { kind: 'lost' }
  /** It was due but past its expires_at: archived as expired without running. */
  | { kind: 'expired'; job: Job }
  /** The type's, or the job's throttle key's, in-flight weight has no room for it now. */
  | { kind: 'full'; limit: 'type' | 'key' };

/**
 * Claims a due job. With `slots`, the claim also takes them in the same
 * transaction, and fails as `full` when a counter has no room.
 */
export async function claimJob(
  ctx: QueueContext,
  ref: Pick<Job, 'type' | 'id'>,
  jobType: JobType,
  slots?: HeldSlots,
): Promise<ClaimResult> {
  const claimToken = randomUUID();
  const params = buildClaimParams(ctx, ref, jobType, claimToken, slots);
  let claimed: { ok: true; job?: Job } | { ok: false; current?: Job; failedExtra?: number };
  if (slots) {
    const tooSmall = limitTooSmall(jobType, slots);
    if (tooSmall) return { kind: 'full', limit: tooSmall };
    try {
      claimed = await conditionalUpdateWith(ctx, params, takeSlotItems(ctx, jobType, slots));
    } catch (error) {
      // Conflicts with other pollers' claims did not clear: the job stays queued for the next poll.
      if (error instanceof TransactionCanceledException) return { kind: 'lost' };
      throw error;
    }
    if (!claimed.ok && claimed.failedExtra !== undefined) {
      return { kind: 'full', limit: slots.type && claimed.failedExtra === 0 ? 'type' : 'key' };
    }
  } else {
    claimed = await conditionalUpdate(ctx, params);
  }
  if (claimed.ok) {
    const job = claimed.job ?? (await getJob(ctx, ref.type, ref.id));
    return job?.claimToken === claimToken ? { kind: 'claimed', job } : { kind: 'lost' };
  }
  const current = claimed.current;
  // The SDK retried a claim whose first try was applied but whose answer was lost: the claim is ours.
  if (current?.claimToken === claimToken) return { kind: 'claimed', job: current };
  if (current?.status === 'queued' && current.expiresAtMs !== undefined && current.expiresAtMs <= ctx.nowMs()) {
    const expired = await expireQueuedJob(ctx, current);
    if (expired) return { kind: 'expired', job: expired };
  }
  return { kind: 'lost' };
}

async function expireQueuedJob(ctx: QueueContext, job: Job): Promise<Job | undefined> {
  const nowMs = ctx.nowMs();
  const result = await conditionalUpdate(ctx, {
    Key: jobKey(job.type, job.id),
    ConditionExpression: '#status = :queued AND expiresAtMs <= :now',
    UpdateExpression:
      'SET #status = :expired, updatedAtMs = :now, finishedAtMs = :now, purgeAtS = :purgeAtS, gsi1pk = :gsi1pk, gsi1sk = :gsi1sk',
    ExpressionAttributeNames: { '#status': 'status' },
    ExpressionAttributeValues: {
      ':queued': 'queued',
      ':expired': 'expired',
      ':now': nowMs,
      ':purgeAtS': purgeAtS(ctx, nowMs),
      ...prefixed(finishedIndexKeys(ctx, job, 'expired', nowMs, undefined)),
    },
  });
  if (!result.ok) return undefined;
  await ctx.events.publish([eventForUnstartedJob(result.job, 'job.expired')]);
  return result.job;
}

/** The claim a write must still hold: the token and attempt it was given. */
export type ClaimGuard = Pick<Job, 'type' | 'id' | 'attempt'> & { claimToken: string };

function guardCondition(guard: ClaimGuard): {
  condition: string;
  values: Record<string, unknown>;
} {
  return {
    condition: 'claimToken = :token AND attempt = :attempt AND #status IN (:running, :awaiting)',
    values: {
      ':token': guard.claimToken,
      ':attempt': guard.attempt,
      ':running': 'running',
      ':awaiting': 'awaiting_callback',
    },
  };
}

export function guardOf(job: Job): ClaimGuard {
  if (job.claimToken === undefined) throw new Error(`job ${job.type}/${job.id} holds no claim`);
  return { type: job.type, id: job.id, attempt: job.attempt, claimToken: job.claimToken };
}

/**
 * Records that the attempt has started, once: a second delivery of the same
 * claim (an async invoke delivered twice) finds `startedAtMs` set and must not
 * run the job. Returns false when the job must not start.
 */
export async function markStarted(ctx: QueueContext, job: Job, worker: WorkerIdentity): Promise<boolean> {
  const guard = guardCondition(guardOf(job));
  const startToken = randomUUID();
  const result = await conditionalUpdate(ctx, {
    Key: jobKey(job.type, job.id),
    ConditionExpression: `${guard.condition} AND attribute_not_exists(startedAtMs)`,
    UpdateExpression: 'SET startedAtMs = :now, worker = :worker, startToken = :startToken, updatedAtMs = :now',
    ExpressionAttributeNames: { '#status': 'status' },
    ExpressionAttributeValues: { ...guard.values, ':now': ctx.nowMs(), ':worker': worker, ':startToken': startToken },
    ReturnValues: 'NONE',
  });
  // A retried write whose first try was applied finds its own start token: this delivery is the one that started.
  return result.ok || result.current?.startToken === startToken;
}

/** Moves the claim's deadline to `claimedUntilMs` (never earlier than it is); false when the claim is no longer held. */
export async function extendClaim(
  ctx: QueueContext,
  guardJob: ClaimGuard,
  claimedUntilMs: number,
): Promise<Job | undefined> {
  const guard = guardCondition(guardJob);
  const index = claimIndexKeys(ctx, guardJob, claimedUntilMs);
  const result = await conditionalUpdate(ctx, {
    Key: jobKey(guardJob.type, guardJob.id),
    ConditionExpression: `${guard.condition} AND claimedUntilMs < :until`,
    UpdateExpression: 'SET claimedUntilMs = :until, updatedAtMs = :now, gsi1pk = :gsi1pk, gsi1sk = :gsi1sk',
    ExpressionAttributeNames: { '#status': 'status' },
    ExpressionAttributeValues: {
      ...guard.values,
      ':until': claimedUntilMs,
      ':now': ctx.nowMs(),
      ':gsi1pk': index.gsi1pk,
      ':gsi1sk': index.gsi1sk,
    },
  });
  if (result.ok) return result.job;
  const current = result.current;
  const stillHeld = current?.claimToken === guardJob.claimToken && current.attempt === guardJob.attempt;
  return stillHeld && (current.status === 'running' || current.status === 'awaiting_callback') ? current : undefined;
}

/** The attempt now waits for a callback until `timeoutS` from now; the sweeper times it out after that. */
export async function deferAttempt(
  ctx: QueueContext,
  job: Job,
  jobType: Pick<JobType, 'timeoutS'>,
  started: { startedAtMs: number; worker: WorkerIdentity },
): Promise<Job | undefined> {
  const guard = guardCondition(guardOf(job));
  const nowMs = ctx.nowMs();
  const claimedUntilMs = nowMs + jobType.timeoutS * 1000;
  const index = claimIndexKeys(ctx, job, claimedUntilMs);
  const result = await conditionalUpdate(ctx, {
    Key: jobKey(job.type, job.id),
    ConditionExpression: guard.condition,
    UpdateExpression:
      'SET #status = :awaiting, startedAtMs = :startedAt, worker = :worker, claimedUntilMs = :until, updatedAtMs = :now, gsi1pk = :gsi1pk, gsi1sk = :gsi1sk',
    ExpressionAttributeNames: { '#status': 'status' },
    ExpressionAttributeValues: {
      ...guard.values,
      ':startedAt': started.startedAtMs,
      ':worker': started.worker,
      ':until': claimedUntilMs,
      ':now': nowMs,
      ':gsi1pk': index.gsi1pk,
      ':gsi1sk': index.gsi1sk,
    },
  });
  return result.ok ? result.job : undefined;
}

/**
 * Hands a claim back untouched when the job was never handed to a worker
 * (dispatch failed), or reached it outside its time windows (due again at
 * `runAfterMs`): the attempt did not happen, so it is not counted.
 */
export async function releaseClaim(ctx: QueueContext, job: Job, runAfterMs = job.runAfterMs): Promise<boolean> {
  const guard = guardCondition(guardOf(job));
  const index = queuedIndexKeys(ctx, job, runAfterMs);
  const update: JobUpdate = {
    Key: jobKey(job.type, job.id),
    ConditionExpression: `${guard.condition} AND attribute_not_exists(startedAtMs)`,
    UpdateExpression:
      'SET #status = :queued, attempt = attempt - :one, runAfterMs = :runAfter, updatedAtMs = :now, gsi1pk = :gsi1pk, gsi1sk = :gsi1sk REMOVE claimToken, claimedAtMs, claimedUntilMs, heldSlots',
    ExpressionAttributeNames: { '#status': 'status' },
    ExpressionAttributeValues: {
      ...guard.values,
      ':queued': 'queued',
      ':one': 1,
      ':runAfter': runAfterMs,
      ':now': ctx.nowMs(),
      ':gsi1pk': index.gsi1pk,
      ':gsi1sk': index.gsi1sk,
    },
  };
  const slotReturns = returnSlotItems(ctx, job);
  const result = slotReturns.length > 0 ? await conditionalUpdateWith(ctx, update, slotReturns) : await conditionalUpdate(ctx, update);
  return result.ok;
}

/** How an attempt ended, as the worker, a callback or the sweeper saw it. */
export type AttemptEnding =
  | { outcome: 'succeeded'; result?: unknown }
  | { outcome: 'failed' | 'timed_out'; failure: AttemptFailure }
  | { outcome: 'expired' };

export interface EndAttemptOptions {
  ending: AttemptEnding;
  jobType: Pick<JobType, 'retry' | 'timeWindows' | 'listSucceeded'>;
  customPolicies: CustomRetryPolicies;
  startedAtMs?: number;
  worker?: WorkerIdentity;
  /** The sweeper ends only the claim it saw expire, not one a heartbeat has since extended. */
  expectedClaimedUntilMs?: number;
}

function truncate(text: string, maxChars: number): string {
  return text.length > maxChars ? `${text.slice(0, maxChars)}…` : text;
}

function boundedError(error: AttemptError): AttemptError {
  return {
    class: truncate(error.class, 128),
    message: truncate(error.message, MAX_ERROR_MESSAGE_CHARS),
    ...(error.trace ? { trace: truncate(error.trace, MAX_TRACE_CHARS) } : {}),
  };
}

/** The history with this attempt appended, capped at the last HISTORY_LIMIT entries. */
export function appendHistory(
  job: Pick<Job, 'history' | 'historyDropped'>,
  record: AttemptRecord,
): { history: AttemptRecord[]; historyDropped: number } {
  const all = [...job.history, record];
  const overflow = Math.max(0, all.length - HISTORY_LIMIT);
  return { history: all.slice(overflow), historyDropped: job.historyDropped + overflow };
}

/** Where the job goes once an attempt ends: a terminal status, or queued again for a retry. */
export type NextState =
  | { status: 'succeeded' | 'failed' | 'expired'; outcome: AttemptOutcome }
  | { status: 'queued'; outcome: AttemptOutcome; runAfterMs: number };

export function planNextState(ctx: QueueContext, job: Job, options: EndAttemptOptions): NextState {
  const { ending } = options;
  if (ending.outcome === 'succeeded') return { status: 'succeeded', outcome: 'succeeded' };
  if (ending.outcome === 'expired') return { status: 'expired', outcome: 'expired' };
  const decision = decideRetry({
    policy: options.jobType.retry,
    job,
    failure: ending.failure,
    random: ctx.random,
    customPolicies: options.customPolicies,
  });
  if (!decision.retry) return { status: 'failed', outcome: ending.outcome };
  const runAfterMs = earliestStartMs(effectiveWindows(job, options.jobType), ctx.nowMs() + decision.delayMs);
  if (job.expiresAtMs !== undefined && runAfterMs >= job.expiresAtMs) return { status: 'expired', outcome: ending.outcome };
  return { status: 'queued', outcome: ending.outcome, runAfterMs };
}

/**
 * Ends the attempt the guard names: records it in the history and moves the job
 * to its next state, then publishes its lifecycle events. Returns undefined when
 * the claim is no longer held (a stale worker, callback or sweep), in which case
 * nothing changed and nothing is published.
 */
export async function endAttempt(
  ctx: QueueContext,
  job: Job,
  options: EndAttemptOptions,
): Promise<{ job: Job; next: NextState } | undefined> {
  const guard = guardCondition(guardOf(job));
  const nowMs = ctx.nowMs();
  const next = planNextState(ctx, job, options);
  const { ending } = options;
  const worker = options.worker ?? job.worker;
  const record: AttemptRecord = {
    attempt: job.attempt,
    claimedAtMs: job.claimedAtMs ?? nowMs,
    startedAtMs: options.startedAtMs ?? job.startedAtMs ?? null,
    endedAtMs: nowMs,
    outcome: next.outcome,
    ...(ending.outcome === 'failed' || ending.outcome === 'timed_out'
      ? { error: boundedError(ending.failure.error) }
      : {}),
    ...(worker ? { worker } : {}),
  };
  const { history, historyDropped } = appendHistory(job, record);
  const values: Record<string, unknown> = {
    ...guard.values,
    ':status': next.status,
    ':now': nowMs,
    ':history': history,
    ':dropped': historyDropped,
  };
  const sets = ['#status = :status', 'updatedAtMs = :now', 'history = :history', 'historyDropped = :dropped'];
  const removes = ['claimToken', 'claimedAtMs', 'claimedUntilMs', 'startedAtMs', 'startToken', 'worker', 'heldSlots'];
  if (next.status === 'queued') {
    const index = queuedIndexKeys(ctx, job, next.runAfterMs);
    sets.push('runAfterMs = :runAfter', 'gsi1pk = :gsi1pk', 'gsi1sk = :gsi1sk');
    Object.assign(values, { ':runAfter': next.runAfterMs, ':gsi1pk': index.gsi1pk, ':gsi1sk': index.gsi1sk });
  } else {
    sets.push('finishedAtMs = :now', 'purgeAtS = :purgeAtS');
    values[':purgeAtS'] = purgeAtS(ctx, nowMs);
    const finished = finishedIndexKeys(ctx, job, next.status, nowMs, options.jobType);
    if (finished) {
      sets.push('gsi1pk = :gsi1pk', 'gsi1sk = :gsi1sk');
      Object.assign(values, prefixed(finished));
    } else {
      removes.push('gsi1pk', 'gsi1sk');
    }
    if (ending.outcome === 'succeeded' && ending.result !== undefined) {
      sets.push('resultJson = :resultJson');
      values[':resultJson'] = JSON.stringify(ending.result);
    }
  }
  let condition = guard.condition;
  if (options.expectedClaimedUntilMs !== undefined) {
    condition += ' AND claimedUntilMs = :seenUntil';
    values[':seenUntil'] = options.expectedClaimedUntilMs;
  }
  const update: JobUpdate = {
    Key: jobKey(job.type, job.id),
    ConditionExpression: condition,
    UpdateExpression: `SET ${sets.join(', ')} REMOVE ${removes.join(', ')}`,
    ExpressionAttributeNames: { '#status': 'status' },
    ExpressionAttributeValues: values,
  };
  const slotReturns = returnSlotItems(ctx, job);
  let ended: Job;
  if (slotReturns.length > 0) {
    const result = await conditionalUpdateWith(ctx, update, slotReturns);
    if (!result.ok) return undefined;
    ended = jobAfterEnd(job, next, { nowMs, history, historyDropped, ending });
  } else {
    const result = await conditionalUpdate(ctx, update);
    if (!result.ok) return undefined;
    ended = result.job;
  }
  await ctx.events.publish(eventsForEndedAttempt(ended, ending, next));
  return { job: ended, next };
}

/** The job as `endAttempt` leaves it, for the transaction path, which gets no new image back. */
function jobAfterEnd(
  job: Job,
  next: NextState,
  written: { nowMs: number; history: AttemptRecord[]; historyDropped: number; ending: AttemptEnding },
): Job {
  const {
    claimToken: _claimToken,
    claimedAtMs: _claimedAtMs,
    claimedUntilMs: _claimedUntilMs,
    startedAtMs: _startedAtMs,
    startToken: _startToken,
    worker: _worker,
    heldSlots: _heldSlots,
    ...unclaimed
  } = job;
  const ended: Job = {
    ...unclaimed,
    status: next.status,
    updatedAtMs: written.nowMs,
    history: written.history,
    historyDropped: written.historyDropped,
  };
  if (next.status === 'queued') return { ...ended, runAfterMs: next.runAfterMs };
  const result = written.ending.outcome === 'succeeded' ? written.ending.result : undefined;
  return { ...ended, finishedAtMs: written.nowMs, ...(result !== undefined ? { result } : {}) };
}
