/**
 * Live due stats of job types, read from the due index without a scan: how
 * many queued jobs are due and how long the oldest has waited.
 */
import { describe, expect, test } from 'vitest';
import { trackConsumedCapacity } from '../../../../../infra/local/aws/capacity-meter.js';
import type { QueueContext } from '../../../../../lib/queue/context.js';
import type { JobType } from '../../../../../lib/domain/job-type.js';
import { statsOfType, statsOfTypes } from '../../../../../lib/queue/read/type-stats.js';
import { sweepOnce } from '../../../../../lib/queue/sweep/sweep.js';
import { RecordingInvoker, T0, defineType, enqueue, freshQueuePerTest, poll } from '../../../../support/lib-fixtures.js';
import { asFunction } from '../../../../support/queue.js';

const BUCKET_MS = 60_000;
const queue = freshQueuePerTest({ settings: { bucketMs: BUCKET_MS, shards: 4 } });

const ids = (prefix: string, count: number): string[] => Array.from({ length: count }, (_, i) => `${prefix}-${i}`);

async function enqueueAll(ctx: QueueContext, jobType: JobType, jobIds: string[], runAfterMs?: number): Promise<void> {
  await Promise.all(jobIds.map((id) => enqueue(ctx, jobType, id, runAfterMs === undefined ? {} : { runAfterMs })));
}

describe('due', () => {
  test('counts the queued jobs of the type whose ready time has passed: not future ones, not claimed ones, not other types', async () => {
    const { ctx, clock } = queue();
    const emails = await defineType(ctx, 'emails');
    const invoices = await defineType(ctx, 'invoices');
    await enqueueAll(ctx, emails, ids('claimed', 3));
    await poll(ctx, [emails], new RecordingInvoker());
    await enqueueAll(ctx, emails, ids('due', 7));
    await enqueueAll(ctx, emails, ids('later-this-bucket', 2), T0 + 30_000);
    await enqueueAll(ctx, emails, ids('next-hour', 2), T0 + 3_600_000);
    await enqueueAll(ctx, invoices, ids('other-type', 5));
    clock.advance(10_000);

    const stats = await statsOfTypes(ctx, [emails, invoices]);

    expect(stats.map(({ jobType, stats: typeStats }) => [jobType.name, typeStats.due])).toEqual([
      ['emails', 7],
      ['invoices', 5],
    ]);
    expect(stats[0]?.stats).toMatchObject({ scheduled: 4, running: 3, awaitingCallback: 0, inFlightWeight: null });
  });

  test('a job counts as due once the clock passes its ready time, in a later bucket too', async () => {
    const { ctx, clock } = queue();
    const emails = await defineType(ctx, 'emails');
    await enqueue(ctx, emails, 'soon', { runAfterMs: T0 + 20_000 });
    await enqueue(ctx, emails, 'in-five-minutes', { runAfterMs: T0 + 5 * BUCKET_MS });
    const dueAt = async (offsetMs: number): Promise<number> => {
      clock.set(T0 + offsetMs);
      return (await statsOfType(ctx, emails)).due;
    };
    expect(await dueAt(19_999)).toBe(0);
    expect(await dueAt(20_000)).toBe(1);
    expect(await dueAt(5 * BUCKET_MS - 1)).toBe(1);
    expect(await dueAt(5 * BUCKET_MS)).toBe(2);
  });

  test('is 0 for a type without jobs, and for a type whose jobs all ran', async () => {
    const { ctx } = queue();
    const emails = await defineType(ctx, 'emails');
    expect(await statsOfType(ctx, emails)).toMatchObject({ due: 0, oldestDueLagMs: 0 });
    await enqueueAll(ctx, emails, ids('e', 3));
    await poll(ctx, [emails], new RecordingInvoker());
    expect(await statsOfType(ctx, emails)).toMatchObject({ due: 0, oldestDueLagMs: 0 });
  });

  test("counts a paused type's waiting jobs, which pile up from the type's creation on", async () => {
    const { ctx, clock } = queue();
    const paused = await defineType(ctx, 'paused', { concurrency: 0 });
    await enqueueAll(ctx, paused, ids('early', 2));
    clock.advance(10 * BUCKET_MS);
    await enqueueAll(ctx, paused, ids('late', 3));
    await poll(ctx, [paused], new RecordingInvoker());
    expect(await statsOfType(ctx, paused)).toMatchObject({ due: 5, oldestDueLagMs: 10 * BUCKET_MS });
  });
});

describe('oldest due lag', () => {
  test('is how long the oldest due job has been due', async () => {
    const { ctx, clock } = queue();
    const emails = await defineType(ctx, 'emails');
    await enqueue(ctx, emails, 'first', { runAfterMs: T0 + 1_000 });
    await enqueue(ctx, emails, 'second', { runAfterMs: T0 + 2 * BUCKET_MS });
    clock.set(T0 + 3 * BUCKET_MS + 500);
    expect(await statsOfType(ctx, emails)).toMatchObject({ due: 2, oldestDueLagMs: 3 * BUCKET_MS - 500 });
  });

  test('counts from a run_after in the past, though such a job is indexed in the bucket current at its enqueue', async () => {
    const { ctx, clock } = queue();
    const emails = await defineType(ctx, 'emails');
    await enqueue(ctx, emails, 'on-time');
    clock.advance(3 * BUCKET_MS);
    await enqueue(ctx, emails, 'backdated', { runAfterMs: T0 - 3_600_000 });
    expect(await statsOfType(ctx, emails)).toMatchObject({ due: 2, oldestDueLagMs: 3 * BUCKET_MS + 3_600_000 });
  });

  test('drops to the next oldest once the oldest is claimed', async () => {
    const { ctx, clock } = queue();
    const emails = await defineType(ctx, 'emails');
    await enqueue(ctx, emails, 'oldest');
    await poll(ctx, [emails], new RecordingInvoker());
    clock.advance(4_000);
    await enqueue(ctx, emails, 'younger');
    clock.advance(6_000);
    expect(await statsOfType(ctx, emails)).toMatchObject({ due: 1, oldestDueLagMs: 6_000 });
  });
});

describe('what it reads', () => {
  test("from the pollers' and sweeper's cursors on: once they have moved, an old type costs a few queries per shard, not one per bucket since its creation", async () => {
    const { ctx, clock } = queue();
    const emails = await defineType(ctx, 'emails');
    clock.advance(120 * BUCKET_MS);
    await enqueueAll(ctx, emails, ids('e', 4));
    const capacity = trackConsumedCapacity(queue().clientsOf('api').base);
    const queriesOf = async (): Promise<number> => {
      const before = capacity.byCommand.QueryCommand?.calls ?? 0;
      expect((await statsOfType(asFunction(ctx, 'api'), emails)).due).toBe(4);
      return (capacity.byCommand.QueryCommand?.calls ?? 0) - before;
    };

    // Before any poll, every shard is walked from the type's creation: 121 buckets.
    expect(await queriesOf()).toBeGreaterThanOrEqual(4 * 121);
    await poll(ctx, [emails], new RecordingInvoker());
    await sweepOnce(asFunction(ctx, 'sweeper'), { customPolicies: {} });
    await enqueueAll(ctx, emails, ids('f', 4));
    // Per shard: due, up to 3 buckets and a first entry; scheduled, the current bucket and the 2 walked ahead;
    // running, the claim lane from the sweeper's cursor (a margin behind) to 2 ahead. Plus 2 directory queries.
    expect(await queriesOf()).toBeLessThanOrEqual(4 * (4 + 3 + 6) + 2);
  });
});
