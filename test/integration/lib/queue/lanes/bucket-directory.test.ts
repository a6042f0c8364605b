/**
 * The bucket directory's records expire (DynamoDB TTL), counted from their bucket's end, and walks know it: a
 * bucket old enough for its record to be gone is queried, never gone past for want of a record. Against DynamoDB
 * Local, which does not run TTL on the tests' clock: the tests read the attribute, and delete a record as TTL
 * would. One shard, one-hour buckets, so that a walk over a record's lifetime stays a few scans long.
 */
import { DeleteCommand, GetCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, test } from 'vitest';
import { DIRECTORY_RECORD_LIFETIME_MS, directoryPurgeAtS, firstUnexpiredDirectoryBucket } from '../../../../../lib/queue/lanes/bucket-directory.js';
import { getJob } from '../../../../../lib/queue/read-job.js';
import { readLaneCursor } from '../../../../../lib/store/due-index.js';
import { bucketOf, bucketStartMs, directoryKey, TTL_ATTRIBUTE, type Lane } from '../../../../../lib/store/keys.js';
import type { TestQueue } from '../../../../support/queue.js';
import { RecordingInvoker, T0, defineType, enqueue, freshQueuePerTest, poll } from '../../../../support/lib-fixtures.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const queue = freshQueuePerTest({ settings: { shards: 1, bucketMs: HOUR, cursorSafetyMarginMs: MINUTE } });
const b0 = bucketOf(T0, HOUR);
const emailsLane: Lane = { kind: 'queued', type: 'emails' };

async function directoryRecord(q: TestQueue, lane: Lane, bucket: number): Promise<Record<string, unknown> | undefined> {
  const { Item } = await q.clients.db.send(new GetCommand({ TableName: q.tableName, Key: directoryKey(lane, bucket), ConsistentRead: true }));
  return Item;
}

describe('a directory record', () => {
  test('expires a lifetime after its bucket ends, however far ahead of the write that bucket lies', async () => {
    const q = queue();
    const emails = await defineType(q.ctx, 'emails');
    await enqueue(q.ctx, emails, 'next-quarter', { runAfterMs: T0 + 90 * DAY });
    const bucket = bucketOf(T0 + 90 * DAY, HOUR);
    const record = await directoryRecord(q, emailsLane, bucket);
    expect(record?.[TTL_ATTRIBUTE]).toBe((bucketStartMs(bucket + 1, HOUR) + DIRECTORY_RECORD_LIFETIME_MS) / 1000);
    // Counted from the write, it would have gone two months before the job fell due.
    expect(record?.[TTL_ATTRIBUTE]).toBeGreaterThan((T0 + 90 * DAY) / 1000);
  });

  test("of the claim lane expires a lifetime after the bucket its claim's time runs out in", async () => {
    const q = queue();
    const emails = await defineType(q.ctx, 'emails');
    await enqueue(q.ctx, emails, 'now');
    expect(await poll(q.ctx, [emails], new RecordingInvoker())).toMatchObject({ claimed: 1 });
    const claimedUntilMs = (await getJob(q.ctx, 'emails', 'now'))?.claimedUntilMs ?? 0;
    const record = await directoryRecord(q, { kind: 'claims' }, bucketOf(claimedUntilMs, HOUR));
    expect(record?.[TTL_ATTRIBUTE]).toBe(directoryPurgeAtS(bucketOf(claimedUntilMs, HOUR), HOUR));
  });
});

describe('a walk from a cursor far behind', () => {
  /**
   * A type polled once its first buckets settled (its lanes trust the directory from its creation, bucket b0), with a job
   * due in bucket b0 + 5 whose record is then gone, as TTL removes it; the clock is then set `sinceExpiryMs` after
   * that record's purge time.
   */
  async function jobWhoseRecordIsGone(q: TestQueue, sinceExpiryMs: number) {
    const { ctx, clock } = q;
    const emails = await defineType(ctx, 'emails');
    clock.set(T0 + 2 * HOUR + 5 * MINUTE);
    await poll(ctx, [emails], new RecordingInvoker());
    expect(await readLaneCursor(ctx, emailsLane, 0)).toMatchObject({ bucket: b0 + 2, directoryFromBucket: b0 });
    await enqueue(ctx, emails, 'held', { runAfterMs: T0 + 5 * HOUR });
    await q.clients.db.send(new DeleteCommand({ TableName: q.tableName, Key: directoryKey(emailsLane, b0 + 5) }));
    clock.set(directoryPurgeAtS(b0 + 5, HOUR) * 1000 + sinceExpiryMs);
    return emails;
  }

  test('queries a bucket whose record may have expired, and claims what it still held', async () => {
    const q = queue();
    const emails = await jobWhoseRecordIsGone(q, 2 * HOUR);
    const invoker = new RecordingInvoker();
    let claimed = 0;
    for (let polls = 0; polls < 10 && claimed === 0; polls++) claimed += (await poll(q.ctx, [emails], invoker)).claimed;
    expect(invoker.jobs.map((job) => job.id)).toEqual(['held']);
  });

  test('trusts the directory for buckets whose records cannot have expired yet, going past them unread', async () => {
    const q = queue();
    const emails = await jobWhoseRecordIsGone(q, -2 * HOUR);
    // A record missing before its purge time was never written: the bucket is gone past, as empty.
    expect(firstUnexpiredDirectoryBucket(q.clock.nowMs(), HOUR)).toBeLessThanOrEqual(b0 + 5);
    const invoker = new RecordingInvoker();
    for (let polls = 0; polls < 10; polls++) await poll(q.ctx, [emails], invoker);
    expect(invoker.jobs).toEqual([]);
  });

  test('goes past a missing record only in the buckets whose purge time is more than an hour away', () => {
    const nowMs = T0 + 40 * DAY;
    const first = firstUnexpiredDirectoryBucket(nowMs, HOUR);
    expect(directoryPurgeAtS(first, HOUR) * 1000).toBeGreaterThan(nowMs + HOUR);
    expect(directoryPurgeAtS(first - 1, HOUR) * 1000).toBeLessThanOrEqual(nowMs + HOUR);
  });
});
