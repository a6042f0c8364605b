/**
 * The sweeper: ends attempts whose claim ran out (a dead worker, a callback
 * that never came) and, as a backstop, moves any waiting job found behind a
 * poller's cursor back into the current bucket.
 */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { endAttempt, releaseClaim } from './claims.js';
import type { QueueContext } from './config.js';
import { listJobTypes } from './job-types.js';
import { getJob, queuedIndexKeys } from './jobs.js';
import { bucketOf, jobKey, parseClaimSortKey, parseJobPk, type Lane } from './keys.js';
import { advanceCursor, readCursor, scanBehindCursor, scanLane, type DueEntry } from './lanes.js';
import type { JobType } from './model.js';
import type { CustomRetryPolicies } from './retry.js';

export interface SweepResult {
  /** Expired claims sent back to the queue for another attempt. */
  requeued: number;
  /** Expired claims that ended the job: no attempts left, or at_most_once. */
  ended: number;
  /** Index entries that no longer matched their job (already finished or extended). */
  stale: number;
  /** Waiting jobs found behind a cursor and moved to the current bucket. */
  stragglers: number;
  /** Lapsed claims of at_most_once jobs that provably never started, handed back without counting an attempt. */
  released: number;
}

const SWEEP_PAGE = 100;
/** Pages per lane shard in one sweep, so one sweep always ends. */
const MAX_PAGES = 20;

async function timeOutClaim(
  ctx: QueueContext,
  entry: DueEntry,
  jobTypes: Map<string, JobType>,
  customPolicies: CustomRetryPolicies,
  result: SweepResult,
): Promise<void> {
  const seen = parseClaimSortKey(entry.gsi1sk);
  const job = await getJob(ctx, seen.type, seen.id);
  const jobType = jobTypes.get(seen.type);
  const stillClaimed =
    job !== undefined &&
    (job.status === 'running' || job.status === 'awaiting_callback') &&
    job.claimedUntilMs === seen.claimedUntilMs &&
    seen.claimedUntilMs <= ctx.nowMs();
  if (!stillClaimed || jobType === undefined) {
    result.stale++;
    return;
  }
  // An at_most_once job records its start before it runs: without that record it never ran and may safely run now.
  if (job.deliveryStrategy === 'at_most_once' && job.startedAtMs === undefined) {
    if (await releaseClaim(ctx, job)) result.released++;
    else result.stale++;
    return;
  }
  const awaitingCallback = job.status === 'awaiting_callback';
  const ended = await endAttempt(ctx, job, {
    ending: {
      outcome: 'timed_out',
      failure: {
        error: awaitingCallback
          ? { class: 'CallbackTimeoutError', message: `no callback within ${jobType.timeoutS} s` }
          : { class: 'VisibilityTimeoutError', message: 'the claim expired before the worker reported an outcome' },
        retryable: true,
      },
    },
    jobType,
    customPolicies,
    expectedClaimedUntilMs: seen.claimedUntilMs,
  });
  if (!ended) result.stale++;
  else if (ended.next.status === 'queued') result.requeued++;
  else result.ended++;
}

async function requeueStraggler(ctx: QueueContext, entry: DueEntry, result: SweepResult): Promise<void> {
  const ref = parseJobPk(entry.pk);
  const runAfterMs = Number(entry.gsi1sk.slice(0, entry.gsi1sk.indexOf('#')));
  const index = queuedIndexKeys(ctx, ref, runAfterMs);
  try {
    await ctx.db.send(
      new UpdateCommand({
        TableName: ctx.settings.tableName,
        Key: jobKey(ref.type, ref.id),
        ConditionExpression: '#status = :queued AND gsi1pk = :old',
        UpdateExpression: 'SET gsi1pk = :gsi1pk, gsi1sk = :gsi1sk',
        ExpressionAttributeNames: { '#status': 'status' },
        ExpressionAttributeValues: { ':queued': 'queued', ':old': entry.gsi1pk, ':gsi1pk': index.gsi1pk, ':gsi1sk': index.gsi1sk },
      }),
    );
    result.stragglers++;
  } catch (error) {
    if (!(error instanceof ConditionalCheckFailedException)) throw error;
  }
}

export async function sweepOnce(
  ctx: QueueContext,
  options: { customPolicies: CustomRetryPolicies; shards?: number[] },
): Promise<SweepResult> {
  const result: SweepResult = { requeued: 0, ended: 0, stale: 0, stragglers: 0, released: 0 };
  const jobTypeList = await listJobTypes(ctx);
  if (jobTypeList.length === 0) return result;
  const jobTypes = new Map(jobTypeList.map((jobType) => [jobType.name, jobType]));
  const shards = options.shards ?? Array.from({ length: ctx.settings.shards }, (_, shard) => shard);
  const firstTypeBucket = bucketOf(Math.min(...jobTypeList.map((t) => t.createdAtMs)), ctx.settings.bucketMs);

  const claims: Lane = { kind: 'claims' };
  await Promise.all(
    shards.map(async (shard) => {
      let cursor = await readCursor(ctx, claims, shard);
      if (cursor !== undefined) {
        for (const entry of await scanBehindCursor(ctx, claims, shard, cursor, SWEEP_PAGE)) {
          await timeOutClaim(ctx, entry, jobTypes, options.customPolicies, result);
        }
      }
      for (let page = 0; page < MAX_PAGES; page++) {
        const scan = await scanLane(ctx, claims, shard, { cursor, startBucket: firstTypeBucket, limit: SWEEP_PAGE });
        for (const entry of scan.entries) await timeOutClaim(ctx, entry, jobTypes, options.customPolicies, result);
        if (scan.advanceTo !== undefined && (await advanceCursor(ctx, claims, shard, cursor, scan.advanceTo))) {
          cursor = scan.advanceTo;
        }
        if (scan.entries.length < SWEEP_PAGE) break;
      }
    }),
  );

  await Promise.all(
    jobTypeList.flatMap((jobType) =>
      shards.map(async (shard) => {
        const lane: Lane = { kind: 'queued', type: jobType.name };
        const cursor = await readCursor(ctx, lane, shard);
        if (cursor === undefined) return;
        for (const entry of await scanBehindCursor(ctx, lane, shard, cursor, SWEEP_PAGE)) {
          await requeueStraggler(ctx, entry, result);
        }
      }),
    ),
  );
  return result;
}
