/**
 * Invariant 5 against DynamoDB Local: no job waits behind the poller's cursor.
 * One shard, one-minute buckets and a one-minute safety margin, so bucket
 * arithmetic is easy to follow: bucket b0 starts at T0.
 */
import { describe, expect, test } from 'vitest';
import type { QueueContext } from '../../../../../lib/queue/context.js';
import { getJob } from '../../../../../lib/queue/read-job.js';
import { bucketOf, lanePartition } from '../../../../../lib/store/keys.js';
import { readCursor } from '../../../../../lib/store/due-index.js';
import type { JobType } from '../../../../../lib/domain/job-type.js';
import { sweepOnce } from '../../../../../lib/queue/sweep/sweep.js';
import { DyingInvoker, FailingInvoker, RecordingInvoker, T0, defineType, enqueue, freshQueuePerTest, poll, readItem } from '../../../../support/lib-fixtures.js';
import { asFunction } from '../../../../support/queue.js';
import { LATE_WRITE_GRACE_MS, scanLane } from '../../../../../lib/queue/lanes/lane-walk.js';

const MINUTE = 60_000;
const SETTINGS = { shards: 1, bucketMs: MINUTE, cursorSafetyMarginMs: MINUTE };
const b0 = bucketOf(T0, MINUTE);

const cursorOf = (ctx: QueueContext, jobType: JobType): Promise<number | undefined> =>
  readCursor(ctx, { kind: 'queued', type: jobType.name }, 0);

describe('with more due jobs than one poll takes', () => {
  const queue = freshQueuePerTest({ settings: { ...SETTINGS, claimPageSize: 1 } });

  test('the cursor never passes a bucket that still holds a due job', async () => {
    const { ctx, clock } = queue();
    const emails = await defineType(ctx, 'emails');
    await enqueue(ctx, emails, 'a');
    await enqueue(ctx, emails, 'b');
    await enqueue(ctx, emails, 'c', { runAfterMs: T0 + 2 * MINUTE });
    clock.set(T0 + 10 * MINUTE);

    // Each poll takes one job; while b0 still holds one, the cursor stays at or before b0.
    for (let i = 0; i < 2; i++) {
      expect((await poll(ctx, [emails], new RecordingInvoker())).claimed).toBe(1);
      expect((await cursorOf(ctx, emails)) ?? b0).toBeLessThanOrEqual(b0);
    }
    // b0 and b1 are now empty and settled; b2 holds c: the cursor stops at b2.
    const third = new RecordingInvoker();
    expect((await poll(ctx, [emails], third)).claimed).toBe(1);
    expect(third.jobs.map((job) => job.id)).toEqual(['c']);
    expect(await cursorOf(ctx, emails)).toBe(b0 + 2);
  });

  test('once its buckets are empty and settled, the cursor advances past them, up to the first unsettled bucket', async () => {
    const { ctx, clock } = queue();
    const emails = await defineType(ctx, 'emails');
    await enqueue(ctx, emails, 'a');
    clock.set(T0 + 10 * MINUTE);
    expect((await poll(ctx, [emails], new RecordingInvoker())).claimed).toBe(1);
    expect((await poll(ctx, [emails], new RecordingInvoker())).claimed).toBe(0);
    // Now is in b10; b8 ended at T0 + 9 min, a margin ago; b9 ended just now.
    expect(await cursorOf(ctx, emails)).toBe(b0 + 9);
  });
});

describe('with the default page size', () => {
  const queue = freshQueuePerTest({ settings: SETTINGS });

  test('the cursor does not pass a bucket until the safety margin after its end, so a late write in it is still claimed', async () => {
    const { ctx, clock } = queue();
    const emails = await defineType(ctx, 'emails');
    clock.set(T0 + 5 * MINUTE + 30_000);
    expect((await poll(ctx, [emails], new RecordingInvoker())).claimed).toBe(0);
    // b0..b3 ended a margin ago; b4 ended only 30 s ago.
    expect(await cursorOf(ctx, emails)).toBe(b0 + 4);

    // A producer whose request began in b4 (its clock read T0 + 4:59) writes now.
    const lateWriter: QueueContext = { ...ctx, nowMs: () => T0 + 4 * MINUTE + 59_000 };
    await enqueue(lateWriter, emails, 'late');
    expect((await readItem(queue(), 'emails', 'late'))?.gsi1pk).toBe(lanePartition({ kind: 'queued', type: 'emails' }, b0 + 4, 0));

    clock.set(T0 + 5 * MINUTE + 40_000);
    const invoker = new RecordingInvoker();
    expect((await poll(ctx, [emails], invoker)).claimed).toBe(1);
    expect(invoker.jobs[0]?.id).toBe('late');
    expect(await cursorOf(ctx, emails)).toBe(b0 + 4);

    clock.set(T0 + 6 * MINUTE);
    await poll(ctx, [emails], new RecordingInvoker());
    expect(await cursorOf(ctx, emails)).toBe(b0 + 5);
  });

  test('a job written behind the cursor is moved to the current bucket by the sweeper and then claimed', async () => {
    const q = queue();
    const { ctx, clock } = q;
    const emails = await defineType(ctx, 'emails');
    clock.set(T0 + 10 * MINUTE);
    await poll(ctx, [emails], new RecordingInvoker());
    expect(await cursorOf(ctx, emails)).toBe(b0 + 9);

    // A write older than the margin assumes: it lands in b7, behind the cursor.
    const staleWriter: QueueContext = { ...ctx, nowMs: () => T0 + 7 * MINUTE };
    await enqueue(staleWriter, emails, 'straggler');
    expect((await poll(ctx, [emails], new RecordingInvoker())).claimed).toBe(0);

    expect(await sweepOnce(asFunction(ctx, 'sweeper'), { customPolicies: {} })).toMatchObject({ stragglers: 1 });
    expect((await readItem(q, 'emails', 'straggler'))?.gsi1pk).toBe(
      lanePartition({ kind: 'queued', type: 'emails' }, b0 + 10, 0),
    );
    const invoker = new RecordingInvoker();
    expect((await poll(ctx, [emails], invoker)).claimed).toBe(1);
    expect(invoker.jobs[0]).toMatchObject({ id: 'straggler', runAfterMs: T0 + 7 * MINUTE });
  });

  test('a released claim of a long-overdue job goes back to the current bucket, never behind the cursor', async () => {
    const q = queue();
    const { ctx, clock } = q;
    const emails = await defineType(ctx, 'emails');
    await enqueue(ctx, emails, 'e-1');
    clock.set(T0 + 10 * MINUTE);
    expect((await poll(ctx, [emails], new FailingInvoker())).released).toBe(1);
    expect((await readItem(q, 'emails', 'e-1'))?.gsi1pk).toBe(lanePartition({ kind: 'queued', type: 'emails' }, b0 + 10, 0));

    const invoker = new RecordingInvoker();
    expect((await poll(ctx, [emails], invoker)).claimed).toBe(1);
    expect(await cursorOf(ctx, emails)).toBe(b0 + 9);
  });

  test('a job retried after a short delay long after it was first due is queued in the current bucket', async () => {
    const q = queue();
    const { ctx, clock } = q;
    const emails = await defineType(ctx, 'emails', { retry: { kind: 'fixed', delay_s: 1 } });
    await enqueue(ctx, emails, 'e-1', { runAfterMs: T0 - 60 * MINUTE });
    clock.set(T0 + 10 * MINUTE);
    await poll(ctx, [emails], new DyingInvoker(ctx));
    clock.set(T0 + 10 * MINUTE + 30_000);
    expect(await sweepOnce(asFunction(ctx, 'sweeper'), { customPolicies: {} })).toMatchObject({ requeued: 1 });
    const item = await readItem(q, 'emails', 'e-1');
    expect(item?.gsi1pk).toBe(lanePartition({ kind: 'queued', type: 'emails' }, b0 + 10, 0));

    clock.advance(1_000);
    expect((await poll(ctx, [emails], new RecordingInvoker())).claimed).toBe(1);
    expect(await getJob(ctx, 'emails', 'e-1')).toMatchObject({ status: 'running', attempt: 2 });
  });
});

describe('a scan that begins past the cursor (buckets behind the current one found empty lately)', () => {
  const queue = freshQueuePerTest({ settings: SETTINGS });
  const lane = { kind: 'queued', type: 'emails' } as const;

  test('leaves the cursor where it is, though the buckets it did not read settled', async () => {
    const { ctx, clock } = queue();
    const emails = await defineType(ctx, 'emails');
    clock.set(T0 + 10 * MINUTE);
    const scan = await scanLane(ctx, lane, 0, { cursor: b0, startBucket: b0, limit: 10, readFromBucket: b0 + 10 });
    expect(scan.advanceTo).toBeUndefined();
    expect(await cursorOf(ctx, emails)).toBeUndefined();
  });

  test('does not find a job in a bucket before it: that is left to the next scan from the cursor', async () => {
    const { ctx, clock } = queue();
    const emails = await defineType(ctx, 'emails');
    await enqueue(ctx, emails, 'late', { runAfterMs: T0 });
    clock.set(T0 + MINUTE + 6_000);
    expect((await scanLane(ctx, lane, 0, { cursor: b0, startBucket: b0, limit: 10, readFromBucket: b0 + 1 })).entries).toEqual([]);
    expect((await scanLane(ctx, lane, 0, { cursor: b0, startBucket: b0, limit: 10 })).entries.map((entry) => entry.pk)).toHaveLength(1);
  });

  test('says the buckets behind the current one were quiet only when it read them empty past LATE_WRITE_GRACE_MS into the current one', async () => {
    const { ctx, clock } = queue();
    await defineType(ctx, 'emails');
    clock.set(T0 + MINUTE + LATE_WRITE_GRACE_MS - 1);
    expect((await scanLane(ctx, lane, 0, { cursor: b0, startBucket: b0, limit: 10 })).quietBefore).toBeUndefined();
    clock.set(T0 + MINUTE + LATE_WRITE_GRACE_MS);
    expect((await scanLane(ctx, lane, 0, { cursor: b0, startBucket: b0, limit: 10 })).quietBefore).toBe(b0 + 1);
  });
});
