/** Enqueue, read, cancel and replay: the producer's side of the job store. */
import { createHash, randomUUID } from 'node:crypto';
import { ConditionalCheckFailedException, TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import stringify from 'safe-stable-stringify';
import { monotonicFactory } from 'ulid';
import type { QueueContext } from './context.js';
import { ConflictError, NotFoundError, PayloadTooLargeError } from '../domain/errors.js';
import { ValidationError } from '../domain/errors.js';
import { eventForUnstartedJob } from '../domain/lifecycle-events.js';
import { itemToJob, jobToItem, unmarshallItem } from '../store/items.js';
import { transactWrite, type TransactionResult } from '../store/transactions.js';
import { recordLaneBucket } from './directory.js';
import { bucketOf, correlationItemKey, finishedPartition, finishedSortKey, jobKey, lanePartition, queuedSortKey, shardOf } from '../store/keys.js';
import { isTerminal, MAX_DATA_BYTES, type JobInput } from '../domain/model.js';
import type { Job, JobStatus, JobType } from '../domain/model.js';
import { earliestStartMs, effectiveWindows } from '../domain/windows.js';

const ulid = monotonicFactory();

/** A server-assigned id: time-ordered, so ids sort by creation. */
export function newJobId(nowMs: number): string {
  return `job_${ulid(nowMs).toLowerCase()}`;
}

/** The due-index keys of a job waiting to run at `runAfterMs`; a job due in the past lands in the current bucket, never behind the cursor. */
export function queuedIndexKeys(
  ctx: QueueContext,
  job: Pick<Job, 'type' | 'id'>,
  runAfterMs: number,
): { gsi1pk: string; gsi1sk: string } {
  const { bucketMs, shards } = ctx.settings;
  const bucket = bucketOf(Math.max(runAfterMs, ctx.nowMs()), bucketMs);
  return {
    gsi1pk: lanePartition({ kind: 'queued', type: job.type }, bucket, shardOf(job.id, shards)),
    gsi1sk: queuedSortKey(runAfterMs, job.id),
  };
}

/**
 * The index keys a job takes when it finishes: its status's listing partition, or none for a success of a type
 * that does not list them (removing an entry costs a write unit less than moving it).
 */
export function finishedIndexKeys(
  ctx: QueueContext,
  job: Pick<Job, 'type' | 'id'>,
  status: JobStatus,
  finishedAtMs: number,
  jobType: Pick<JobType, 'listSucceeded'> | undefined,
): { gsi1pk: string; gsi1sk: string } | undefined {
  if (status === 'succeeded' && !jobType?.listSucceeded) return undefined;
  return {
    gsi1pk: finishedPartition(job.type, status, shardOf(job.id, ctx.settings.shards)),
    gsi1sk: finishedSortKey(finishedAtMs, job.id),
  };
}

export function purgeAtS(ctx: QueueContext, finishedAtMs: number): number {
  return Math.floor(finishedAtMs / 1000) + ctx.settings.retentionDays * 86_400;
}

function requestHashOf(input: JobInput): string {
  const normalised = stringify({
    data: input.data,
    runAfterMs: input.runAfterMs ?? null,
    expiresAtMs: input.expiresAtMs ?? null,
    priority: input.priority,
    weight: input.weight,
    ...(input.throttleKey !== undefined ? { throttleKey: input.throttleKey } : {}),
    // Only when given, so the hashes of jobs stored before windows existed still match their bodies.
    ...(input.timeWindows ? { timeWindows: input.timeWindows } : {}),
    // Only when given, so the hashes of jobs stored before correlation keys existed stay the same.
    ...(input.correlationKey !== undefined ? { correlationKey: input.correlationKey } : {}),
  });
  return createHash('sha256').update(normalised ?? '').digest('base64url');
}

export function jsonBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value) ?? '', 'utf8');
}

/** A PayloadTooLargeError naming `field` when `value` serialises to more than `maxBytes`. */
export function assertJsonSize(field: string, value: unknown, maxBytes: number): void {
  const bytes = jsonBytes(value);
  if (bytes > maxBytes) throw new PayloadTooLargeError(field, `${field} is ${bytes} bytes; the limit is ${maxBytes}`);
}

/**
 * The throttle key a job runs under: its own, or the value at the type's `key_field` in its data when that is
 * a string, number or boolean. A job without one counts only against the type's concurrency.
 */
export function throttleKeyOf(jobType: Pick<JobType, 'throttle'>, input: Pick<JobInput, 'throttleKey' | 'data'>): string | undefined {
  if (input.throttleKey !== undefined) return input.throttleKey;
  const keyField = jobType.throttle?.keyField;
  if (keyField === undefined) return undefined;
  let value: unknown = input.data;
  for (const name of keyField.split('.')) {
    value = typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>)[name] : undefined;
  }
  if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean') return undefined;
  const key = String(value);
  // Keys index counters in the table: a value no producer could give as throttle_key is no key.
  return key.length >= 1 && key.length <= 128 ? key : undefined;
}

/** A weight above the type's concurrency could never be claimed. */
function assertWeightFits(jobType: Pick<JobType, 'concurrency'>, weight: number): void {
  if (jobType.concurrency !== null && jobType.concurrency > 0 && weight > jobType.concurrency) {
    throw new ValidationError([{ field: 'weight', message: `must not exceed the type's concurrency (${jobType.concurrency})` }]);
  }
}

/**
 * Enqueues a job, idempotent on (type, id): the same body again returns the
 * stored job with `created: false`; a different body is a ConflictError, and
 * so is a correlation key another unfinished job holds. The job is due at the
 * first instant inside its time windows at or after the requested `run_after`
 * (or now).
 */
export async function enqueueJob(
  ctx: QueueContext,
  jobType: JobType,
  id: string,
  input: JobInput,
): Promise<{ job: Job; created: boolean }> {
  assertJsonSize('data', input.data, MAX_DATA_BYTES);
  assertWeightFits(jobType, input.weight);
  const nowMs = ctx.nowMs();
  const windows = effectiveWindows(input, jobType);
  const runAfterMs = earliestStartMs(windows, input.runAfterMs ?? nowMs);
  if (windows && input.expiresAtMs !== undefined && input.expiresAtMs <= runAfterMs) {
    const opensAt = new Date(runAfterMs).toISOString();
    throw new ValidationError([{ field: 'expires_at', message: `must be after ${opensAt}, when the job's time windows first let it run` }]);
  }
  const throttleKey = throttleKeyOf(jobType, input);
  const job: Job = {
    type: jobType.name,
    id,
    status: 'queued',
    data: input.data,
    attempt: 0,
    maxAttempts: jobType.attempts,
    deliveryStrategy: jobType.deliveryStrategy,
    runAfterMs,
    ...(input.expiresAtMs !== undefined ? { expiresAtMs: input.expiresAtMs } : {}),
    priority: input.priority,
    weight: input.weight,
    ...(throttleKey !== undefined ? { throttleKey } : {}),
    ...(input.timeWindows ? { timeWindows: input.timeWindows } : {}),
    ...(input.correlationKey !== undefined ? { correlationKey: input.correlationKey } : {}),
    createdAtMs: nowMs,
    updatedAtMs: nowMs,
    history: [],
    historyDropped: 0,
    requestHash: requestHashOf(input),
  };
  const item = { ...jobKey(job.type, id), ...queuedIndexKeys(ctx, job, runAfterMs), ...jobToItem(job) };
  await recordLaneBucket(ctx, item.gsi1pk);
  if (job.correlationKey !== undefined) return enqueueCorrelatedJob(ctx, job, item, job.correlationKey);
  try {
    await ctx.db.send(
      new PutCommand({
        TableName: ctx.settings.tableName,
        Item: item,
        ConditionExpression: 'attribute_not_exists(pk)',
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }),
    );
    return { job, created: true };
  } catch (error) {
    if (!(error instanceof ConditionalCheckFailedException)) throw error;
    return sameJobOrConflict(ctx, job, error.Item ? unmarshallItem(error.Item) : undefined);
  }
}

/** The stored job when it was enqueued with the same body (an idempotent repeat); a ConflictError otherwise. */
async function sameJobOrConflict(
  ctx: QueueContext,
  job: Job,
  storedItem: Record<string, unknown> | undefined,
): Promise<{ job: Job; created: false }> {
  const existing = storedItem ? itemToJob(storedItem) : await getJob(ctx, job.type, job.id);
  if (existing?.requestHash === job.requestHash) return { job: existing, created: false };
  throw new ConflictError(`job "${job.id}" already exists with a different body`);
}

/** The `CORR#<key>` item: which job holds the key, and a token that changes with every new holder. */
export interface CorrelationPointer {
  type: string;
  id: string;
  holdToken: string;
}

function pointerOf(item: Record<string, unknown> | undefined): CorrelationPointer | undefined {
  if (typeof item?.jobType !== 'string' || typeof item.jobId !== 'string' || typeof item.holdToken !== 'string') return undefined;
  return { type: item.jobType, id: item.jobId, holdToken: item.holdToken };
}

export async function getCorrelationPointer(ctx: QueueContext, correlationKey: string): Promise<CorrelationPointer | undefined> {
  const { Item } = await ctx.db.send(
    new GetCommand({ TableName: ctx.settings.tableName, Key: correlationItemKey(correlationKey), ConsistentRead: true }),
  );
  return pointerOf(Item);
}

/** Take-overs of a pointer that keeps changing under them are tried this often; conflicts between transactions are retried inside transactWrite. */
const MAX_CORRELATION_TRIES = 5;

/**
 * Writes the job and the `CORR#<key>` item pointing at it in one transaction.
 * The pointer is written only where none exists, or, when the job it names is
 * terminal or gone, in place of exactly the pointer that was read (its
 * `holdToken`): of two enqueues racing for one key, one wins and the other
 * then finds an active holder, a ConflictError naming `correlation_key`.
 */
async function enqueueCorrelatedJob(
  ctx: QueueContext,
  job: Job,
  item: Record<string, unknown>,
  correlationKey: string,
): Promise<{ job: Job; created: boolean }> {
  const contended = () =>
    new ConflictError(`correlation_key "${correlationKey}" is contended by other enqueues; try again`, [
      { field: 'correlation_key', message: 'is contended by other enqueues' },
    ]);
  /** The hold token of a stale pointer to replace; undefined: no pointer may exist. */
  let replacing: string | undefined;
  for (let tries = 1; ; tries++) {
    const pointerItem = { ...correlationItemKey(correlationKey), jobType: job.type, jobId: job.id, holdToken: randomUUID() };
    let result: TransactionResult;
    try {
      // The SDK gives the transaction a client request token and sends its retries with it: a first try that was
      // applied but whose answer was lost succeeds again rather than failing its conditions.
      result = await transactWrite(ctx, [
        {
          Put: {
            TableName: ctx.settings.tableName,
            Item: item,
            ConditionExpression: 'attribute_not_exists(pk)',
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          },
        },
        {
          Put: {
            TableName: ctx.settings.tableName,
            Item: pointerItem,
            ...(replacing === undefined
              ? { ConditionExpression: 'attribute_not_exists(pk)' }
              : { ConditionExpression: 'holdToken = :seen', ExpressionAttributeValues: { ':seen': replacing } }),
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          },
        },
      ]);
    } catch (error) {
      // Conflicts with other transactions on the same items did not clear.
      if (error instanceof TransactionCanceledException) throw contended();
      throw error;
    }
    if (result.ok) return { job, created: true };
    const [jobReason, pointerReason] = result.reasons;
    if (jobReason?.code === 'ConditionalCheckFailed') return sameJobOrConflict(ctx, job, jobReason.item);
    if (tries >= MAX_CORRELATION_TRIES) throw contended();
    const holder = pointerReason?.item ? pointerOf(pointerReason.item) : await getCorrelationPointer(ctx, correlationKey);
    if (holder === undefined) {
      replacing = undefined;
      continue;
    }
    const holderJob = await getJob(ctx, holder.type, holder.id);
    if (holderJob !== undefined && !isTerminal(holderJob.status)) {
      // The holder is not named: the caller may have no right to see jobs of its type.
      throw new ConflictError(`correlation_key "${correlationKey}" is held by a job that has not finished`, [
        { field: 'correlation_key', message: 'is held by a job that has not finished' },
      ]);
    }
    replacing = holder.holdToken;
  }
}


export async function getJob(ctx: QueueContext, type: string, id: string): Promise<Job | undefined> {
  const { Item } = await ctx.db.send(
    new GetCommand({ TableName: ctx.settings.tableName, Key: jobKey(type, id), ConsistentRead: true }),
  );
  return Item ? itemToJob(Item) : undefined;
}

export async function requireJob(ctx: QueueContext, type: string, id: string): Promise<Job> {
  const job = await getJob(ctx, type, id);
  if (!job) throw new NotFoundError(`job "${id}" of type "${type}" does not exist`);
  return job;
}

/** Cancels a job that has not started; a running or finished job is a ConflictError. */
export async function cancelJob(ctx: QueueContext, type: string, id: string): Promise<Job> {
  const nowMs = ctx.nowMs();
  try {
    const { Attributes } = await ctx.db.send(
      new UpdateCommand({
        TableName: ctx.settings.tableName,
        Key: jobKey(type, id),
        ConditionExpression: '#status = :queued',
        UpdateExpression:
          'SET #status = :cancelled, updatedAtMs = :now, finishedAtMs = :now, purgeAtS = :purgeAtS, gsi1pk = :gsi1pk, gsi1sk = :gsi1sk',
        ExpressionAttributeNames: { '#status': 'status' },
        ExpressionAttributeValues: {
          ':queued': 'queued',
          ':cancelled': 'cancelled',
          ':now': nowMs,
          ':purgeAtS': purgeAtS(ctx, nowMs),
          ':gsi1pk': finishedPartition(type, 'cancelled', shardOf(id, ctx.settings.shards)),
          ':gsi1sk': finishedSortKey(nowMs, id),
        },
        ReturnValues: 'ALL_NEW',
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }),
    );
    const cancelled = itemToJob(Attributes ?? {});
    await ctx.events.publish([eventForUnstartedJob(cancelled, 'job.cancelled')]);
    return cancelled;
  } catch (error) {
    if (!(error instanceof ConditionalCheckFailedException)) throw error;
    if (!error.Item) throw new NotFoundError(`job "${id}" of type "${type}" does not exist`);
    const status = unmarshallItem(error.Item).status;
    throw new ConflictError(`job "${id}" is ${String(status)}; only a queued job can be cancelled`);
  }
}

/** A new job with the same data, priority, weight and time windows, due now (or when its windows next open). */
export async function replayJob(ctx: QueueContext, jobType: JobType, id: string): Promise<Job> {
  const original = await requireJob(ctx, jobType.name, id);
  const { job } = await enqueueJob(ctx, jobType, newJobId(ctx.nowMs()), {
    data: original.data,
    priority: original.priority,
    weight: original.weight,
    ...(original.throttleKey !== undefined ? { throttleKey: original.throttleKey } : {}),
    ...(original.timeWindows ? { timeWindows: original.timeWindows } : {}),
  });
  return job;
}
