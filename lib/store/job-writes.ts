/**
 * Every write of a job's life, as pure builders of the command input (the time,
 * tokens and index keys come in as arguments), and the two ways a job update is
 * sent: alone, or in one transaction with the counter updates that must land
 * with it. Every write after the claim is guarded by the claim token and the
 * attempt number, so a stale worker, callback or sweep changes nothing.
 */
import { jobAfterEnd, type AttemptEnd, type ClaimGuard } from '../domain/attempts.js';
import { CHANGES_LIMIT, type HeldSlots, type Job, type JobChangeRecord, type WorkerIdentity } from '../domain/job.js';
import { DYNAMODB_ITEM_LIMIT_BYTES, dynamoItemBytes } from '../domain/json-size.js';
import { MAX_PROGRESS_BYTES } from '../domain/progress.js';
import { itemToJob, jobToItem } from './items.js';
import { jobKey, type IndexKey } from './keys.js';
import {
  putItem,
  updateItem,
  type Item,
  type PutParams,
  type StoreContext,
  type UpdateParams,
} from './send.js';

type JobRef = Pick<Job, 'type' | 'id'>;

const STATUS_NAME = { '#status': 'status' };

function indexValues(keys: IndexKey): Record<string, string> {
  return { ':gsi1pk': keys.gsi1pk, ':gsi1sk': keys.gsi1sk };
}

/** A new job, written only where no job of its (type, id) exists; a refusal returns the one that does. */
export function newJobParams(item: Item): PutParams {
  return { Item: item, ConditionExpression: 'attribute_not_exists(pk)', ReturnValuesOnConditionCheckFailure: 'ALL_OLD' };
}

/**
 * Folds an enqueue into a waiting debounced job: its data replaced, due at `runAfterMs` (`index`: its entry there;
 * undefined: the entry stays), one more enqueue counted. Only while it is still queued and was never claimed to run:
 * a claim landing first fails the condition. Folds racing each other both land, the last one's data and time kept:
 * either is the latest enqueue, and moving the entry without the one read is safe because a claim checks the
 * job's own run_after, never the entry's.
 */
export function foldIntoDebouncedJobParams(
  ref: JobRef,
  fold: { nowMs: number; dataJson: string; runAfterMs: number; index: IndexKey | undefined },
): UpdateParams {
  const sets = ['dataJson = :data', 'runAfterMs = :runAfter', 'updatedAtMs = :now'];
  return {
    Key: jobKey(ref.type, ref.id),
    ConditionExpression: '#status = :queued AND attempt = :zero',
    UpdateExpression: `SET ${[...sets, ...(fold.index ? ['gsi1pk = :gsi1pk', 'gsi1sk = :gsi1sk'] : [])].join(', ')} ADD debounceCount :one`,
    ExpressionAttributeNames: STATUS_NAME,
    ExpressionAttributeValues: {
      ':queued': 'queued',
      ':zero': 0,
      ':one': 1,
      ':data': fold.dataJson,
      ':runAfter': fold.runAfterMs,
      ':now': fold.nowMs,
      ...(fold.index ? indexValues(fold.index) : {}),
    },
  };
}

/** Claims a due job: running, its attempt counted, its claim lane entry due at `claimedUntilMs`. */
export function claimParams(
  ref: JobRef,
  claim: { claimToken: string; nowMs: number; claimedUntilMs: number; index: IndexKey; slots?: HeldSlots | undefined },
): UpdateParams {
  const { slots } = claim;
  const sets =
    'SET #status = :running, attempt = attempt + :one, claimToken = :token, claimedAtMs = :now, claimedUntilMs = :until, updatedAtMs = :now, gsi1pk = :gsi1pk, gsi1sk = :gsi1sk';
  return {
    Key: jobKey(ref.type, ref.id),
    ConditionExpression:
      '#status = :queued AND runAfterMs <= :now AND attempt < maxAttempts AND (attribute_not_exists(expiresAtMs) OR expiresAtMs > :now)',
    UpdateExpression: slots ? `${sets}, heldSlots = :slots REMOVE startedAtMs, worker` : `${sets} REMOVE startedAtMs, worker, heldSlots`,
    ExpressionAttributeNames: STATUS_NAME,
    ExpressionAttributeValues: {
      ':queued': 'queued',
      ':running': 'running',
      ':now': claim.nowMs,
      ':one': 1,
      ':token': claim.claimToken,
      ':until': claim.claimedUntilMs,
      ...indexValues(claim.index),
      ...(slots ? { ':slots': slots } : {}),
    },
  };
}

/** Ends a job whose expires_at passed while it waited, without an attempt. */
export function expireQueuedParams(ref: JobRef, nowMs: number, purgeAtS: number, finished: IndexKey): UpdateParams {
  return {
    Key: jobKey(ref.type, ref.id),
    ConditionExpression: '#status = :queued AND expiresAtMs <= :now',
    UpdateExpression:
      'SET #status = :expired, updatedAtMs = :now, finishedAtMs = :now, purgeAtS = :purgeAtS, gsi1pk = :gsi1pk, gsi1sk = :gsi1sk',
    ExpressionAttributeNames: STATUS_NAME,
    ExpressionAttributeValues: { ':queued': 'queued', ':expired': 'expired', ':now': nowMs, ':purgeAtS': purgeAtS, ...indexValues(finished) },
  };
}

/** Cancels a job that has not started. */
export function cancelParams(ref: JobRef, nowMs: number, purgeAtS: number, finished: IndexKey, cancelledBy?: string): UpdateParams {
  return {
    Key: jobKey(ref.type, ref.id),
    ConditionExpression: '#status = :queued',
    UpdateExpression: `SET #status = :cancelled, updatedAtMs = :now, finishedAtMs = :now, purgeAtS = :purgeAtS, gsi1pk = :gsi1pk, gsi1sk = :gsi1sk${
      cancelledBy !== undefined ? ', cancelledBy = :by' : ''
    }`,
    ExpressionAttributeNames: STATUS_NAME,
    ExpressionAttributeValues: {
      ':queued': 'queued',
      ':cancelled': 'cancelled',
      ':now': nowMs,
      ':purgeAtS': purgeAtS,
      ...indexValues(finished),
      ...(cancelledBy !== undefined ? { ':by': cancelledBy } : {}),
    },
  };
}

/** Moves a waiting job's entry from `fromPartition` (behind a cursor) to `index`. */
export function requeueStragglerParams(ref: JobRef, fromPartition: string, index: IndexKey): UpdateParams {
  return {
    Key: jobKey(ref.type, ref.id),
    ConditionExpression: '#status = :queued AND gsi1pk = :old',
    UpdateExpression: 'SET gsi1pk = :gsi1pk, gsi1sk = :gsi1sk',
    ExpressionAttributeNames: STATUS_NAME,
    ExpressionAttributeValues: { ':queued': 'queued', ':old': fromPartition, ...indexValues(index) },
  };
}

const GUARD_CONDITION = 'claimToken = :token AND attempt = :attempt AND #status IN (:running, :awaiting)';
/**
 * Once a cancel of the running attempt was asked, the attempt may only end cancelled: a write that would start
 * it, hand it back, defer it or end it otherwise fails on this, and its writer ends it cancelled instead.
 */
const NO_CANCEL_ASKED = 'attribute_not_exists(cancelRequestedAtMs)';

function guardValues(guard: ClaimGuard): Record<string, unknown> {
  return { ':token': guard.claimToken, ':attempt': guard.attempt, ':running': 'running', ':awaiting': 'awaiting_callback' };
}

/** Records the attempt's start once: a second delivery of the same claim finds `startedAtMs` set. */
export function markStartedParams(guard: ClaimGuard, nowMs: number, worker: WorkerIdentity, startToken: string): UpdateParams {
  return {
    Key: jobKey(guard.type, guard.id),
    ConditionExpression: `${GUARD_CONDITION} AND attribute_not_exists(startedAtMs) AND ${NO_CANCEL_ASKED}`,
    UpdateExpression: 'SET startedAtMs = :now, worker = :worker, startToken = :startToken, updatedAtMs = :now',
    ExpressionAttributeNames: STATUS_NAME,
    ExpressionAttributeValues: { ...guardValues(guard), ':now': nowMs, ':worker': worker, ':startToken': startToken },
    ReturnValues: 'NONE',
  };
}

/**
 * Asks the running attempt the guard names to stop: the job ends cancelled by whoever ends the attempt (its
 * worker, which learns of it from the start record, or the sweeper once the claim lapses). Fails when the
 * attempt is not running, or a cancel was asked already.
 */
export function requestCancelParams(guard: ClaimGuard, nowMs: number, cancelledBy?: string): UpdateParams {
  return {
    Key: jobKey(guard.type, guard.id),
    ConditionExpression: `claimToken = :token AND attempt = :attempt AND #status = :running AND ${NO_CANCEL_ASKED}`,
    UpdateExpression: `SET cancelRequestedAtMs = :now, updatedAtMs = :now${cancelledBy !== undefined ? ', cancelledBy = :by' : ''}`,
    ExpressionAttributeNames: STATUS_NAME,
    ExpressionAttributeValues: {
      ':token': guard.claimToken,
      ':attempt': guard.attempt,
      ':running': 'running',
      ':now': nowMs,
      ...(cancelledBy !== undefined ? { ':by': cancelledBy } : {}),
    },
  };
}

/** Moves the claim's deadline to `claimedUntilMs`, never earlier than it is; with `progressJson`, records that report too. */
export function extendClaimParams(guard: ClaimGuard, nowMs: number, claimedUntilMs: number, index: IndexKey, progressJson?: string): UpdateParams {
  return {
    Key: jobKey(guard.type, guard.id),
    ConditionExpression: `${GUARD_CONDITION} AND claimedUntilMs < :until`,
    UpdateExpression: `SET claimedUntilMs = :until, updatedAtMs = :now, gsi1pk = :gsi1pk, gsi1sk = :gsi1sk${progressJson === undefined ? '' : ', progressJson = :progress'}`,
    ExpressionAttributeNames: STATUS_NAME,
    ExpressionAttributeValues: {
      ...guardValues(guard),
      ':until': claimedUntilMs,
      ':now': nowMs,
      ...indexValues(index),
      ...(progressJson === undefined ? {} : { ':progress': progressJson }),
    },
  };
}

/** Records the attempt's progress report while the claim is held, its deadline untouched. */
export function recordProgressParams(guard: ClaimGuard, nowMs: number, progressJson: string): UpdateParams {
  return {
    Key: jobKey(guard.type, guard.id),
    ConditionExpression: GUARD_CONDITION,
    UpdateExpression: 'SET progressJson = :progress, updatedAtMs = :now',
    ExpressionAttributeNames: STATUS_NAME,
    ExpressionAttributeValues: { ...guardValues(guard), ':progress': progressJson, ':now': nowMs },
  };
}

/** The attempt waits for a callback until `claimedUntilMs`. */
export function deferParams(
  guard: ClaimGuard,
  deferral: { nowMs: number; claimedUntilMs: number; index: IndexKey; startedAtMs: number; worker: WorkerIdentity },
): UpdateParams {
  return {
    Key: jobKey(guard.type, guard.id),
    ConditionExpression: `${GUARD_CONDITION} AND ${NO_CANCEL_ASKED}`,
    UpdateExpression:
      'SET #status = :awaiting, startedAtMs = :startedAt, worker = :worker, claimedUntilMs = :until, updatedAtMs = :now, gsi1pk = :gsi1pk, gsi1sk = :gsi1sk',
    ExpressionAttributeNames: STATUS_NAME,
    ExpressionAttributeValues: {
      ...guardValues(guard),
      ':startedAt': deferral.startedAtMs,
      ':worker': deferral.worker,
      ':until': deferral.claimedUntilMs,
      ':now': deferral.nowMs,
      ...indexValues(deferral.index),
    },
  };
}

/**
 * Hands an unstarted claim back: queued again, due at `runAfterMs`, the attempt not counted. With
 * `expectedClaimedUntilMs` (the sweeper's, for a claim it found lapsed), only while the claim was not renewed since:
 * a worker that renewed it has taken it up.
 */
export function releaseClaimParams(guard: ClaimGuard, nowMs: number, runAfterMs: number, index: IndexKey, expectedClaimedUntilMs?: number): UpdateParams {
  const seen = expectedClaimedUntilMs === undefined ? {} : { ':seenUntil': expectedClaimedUntilMs };
  return {
    Key: jobKey(guard.type, guard.id),
    ConditionExpression: `${GUARD_CONDITION} AND attribute_not_exists(startedAtMs) AND ${NO_CANCEL_ASKED}${expectedClaimedUntilMs === undefined ? '' : ' AND claimedUntilMs = :seenUntil'}`,
    UpdateExpression:
      'SET #status = :queued, attempt = attempt - :one, runAfterMs = :runAfter, updatedAtMs = :now, gsi1pk = :gsi1pk, gsi1sk = :gsi1sk REMOVE claimToken, claimedAtMs, claimedUntilMs, heldSlots',
    ExpressionAttributeNames: STATUS_NAME,
    ExpressionAttributeValues: { ...guardValues(guard), ':queued': 'queued', ':one': 1, ':runAfter': runAfterMs, ':now': nowMs, ...indexValues(index), ...seen },
  };
}

/**
 * Ends the attempt: its history, its next status, and the index entry that status takes (`index`: the lane
 * entry of a retry or the listing entry of a finish; absent: none).
 */
export function endAttemptParams(
  guard: ClaimGuard,
  end: AttemptEnd & { index: IndexKey | undefined; purgeAtS: number; expectedClaimedUntilMs?: number | undefined; endToken: string },
): UpdateParams {
  const { next, ending } = end;
  const values: Record<string, unknown> = {
    ...guardValues(guard),
    ':status': next.status,
    ':now': end.endedAtMs,
    ':history': end.history,
    ':dropped': end.historyDropped,
    ':endToken': end.endToken,
  };
  const sets = ['#status = :status', 'updatedAtMs = :now', 'history = :history', 'historyDropped = :dropped', 'endToken = :endToken'];
  const removes = ['claimToken', 'claimedAtMs', 'claimedUntilMs', 'startedAtMs', 'startToken', 'worker', 'heldSlots', 'cancelRequestedAtMs'];
  if (next.status === 'queued') {
    sets.push('runAfterMs = :runAfter');
    values[':runAfter'] = next.runAfterMs;
  } else {
    sets.push('finishedAtMs = :now', 'purgeAtS = :purgeAtS');
    values[':purgeAtS'] = end.purgeAtS;
    if (ending.outcome === 'succeeded' && ending.result !== undefined) {
      sets.push('resultJson = :resultJson');
      values[':resultJson'] = JSON.stringify(ending.result);
    }
    if (ending.outcome === 'cancelled' && ending.by !== undefined) {
      sets.push('cancelledBy = :by');
      values[':by'] = ending.by;
    }
  }
  if (end.index) {
    sets.push('gsi1pk = :gsi1pk', 'gsi1sk = :gsi1sk');
    Object.assign(values, indexValues(end.index));
  } else {
    removes.push('gsi1pk', 'gsi1sk');
  }
  let condition = next.status === 'cancelled' ? GUARD_CONDITION : `${GUARD_CONDITION} AND ${NO_CANCEL_ASKED}`;
  if (end.expectedClaimedUntilMs !== undefined) {
    condition += ' AND claimedUntilMs = :seenUntil';
    values[':seenUntil'] = end.expectedClaimedUntilMs;
  }
  return {
    Key: jobKey(guard.type, guard.id),
    ConditionExpression: condition,
    UpdateExpression: `SET ${sets.join(', ')} REMOVE ${removes.join(', ')}`,
    ExpressionAttributeNames: STATUS_NAME,
    ExpressionAttributeValues: values,
  };
}

/**
 * What a job item may hold: DynamoDB's 400 KB less a margin for what this count may miss. Every write keeps the
 * item within it; the end of an attempt, the one write that grows the item by more than a fixed amount (its
 * history entry and result), does so by keeping only the newest history entries that fit.
 */
export const JOB_ITEM_BUDGET_BYTES = DYNAMODB_ITEM_LIMIT_BYTES - 16 * 1024;

const LARGEST_NUMBER = Number.MAX_SAFE_INTEGER;

/** The largest change a `PATCH` records: every field changed, each number at its longest. */
const LARGEST_CHANGE: JobChangeRecord = {
  atMs: LARGEST_NUMBER,
  by: 'f'.repeat(64),
  runAfterMs: { from: LARGEST_NUMBER, to: LARGEST_NUMBER },
  priority: { from: LARGEST_NUMBER, to: LARGEST_NUMBER },
  expiresAtMs: { from: LARGEST_NUMBER, to: LARGEST_NUMBER },
};

/**
 * The largest claim and what rides on it, beyond what an ended job holds: tokens and times, the worker's id and
 * host name, the held slots with a throttle key of 128 characters of 3 bytes, the index entry of a type and id at
 * their longest, the TTL and who cancelled it.
 */
const LARGEST_CLAIM = {
  claimToken: 'c'.repeat(36),
  claimedAtMs: LARGEST_NUMBER,
  claimedUntilMs: LARGEST_NUMBER,
  startedAtMs: LARGEST_NUMBER,
  startToken: 's'.repeat(36),
  worker: { id: 'w'.repeat(64), host: 'h'.repeat(255) },
  heldSlots: { weight: LARGEST_NUMBER, type: true, key: '€'.repeat(128), typeEpoch: LARGEST_NUMBER, keyEpoch: LARGEST_NUMBER },
  gsi1pk: 'p'.repeat(128),
  gsi1sk: 's'.repeat(256),
  purgeAtS: LARGEST_NUMBER,
  cancelledBy: 'f'.repeat(64),
  cancelRequestedAtMs: LARGEST_NUMBER,
};

/**
 * What writes after an attempt's end may add to the item without trimming anything, so its end leaves room
 * for them: a progress report at its cap (kept with its attempt and time, a few dozen bytes more), CHANGES_LIMIT
 * changes of the largest kind with their count, and the next claim.
 */
export const LATER_WRITES_ROOM_BYTES =
  dynamoItemBytes({ progressJson: 'p'.repeat(MAX_PROGRESS_BYTES + 64) }) +
  dynamoItemBytes({ changes: Array.from({ length: CHANGES_LIMIT }, () => LARGEST_CHANGE), changeCount: LARGEST_NUMBER }) +
  dynamoItemBytes(LARGEST_CLAIM);

/**
 * How many bytes the history may take when `end` is written: the budget less everything else the item holds
 * after it (its result included) and the room later writes need.
 */
export function historyRoomBytes(job: Job, end: Omit<AttemptEnd, 'history' | 'historyDropped'>): number {
  const after = jobAfterEnd(job, { ...end, history: [], historyDropped: LARGEST_NUMBER });
  // Reports and changes are counted at their largest, in the room above, whatever the job holds now.
  const { progress: _progress, changes: _changes, ...rest } = after;
  return JOB_ITEM_BUDGET_BYTES - LATER_WRITES_ROOM_BYTES - dynamoItemBytes({ ...jobKey(job.type, job.id), ...jobToItem(rest) });
}

export type JobWriteResult = { ok: true; job: Job } | { ok: false; current?: Job };

/** A conditional job update, answering the job as it is after, or as it was when the condition failed. */
export async function updateJob(ctx: StoreContext, params: UpdateParams): Promise<JobWriteResult> {
  const result = await updateItem(ctx, { ReturnValues: 'ALL_NEW', ReturnValuesOnConditionCheckFailure: 'ALL_OLD', ...params });
  if (result.ok) return { ok: true, job: itemToJob(result.item ?? {}) };
  return result.current ? { ok: false, current: itemToJob(result.current) } : { ok: false };
}

/** Writes a new job; a refusal answers the job stored under its (type, id). */
export async function putNewJob(ctx: StoreContext, item: Item): Promise<{ ok: true } | { ok: false; existing?: Item }> {
  const result = await putItem(ctx, newJobParams(item));
  if (result.ok) return { ok: true };
  return result.current ? { ok: false, existing: result.current } : { ok: false };
}
