/**
 * A type first polled long after it was made, nothing enqueued in between, against DynamoDB Local. A type made by
 * this release says from when its lanes' bucket directory is complete (JobType directoryFromMs): from its
 * creation, unless a release that did not record the directory may still be writing. Its first walk trusts the
 * directory from there, where a type made before types said walks bucket by bucket until its cursor has adopted
 * the directory, an hour after its first advance (DIRECTORY_ADOPTION_MS). One shard, one-minute buckets and a
 * one-minute safety margin, as in lane-walk.catch-up.test.ts.
 */
import { DeleteCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, test } from 'vitest';
import type { JobType } from '../../../../../lib/domain/job-type.js';
import type { QueueContext } from '../../../../../lib/queue/context.js';
import { DIRECTORY_ADOPTION_MS } from '../../../../../lib/queue/lanes/bucket-directory.js';
import { MAX_QUERIES_PER_SCAN } from '../../../../../lib/queue/lanes/lane-walk.js';
import { advanceCursor, readLaneCursor } from '../../../../../lib/store/due-index.js';
import { bucketOf, cursorKey, directoryKey, type Lane } from '../../../../../lib/store/keys.js';
import { putItem } from '../../../../../lib/store/send.js';
import type { TestQueue } from '../../../../support/queue.js';
import { RecordingInvoker, T0, defineType, defineTypeOfOlderRelease, enqueue, freshQueuePerTest, poll } from '../../../../support/lib-fixtures.js';
import { countQueries } from '../../../../support/sdk-calls.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const queue = freshQueuePerTest({ settings: { shards: 1, bucketMs: MINUTE, cursorSafetyMarginMs: MINUTE } });
const emailsLane: Lane = { kind: 'queued', type: 'emails' };
const claimLane: Lane = { kind: 'claims' };

/**
 * What a first poll a day or a week late may query: one read of the directory for the settled buckets, and the
 * few near now that have not settled, the due job's among them.
 */
const HANDFUL = 10;

/** The claim lane's cursor as a sweeper of a release that did not record the directory left it: moved, adopting nothing. */
async function claimCursorMovedByReleaseThatDidNotRecord(ctx: QueueContext): Promise<void> {
  await putItem(ctx, { Item: { ...cursorKey(claimLane, 0), bucket: bucketOf(T0, MINUTE) - 1 } });
}

/** A job written into the type's lane as a release that did not record the directory writes one: no record of its bucket. */
async function enqueueUnrecorded(q: TestQueue, jobType: JobType, id: string): Promise<void> {
  await enqueue(q.ctx, jobType, id);
  await q.clients.db.send(new DeleteCommand({ TableName: q.tableName, Key: directoryKey(emailsLane, bucketOf(q.clock.nowMs(), MINUTE)) }));
}

describe('a type made by this release, first polled long after it was made', () => {
  test.each([
    ['a day', DAY],
    ['a week', 7 * DAY],
  ])('first polled %s after it was made, its first poll claims the job due, with a handful of queries', async (_, lateMs) => {
    const q = queue();
    const emails = await defineType(q.ctx, 'emails');
    q.clock.set(T0 + lateMs);
    await enqueue(q.ctx, emails, 'due');

    const queries = countQueries(q.clientsOf('poller').base);
    const invoker = new RecordingInvoker();
    expect(await poll(q.ctx, [emails], invoker)).toMatchObject({ claimed: 1, behind: false });
    expect(invoker.jobs.map((job) => job.id)).toEqual(['due']);
    expect(queries.count).toBeLessThanOrEqual(HANDFUL);
  });

  test("its first poll moves its cursor up to now, and the cursor keeps the directory's start at the type's creation", async () => {
    const q = queue();
    const emails = await defineType(q.ctx, 'emails');
    q.clock.set(T0 + DAY);
    await poll(q.ctx, [emails], new RecordingInvoker());
    expect(await readLaneCursor(q.ctx, emailsLane, 0)).toMatchObject({ bucket: bucketOf(T0 + DAY, MINUTE) - 1, directoryFromBucket: bucketOf(T0, MINUTE) });
  });

  test('made on a table whose claim lane has adopted the directory, it trusts its own from its creation', async () => {
    const q = queue();
    await advanceCursor(q.ctx, claimLane, 0, { from: undefined, to: bucketOf(T0, MINUTE) - 1, directoryFromBucket: bucketOf(T0 - DAY, MINUTE) });
    expect((await defineType(q.ctx, 'emails')).directoryFromMs).toBe(T0);
  });
});

describe('a type made while a release that did not record the directory may still be writing', () => {
  test('made less than an hour after the claim lane adopted the directory, it trusts its own from where the claim lane does', async () => {
    const q = queue();
    const adoptedFromBucket = bucketOf(T0 + 20 * MINUTE, MINUTE);
    await advanceCursor(q.ctx, claimLane, 0, { from: undefined, to: bucketOf(T0, MINUTE) - 1, directoryFromBucket: adoptedFromBucket });
    expect((await defineType(q.ctx, 'emails')).directoryFromMs).toBe(adoptedFromBucket * MINUTE);
  });

  test('made while the claim lane was moved only by such a release, it trusts its own from an hour on', async () => {
    const q = queue();
    await claimCursorMovedByReleaseThatDidNotRecord(q.ctx);
    expect((await defineType(q.ctx, 'emails')).directoryFromMs).toBe(T0 + DIRECTORY_ADOPTION_MS);
  });

  test('a job that release wrote into its lane in that hour, unrecorded, is claimed by its first poll a day later', async () => {
    const q = queue();
    await claimCursorMovedByReleaseThatDidNotRecord(q.ctx);
    const emails = await defineType(q.ctx, 'emails');
    q.clock.set(T0 + 30 * MINUTE);
    await enqueueUnrecorded(q, emails, 'during-the-deploy');
    q.clock.set(T0 + DAY);

    const invoker = new RecordingInvoker();
    expect(await poll(q.ctx, [emails], invoker)).toMatchObject({ claimed: 1 });
    expect(invoker.jobs.map((job) => job.id)).toEqual(['during-the-deploy']);
  });
});

describe('a type made by a release before types said from when their directory is complete', () => {
  test('its first poll a day after it was made walks from its creation bucket by bucket, a scan’s worth, and claims nothing yet', async () => {
    const q = queue();
    const emails = await defineTypeOfOlderRelease(q.ctx, 'emails');
    q.clock.set(T0 + DAY);
    await enqueue(q.ctx, emails, 'due');

    const queries = countQueries(q.clientsOf('poller').base);
    expect(await poll(q.ctx, [emails], new RecordingInvoker())).toMatchObject({ claimed: 0, behind: true });
    expect(queries.count).toBe(MAX_QUERIES_PER_SCAN);
    // Its cursor adopts the directory as it did: from an hour after its first advance.
    expect(await readLaneCursor(q.ctx, emailsLane, 0)).toMatchObject({ directoryFromBucket: bucketOf(T0 + DAY + DIRECTORY_ADOPTION_MS, MINUTE) });
  });

  test('replaced by this release, it still says nothing: writes before may not have recorded their buckets', async () => {
    const q = queue();
    await defineTypeOfOlderRelease(q.ctx, 'emails');
    q.clock.set(T0 + DAY);
    expect((await defineType(q.ctx, 'emails', { attempts: 5 })).directoryFromMs).toBeUndefined();
  });
});

describe('a type made by this release, replaced', () => {
  test('keeps from when its lanes’ directory is complete', async () => {
    const q = queue();
    await defineType(q.ctx, 'emails');
    q.clock.set(T0 + DAY);
    expect((await defineType(q.ctx, 'emails', { attempts: 5 })).directoryFromMs).toBe(T0);
  });
});
