/**
 * Schedules fired by the pollers, on DynamoDB Local under the poller's grants: one job per fire time whoever
 * fires it and however often, pause and resume, overlap.
 */
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, test } from 'vitest';
import type { JobType } from '../../../../../lib/domain/job-type.js';
import type { QueueContext } from '../../../../../lib/queue/context.js';
import { fireDueSchedules } from '../../../../../lib/queue/schedules/fire-schedules.js';
import { getJob } from '../../../../../lib/queue/read-job.js';
import { cancelJob } from '../../../../../lib/queue/attempt/cancel.js';
import { runPollerLoop } from '../../../../../lib/queue/poll/poller-loop.js';
import { deleteSchedule, putSchedule, requireSchedule, setSchedulePaused } from '../../../../../lib/queue/schedules/manage-schedules.js';
import { PARTITION_PREFIX } from '../../../../../lib/store/keys.js';
import { parseWith } from '../../../../../lib/wire/parse.js';
import { scheduleDefinitionFromInput, scheduleInputSchema } from '../../../../../lib/wire/schedules.js';
import { tableItems } from '../../../../support/api.js';
import { trackConsumedCapacity } from '../../../../../infra/local/aws/capacity-meter.js';
import { asFunction, type TestQueue } from '../../../../support/queue.js';
import { dyingBeforeAdvance } from '../../../../support/dying.js';
import { defineType, freshQueuePerTest, RecordingInvoker, T0 } from '../../../../support/lib-fixtures.js';

const queue = freshQueuePerTest();

const iso = (epochMs: number): string => new Date(epochMs).toISOString().replace('.000Z', 'Z');

async function schedule(ctx: QueueContext, name: string, jobType: JobType, body: Record<string, unknown>) {
  const definition = scheduleDefinitionFromInput(parseWith(scheduleInputSchema, { job_type: jobType.name, ...body }));
  return (await putSchedule(ctx, name, definition, jobType)).schedule;
}

/** The ids of every job in the table, sorted. */
async function jobIds(testQueue: TestQueue): Promise<string[]> {
  const items = await tableItems(testQueue);
  return items.filter((item) => String(item.pk).startsWith(PARTITION_PREFIX.job)).map((item) => String(item.id)).sort();
}

describe('firing', () => {
  test('a due schedule makes one ordinary job of its type, named for the schedule and fire time, and moves to its next time', async () => {
    const { ctx, clock } = queue();
    const report = await defineType(ctx, 'report');
    await schedule(ctx, 'tick', report, { cron: '* * * * *' });
    clock.set(T0 + 60_000 + 400);
    expect(await fireDueSchedules(asFunction(ctx, 'poller'), [report])).toEqual({
      made: 1,
      skipped: 0,
      lostRaces: 0,
      bySchedule: [{ schedule: 'tick', jobType: 'report', made: 1, skipped: 0 }],
    });
    const job = await getJob(ctx, 'report', 'tick@2026-11-21T10:01:00Z');
    expect(job).toMatchObject({ status: 'queued', schedule: 'tick', runAfterMs: T0 + 60_000 });
    const after = await requireSchedule(ctx, 'tick');
    expect(after.nextFireAtMs).toBe(T0 + 120_000);
    expect(after.lastFire).toEqual({ fireAtMs: T0 + 60_000, firedAtMs: T0 + 60_400, jobId: 'tick@2026-11-21T10:01:00Z' });
  });

  test('before its fire time a schedule makes nothing', async () => {
    const { ctx, clock } = queue();
    const report = await defineType(ctx, 'report');
    await schedule(ctx, 'tick', report, { cron: '* * * * *' });
    clock.set(T0 + 59_000);
    expect(await fireDueSchedules(asFunction(ctx, 'poller'), [report])).toMatchObject({ made: 0, skipped: 0, lostRaces: 0 });
    expect(await jobIds(queue())).toEqual([]);
  });

  test('the poller loop fires due schedules as it polls', async () => {
    const { ctx, clock } = queue();
    const report = await defineType(ctx, 'report');
    await schedule(ctx, 'tick', report, { cron: '* * * * *' });
    clock.set(T0 + 60_000);
    await runPollerLoop(asFunction(ctx, 'poller'), { invoker: new RecordingInvoker(), runForMs: 0, sleep: async () => undefined });
    expect(await jobIds(queue())).toEqual(['tick@2026-11-21T10:01:00Z']);
  });

  test('two pollers racing, one killed mid-fire and restarted, make exactly one job per fire time over 10 minutes', async () => {
    const { ctx, clock } = queue();
    const report = await defineType(ctx, 'report');
    await schedule(ctx, 'minutely', report, { cron: '* * * * *' });
    await schedule(ctx, 'every-20s', report, { cron: '*/20 * * * * *' });
    const healthy = asFunction(ctx, 'poller');
    const dying = dyingBeforeAdvance(healthy);
    const killedFromMs = T0 + 3 * 60_000;
    const restartedAtMs = T0 + 5 * 60_000;
    let deaths = 0;
    // Every 9 s: a step now and then falls on a fire time to the millisecond, the others after it.
    const steps = [...Array.from({ length: 67 }, (_, n) => n * 9_000), 10 * 60_000];
    for (const stepMs of steps) {
      clock.set(T0 + stepMs);
      const second = T0 + stepMs >= killedFromMs && T0 + stepMs < restartedAtMs ? dying : healthy;
      const outcomes = await Promise.allSettled([fireDueSchedules(healthy, [report]), fireDueSchedules(second, [report])]);
      deaths += outcomes.filter((outcome) => outcome.status === 'rejected').length;
    }
    expect(deaths).toBeGreaterThan(0);
    const expected = [
      ...Array.from({ length: 10 }, (_, minute) => `minutely@${iso(T0 + (minute + 1) * 60_000)}`),
      ...Array.from({ length: 30 }, (_, n) => `every-20s@${iso(T0 + (n + 1) * 20_000)}`),
    ].sort();
    expect(await jobIds(queue())).toEqual(expected);
  });
});

describe('a fire its type refuses', () => {
  test('a job its type now refuses (weight above a lowered concurrency) is skipped with the reason, and the schedule moves on', async () => {
    const { ctx, clock } = queue();
    const report = await defineType(ctx, 'report', { concurrency: 5 });
    await schedule(ctx, 'heavy', report, { cron: '* * * * *', weight: 4 });
    const lowered = await defineType(ctx, 'report', { concurrency: 2 });
    clock.set(T0 + 60_000 + 400);

    expect(await fireDueSchedules(asFunction(ctx, 'poller'), [lowered])).toMatchObject({ made: 0, skipped: 1 });
    const moved = await requireSchedule(ctx, 'heavy');
    expect(moved.lastFire?.skipped).toMatch(/refused the job: weight/);
    expect(moved.nextFireAtMs).toBe(T0 + 120_000);
  });
});

describe('racing an operator', () => {
  /** The poller's context, but `operator` acts once between the poller's read of a schedule and its move. */
  function pollerRacedBy(ctx: QueueContext, operator: () => Promise<void>): QueueContext {
    const poller = asFunction(ctx, 'poller');
    let operatorWrote = false;
    const send = async (command: unknown) => {
      if (!operatorWrote && command instanceof PutCommand && String(command.input.Item?.pk).startsWith(PARTITION_PREFIX.schedule)) {
        operatorWrote = true;
        await operator();
      }
      return poller.db.send(command as PutCommand);
    };
    return { ...poller, db: { send } as unknown as QueueContext['db'] };
  }

  test("a PUT that lands between a poller's read and its move is kept; the poller's move changes nothing", async () => {
    const { ctx, clock } = queue();
    const report = await defineType(ctx, 'report');
    await schedule(ctx, 'tick', report, { cron: '* * * * *' });
    clock.set(T0 + 60_000);
    const fired = await fireDueSchedules(
      pollerRacedBy(ctx, async () => {
        await schedule(ctx, 'tick', report, { cron: '0 * * * *' });
      }),
      [report],
    );
    expect(fired).toMatchObject({ made: 1, lostRaces: 1 });
    const after = await requireSchedule(ctx, 'tick');
    expect(after.cron).toBe('0 * * * *');
    expect(after.nextFireAtMs).toBe(T0 + 3_600_000);
  });

  test("a DELETE and a new PUT of the same name between a poller's read and its move are kept, though the new schedule starts at revision 1 again", async () => {
    const { ctx, clock } = queue();
    const report = await defineType(ctx, 'report');
    await schedule(ctx, 'tick', report, { cron: '* * * * *' });
    clock.set(T0 + 60_000);
    const racing = pollerRacedBy(ctx, async () => {
      await deleteSchedule(ctx, 'tick');
      clock.advance(1);
      expect((await schedule(ctx, 'tick', report, { cron: '0 * * * *' })).revision).toBe(1);
    });
    expect(await fireDueSchedules(racing, [report])).toMatchObject({ lostRaces: 1 });
    expect((await requireSchedule(ctx, 'tick')).cron).toBe('0 * * * *');
  });
});

describe('pause and resume', () => {
  test('a paused schedule makes no jobs; resumed with catch_up latest it makes one, for the latest missed time', async () => {
    const { ctx, clock } = queue();
    const report = await defineType(ctx, 'report');
    await schedule(ctx, 'tick', report, { cron: '* * * * *', catch_up: 'latest' });
    await setSchedulePaused(ctx, 'tick', true);
    clock.set(T0 + 10 * 60_000 + 30_000);
    const poller = asFunction(ctx, 'poller');
    expect((await fireDueSchedules(poller, [report])).made).toBe(0);
    expect(await jobIds(queue())).toEqual([]);
    await setSchedulePaused(ctx, 'tick', false);
    expect((await fireDueSchedules(poller, [report])).made).toBe(1);
    expect(await jobIds(queue())).toEqual(['tick@2026-11-21T10:10:00Z']);
    expect((await requireSchedule(ctx, 'tick')).nextFireAtMs).toBe(T0 + 11 * 60_000);
  });

  test('resumed with catch_up all it makes each missed job once', async () => {
    const { ctx, clock } = queue();
    const report = await defineType(ctx, 'report');
    await schedule(ctx, 'tick', report, { cron: '* * * * *', catch_up: 'all' });
    await setSchedulePaused(ctx, 'tick', true);
    clock.set(T0 + 4 * 60_000 + 30_000);
    await setSchedulePaused(ctx, 'tick', false);
    const poller = asFunction(ctx, 'poller');
    await Promise.all([fireDueSchedules(poller, [report]), fireDueSchedules(poller, [report])]);
    expect(await jobIds(queue())).toHaveLength(4);
  });
});

describe('overlap', () => {
  test('with overlap skip, a fire while the previous job is unfinished makes no job and says why', async () => {
    const { ctx, clock } = queue();
    const report = await defineType(ctx, 'report');
    await schedule(ctx, 'tick', report, { cron: '* * * * *', overlap: 'skip' });
    const poller = asFunction(ctx, 'poller');
    clock.set(T0 + 60_000);
    await fireDueSchedules(poller, [report]);
    clock.set(T0 + 120_000);
    expect(await fireDueSchedules(poller, [report])).toMatchObject({ made: 0, skipped: 1 });
    expect((await requireSchedule(ctx, 'tick')).lastFire).toMatchObject({
      fireAtMs: T0 + 120_000,
      skipped: 'overlap: job tick@2026-11-21T10:01:00Z of an earlier fire had not finished',
    });
    await cancelJob(ctx, 'report', 'tick@2026-11-21T10:01:00Z');
    clock.set(T0 + 180_000);
    expect(await fireDueSchedules(poller, [report])).toMatchObject({ made: 1, skipped: 0 });
  });

  test('with overlap allow, a fire makes its job whatever the previous one is doing', async () => {
    const { ctx, clock } = queue();
    const report = await defineType(ctx, 'report');
    await schedule(ctx, 'tick', report, { cron: '* * * * *' });
    const poller = asFunction(ctx, 'poller');
    clock.set(T0 + 60_000);
    await fireDueSchedules(poller, [report]);
    clock.set(T0 + 120_000);
    expect(await fireDueSchedules(poller, [report])).toMatchObject({ made: 1, skipped: 0 });
  });
});

describe('cost', () => {
  test('a fire costs the job its enqueue (2 WRU, and 1 for its bucket the first time the process writes there) and the schedule 3 WRU and 1 RRU; a check with nothing due is one query', async () => {
    const { ctx, clock } = queue();
    const report = await defineType(ctx, 'report');
    await schedule(ctx, 'tick', report, { cron: '* * * * *', data: { report: 'daily' } });
    const poller = asFunction(ctx, 'poller');
    const totals = trackConsumedCapacity(queue().clientsOf('poller').base);
    clock.set(T0 + 30_000);
    await fireDueSchedules(poller, [report]);
    expect(totals.byCommand).toEqual({ QueryCommand: { calls: 1, writeUnits: 0, readUnits: expect.any(Number) } });
    clock.set(T0 + 60_000);
    await fireDueSchedules(poller, [report]);
    expect(totals.byCommand.PutItemCommand).toEqual({ calls: 3, writeUnits: 6, readUnits: 0 });
    expect(totals.directoryWrites).toBe(1);
    expect(totals.byCommand.GetItemCommand).toEqual({ calls: 1, writeUnits: 0, readUnits: 1 });
  });
});
