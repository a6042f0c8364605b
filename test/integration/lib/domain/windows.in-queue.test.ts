/**
 * Time windows against DynamoDB Local (invariant 7: a job never starts outside
 * its time windows), with two pollers polling together on a fake clock:
 * enqueue moves the ready time into a window, across DST changes; a job that
 * reaches the worker after its window closed goes back to wait for the next.
 */
import { describe, expect, test, vi } from 'vitest';
import { trackConsumedCapacity } from '../../../../infra/local/aws/capacity-meter.js';
import { getJob } from '../../../../lib/queue/read-job.js';
import type { JobType } from '../../../../lib/domain/job-type.js';
import { pollOnce } from '../../../../lib/queue/poll/poll.js';
import { type CursorCache } from '../../../../lib/queue/poll/poll-state.js';
import { type PollResult } from '../../../../lib/queue/poll/poll-state.js';
import { runWorkerBatch } from '../../../../lib/queue/attempt/run-batch.js';
import type { JobHandler } from '../../../../lib/queue/attempt/run-batch.js';
import type { TimeWindow } from '../../../../lib/domain/windows.js';
import type { JobInput } from '../../../../lib/domain/job.js';
import type { WorkerBatch } from '../../../../lib/domain/invocations.js';
import { createTestApi, tableItems } from '../../../support/api.js';
import { manualClock, type TestQueue } from '../../../support/queue.js';
import { RecordingInvoker, RunningInvoker, WORKER, defineType, enqueue, freshQueuePerTest } from '../../../support/lib-fixtures.js';

const at = (iso: string): number => Date.parse(iso);
const iso = (epochMs: number): string => new Date(epochMs).toISOString();

// Hour-long buckets: the fake clock jumps across a day, and each poll scans the buckets it jumped over.
const queue = freshQueuePerTest({ settings: { bucketMs: 3_600_000 }, clock: () => manualClock(at('2026-11-21T10:00:00Z')) });

/** 05:00–07:00 in New York: 10:00Z–12:00Z in winter (EST), 09:00Z–11:00Z in summer (EDT). */
const NY_EARLY_MORNING: TimeWindow[] = [{ start: '05:00', end: '07:00', tz: 'America/New_York' }];

/** Two pollers, each with its own cursors and worker, polling the same lanes at the same moment. */
function twoPollers(q: TestQueue, handlers: Record<string, JobHandler>) {
  const pollers = [
    { invoker: new RunningInvoker(q.ctx, handlers, {}, { id: 'worker-a', host: 'host-a' }), cursors: new Map() as CursorCache },
    { invoker: new RunningInvoker(q.ctx, handlers, {}, { id: 'worker-b', host: 'host-b' }), cursors: new Map() as CursorCache },
  ];
  return {
    /** One poll by each poller at once; the jobs they claimed between them. */
    async pollTogether(jobTypes: JobType[]): Promise<number> {
      const results: PollResult[] = await Promise.all(pollers.map(({ invoker, cursors }) => pollOnce(q.as('poller'), { jobTypes, invoker, cursors })));
      return results.reduce((sum, result) => sum + result.claimed, 0);
    },
    errors: () => pollers.flatMap(({ invoker }) => invoker.errors),
  };
}

describe('a window in another time zone across a DST change', () => {
  test.each([
    {
      change: 'spring forward (2026-03-08)',
      enqueuedAt: '2026-03-07T12:00:00Z', // 07:00 EST: the window just closed
      opensAt: '2026-03-08T09:00:00Z', // 05:00 EDT; the offset of the day before would say 10:00Z
    },
    {
      change: 'fall back (2026-11-01)',
      enqueuedAt: '2026-10-31T11:00:00Z', // 07:00 EDT: the window just closed
      opensAt: '2026-11-01T10:00:00Z', // 05:00 EST; the offset of the day before would say 09:00Z
    },
  ])('$change: jobs enqueued the day before are not claimed before 05:00 local, and all start then', async ({ enqueuedAt, opensAt }) => {
    const q = queue();
    q.clock.set(at(enqueuedAt));
    const reports = await defineType(q.ctx, 'reports', { time_windows: NY_EARLY_MORNING });
    const ids = ['r-1', 'r-2', 'r-3', 'r-4', 'r-5'];
    // Due now, or later that day: every one waits for the next morning's window.
    for (const [index, id] of ids.entries()) {
      const { job } = await enqueue(q.ctx, reports, id, index === 0 ? {} : { runAfterMs: at(enqueuedAt) + index * 3 * 3_600_000 });
      expect(iso(job.runAfterMs), id).toBe(iso(at(opensAt)));
    }

    const startedAtMs = new Map<string, number>();
    const pollers = twoPollers(q, { reports: (_data, { job }) => void startedAtMs.set(job.id, q.clock.nowMs()) });
    for (let nowMs = at(enqueuedAt); nowMs < at(opensAt); nowMs += 3_600_000) {
      q.clock.set(nowMs);
      expect(await pollers.pollTogether([reports]), `claimed at ${iso(nowMs)}`).toBe(0);
    }
    q.clock.set(at(opensAt) - 1);
    expect(await pollers.pollTogether([reports]), 'claimed a millisecond early').toBe(0);

    q.clock.set(at(opensAt));
    expect(await pollers.pollTogether([reports])).toBe(ids.length);
    expect(pollers.errors()).toEqual([]);
    expect(Object.fromEntries(startedAtMs)).toEqual(Object.fromEntries(ids.map((id) => [id, at(opensAt)])));
    for (const id of ids) {
      expect(await getJob(q.ctx, 'reports', id), id).toMatchObject({ status: 'succeeded', attempt: 1 });
    }
  });
});

/** A job of a NY_EARLY_MORNING type claimed in the window's last second, with the clock then at its close. */
async function claimedAsTheWindowCloses(q: TestQueue, input: Partial<JobInput> = {}): Promise<{ reports: JobType; batch: WorkerBatch }> {
  q.clock.set(at('2026-11-21T11:59:59Z')); // 06:59:59 EST, the last second of the window
  const reports = await defineType(q.ctx, 'reports', { time_windows: NY_EARLY_MORNING, visibility_timeout_s: 60 });
  await enqueue(q.ctx, reports, 'r-1', input);
  const recording = new RecordingInvoker();
  await pollOnce(q.as('poller'), { jobTypes: [reports], invoker: recording, cursors: new Map() });
  q.clock.set(at('2026-11-21T12:00:00Z')); // 07:00 EST: closed
  return { reports, batch: recording.batches[0]! };
}

describe('a job that reaches the worker after its window closed', () => {
  test('is handed back to wait for the next window: attempt and history unchanged, run_after moved, nothing run', async () => {
    const q = queue();
    q.clock.set(at('2026-11-21T11:59:59Z')); // 06:59:59 EST, the last second of the window
    const reports = await defineType(q.ctx, 'reports', { time_windows: NY_EARLY_MORNING, visibility_timeout_s: 60 });
    await enqueue(q.ctx, reports, 'r-1');
    const recordings = [new RecordingInvoker(), new RecordingInvoker()];
    const claimed = await Promise.all(recordings.map((invoker) => pollOnce(q.as('poller'), { jobTypes: [reports], invoker, cursors: new Map() })));
    expect(claimed[0]!.claimed + claimed[1]!.claimed).toBe(1);
    const batch = recordings.flatMap((invoker) => invoker.batches)[0]!;

    q.clock.set(at('2026-11-21T12:00:00Z')); // 07:00 EST: closed
    const handler = vi.fn(() => 'ran');
    const counts = await runWorkerBatch(q.as('worker'), batch, { registry: { handlers: { reports: handler }, retryPolicies: {} }, worker: WORKER });

    expect(counts).toMatchObject({ rescheduled: 1, succeeded: 0, expired: 0 });
    expect(handler).not.toHaveBeenCalled();
    const job = await getJob(q.ctx, 'reports', 'r-1');
    expect(job).toMatchObject({ status: 'queued', attempt: 0, history: [], historyDropped: 0 });
    expect(job?.claimToken).toBeUndefined();
    expect(iso(job!.runAfterMs)).toBe('2026-11-22T10:00:00.000Z');
    const api = createTestApi(q);
    expect((await api.get('/v1/jobs/reports/r-1')).body).toMatchObject({ status: 'queued', attempt: 0, run_after: '2026-11-22T10:00:00.000Z' });
  });

  test('runs once its next window opens, as its first attempt', async () => {
    const q = queue();
    const { reports, batch } = await claimedAsTheWindowCloses(q);
    const handler = vi.fn(() => 'ran');
    const registry = { handlers: { reports: handler }, retryPolicies: {} };
    expect(await runWorkerBatch(q.as('worker'), batch, { registry, worker: WORKER })).toMatchObject({ rescheduled: 1 });

    const pollers = twoPollers(q, { reports: handler });
    q.clock.set(at('2026-11-22T09:59:59.999Z'));
    expect(await pollers.pollTogether([reports])).toBe(0);
    q.clock.set(at('2026-11-22T10:00:00Z'));
    expect(await pollers.pollTogether([reports])).toBe(1);

    expect(handler).toHaveBeenCalledTimes(1);
    const job = await getJob(q.ctx, 'reports', 'r-1');
    expect(job).toMatchObject({ status: 'succeeded', attempt: 1 });
    expect(job?.history).toEqual([expect.objectContaining({ attempt: 1, outcome: 'succeeded', startedAtMs: at('2026-11-22T10:00:00Z') })]);
  });

  test('is expired instead when its expires_at comes before the next window', async () => {
    const q = queue();
    const { batch } = await claimedAsTheWindowCloses(q, { expiresAtMs: at('2026-11-21T18:00:00Z') });
    const handler = vi.fn();
    const counts = await runWorkerBatch(q.as('worker'), batch, { registry: { handlers: { reports: handler }, retryPolicies: {} }, worker: WORKER });

    expect(counts).toMatchObject({ expired: 1, rescheduled: 0 });
    expect(handler).not.toHaveBeenCalled();
    expect(await getJob(q.ctx, 'reports', 'r-1')).toMatchObject({ status: 'expired' });
  });
});

describe('capacity', () => {
  test('handing a late job back is one guarded write of 3 units (the item, its claim-lane entry out, its queue-lane entry in), and 1 to record the next window in the bucket directory', async () => {
    const q = queue();
    const capacity = trackConsumedCapacity(q.clientsOf('worker').base);
    const { batch } = await claimedAsTheWindowCloses(q);
    const before = structuredClone(capacity);
    const counts = await runWorkerBatch(q.as('worker'), batch, { registry: { handlers: { reports: vi.fn() }, retryPolicies: {} }, worker: WORKER });

    expect(counts.rescheduled).toBe(1);
    expect(capacity.writeUnits - before.writeUnits).toBe(4);
    expect(capacity.readUnits - before.readUnits).toBe(0);
    expect(capacity.byCommand.UpdateItemCommand!.calls - (before.byCommand.UpdateItemCommand?.calls ?? 0)).toBe(1);
    expect(capacity.byCommand.PutItemCommand!.calls - (before.byCommand.PutItemCommand?.calls ?? 0)).toBe(1);
  });

  test('a job with two windows of its own still costs 8 write units from enqueue to success, besides one record per lane bucket', async () => {
    const q = queue();
    const capacity = trackConsumedCapacity(q.clients.base);
    for (const fn of ['poller', 'worker'] as const) trackConsumedCapacity(q.clientsOf(fn).base, capacity);
    const reports = await defineType(q.ctx, 'reports', { time_windows: NY_EARLY_MORNING });
    const before = structuredClone(capacity);
    const own: TimeWindow[] = [
      { start: '05:00', end: '07:00', tz: 'America/New_York' },
      { start: '22:00', end: '02:00', tz: 'Europe/Berlin' },
    ];
    for (let i = 0; i < 10; i++) await enqueue(q.ctx, reports, `r-${i}`, { data: { i, text: 'x'.repeat(150) }, timeWindows: own });
    const pollers = twoPollers(q, { reports: (data) => data });
    expect(await pollers.pollTogether([reports])).toBe(10);
    expect(pollers.errors()).toEqual([]);
    expect((capacity.writeUnits - before.writeUnits - (capacity.directoryWrites - before.directoryWrites)) / 10).toBeLessThanOrEqual(8);
  });
});

describe('a retry', () => {
  test('that would fall after the window closed waits for the next window', async () => {
    const q = queue();
    q.clock.set(at('2026-11-21T11:59:50Z'));
    const reports = await defineType(q.ctx, 'reports', { time_windows: NY_EARLY_MORNING, retry: { kind: 'fixed', delay_s: 20 } });
    await enqueue(q.ctx, reports, 'r-1');
    const pollers = twoPollers(q, {
      reports: () => {
        throw new Error('downstream busy');
      },
    });
    expect(await pollers.pollTogether([reports])).toBe(1);

    const job = await getJob(q.ctx, 'reports', 'r-1');
    expect(job).toMatchObject({ status: 'queued', attempt: 1 });
    expect(iso(job!.runAfterMs)).toBe('2026-11-22T10:00:00.000Z');
  });
});

describe('per-job windows', () => {
  test("replace the type's: each job waits for its own windows", async () => {
    const q = queue();
    q.clock.set(at('2026-11-21T10:30:00Z')); // inside the type's window (10:00Z–12:00Z)
    const reports = await defineType(q.ctx, 'reports', { time_windows: NY_EARLY_MORNING });
    // 22:00–23:00 in Tokyo (UTC+9, no DST) is 13:00Z–14:00Z, when the type's window is closed.
    const tokyoEvening: TimeWindow[] = [{ start: '22:00', end: '23:00', tz: 'Asia/Tokyo' }];
    const { job: typeWindowed } = await enqueue(q.ctx, reports, 'by-type');
    const { job: ownWindowed } = await enqueue(q.ctx, reports, 'by-job', { timeWindows: tokyoEvening });
    expect(iso(typeWindowed.runAfterMs)).toBe('2026-11-21T10:30:00.000Z');
    expect(iso(ownWindowed.runAfterMs)).toBe('2026-11-21T13:00:00.000Z');

    const started: string[] = [];
    const pollers = twoPollers(q, { reports: (_data, { job }) => void started.push(`${job.id}@${iso(q.clock.nowMs())}`) });
    expect(await pollers.pollTogether([reports])).toBe(1);
    q.clock.set(at('2026-11-21T12:59:59.999Z'));
    expect(await pollers.pollTogether([reports])).toBe(0);
    q.clock.set(at('2026-11-21T13:00:00Z'));
    expect(await pollers.pollTogether([reports])).toBe(1);

    expect(pollers.errors()).toEqual([]);
    expect(started).toEqual(['by-type@2026-11-21T10:30:00.000Z', 'by-job@2026-11-21T13:00:00.000Z']);
  });
});

describe('over the HTTP API', () => {
  const WINDOW = { start: '05:00', end: '07:00', tz: 'America/New_York' };

  async function defineReports(q: TestQueue, timeWindows: unknown = [WINDOW]) {
    const api = createTestApi(q);
    const created = await api.put('/v1/job-types/reports', { target: { kind: 'handler', name: 'echo' }, time_windows: timeWindows });
    return { api, created };
  }

  test('a job type keeps its windows and returns them', async () => {
    const { api, created } = await defineReports(queue());
    expect(created.status).toBe(201);
    expect(created.body.time_windows).toEqual([WINDOW]);
    expect((await api.get('/v1/job-types/reports')).body.time_windows).toEqual([WINDOW]);
  });

  test('enqueue answers with run_after moved into the window', async () => {
    const { api } = await defineReports(queue());
    const put = await api.put('/v1/jobs/reports/r-1', { run_after: '2026-11-21T13:00:00Z' });
    expect(put.status).toBe(201);
    expect(put.body).toMatchObject({ run_after: '2026-11-22T10:00:00.000Z', time_windows: null });
    const posted = await api.post('/v1/jobs/reports', {});
    expect(posted.status).toBe(201);
    expect(posted.body.run_after).toBe('2026-11-21T10:00:00.000Z');
  });

  test("a job's own windows are returned, and count in its body: the same again is 200, other windows 409", async () => {
    const { api } = await defineReports(queue());
    const own = [{ start: '22:00', end: '23:00', tz: 'Asia/Tokyo' }];
    const first = await api.put('/v1/jobs/reports/r-1', { data: { n: 1 }, time_windows: own });
    expect(first.status).toBe(201);
    expect(first.body).toMatchObject({ time_windows: own, run_after: '2026-11-21T13:00:00.000Z' });
    const again = await api.put('/v1/jobs/reports/r-1', { data: { n: 1 }, time_windows: own });
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
    const other = await api.put('/v1/jobs/reports/r-1', { data: { n: 1 }, time_windows: [{ ...own[0], end: '23:30' }] });
    expect(other.status).toBe(409);
    const without = await api.put('/v1/jobs/reports/r-1', { data: { n: 1 } });
    expect(without.status).toBe(409);
  });

  test('a replay keeps the job\'s own windows and is due when they next open', async () => {
    const { api } = await defineReports(queue());
    const own = [{ start: '22:00', end: '23:00', tz: 'Asia/Tokyo' }];
    expect((await api.put('/v1/jobs/reports/r-1', { time_windows: own })).status).toBe(201);
    const replayed = await api.post('/v1/jobs/reports/r-1/replay');
    expect(replayed.status).toBe(201);
    expect(replayed.body).toMatchObject({ time_windows: own, run_after: '2026-11-21T13:00:00.000Z' });
  });

  test('a bad window on a job type is 400 naming the field, and nothing is stored', async () => {
    const q = queue();
    const { created } = await defineReports(q, [WINDOW, { start: '21:00', end: '23:00', tz: 'Europe/Atlantis' }]);
    expect(created.status).toBe(400);
    expect(created.body.error.details).toEqual([{ field: 'time_windows.1.tz', message: expect.any(String) }]);
    expect(await tableItems(q)).toEqual([]);
  });

  test('a bad window on a job is 400 naming the field, and nothing is stored', async () => {
    const q = queue();
    const { api } = await defineReports(q);
    const before = await tableItems(q);
    const response = await api.put('/v1/jobs/reports/r-1', { time_windows: [{ start: '7:00', end: '09:00', tz: 'UTC' }] });
    expect(response.status).toBe(400);
    expect(response.body.error.details).toEqual([{ field: 'time_windows.0.start', message: expect.any(String) }]);
    expect(await tableItems(q)).toEqual(before);
  });

  test('an expires_at before the windows first open is 400 naming expires_at, and nothing is stored', async () => {
    const q = queue();
    const { api } = await defineReports(q);
    const before = await tableItems(q);
    const response = await api.put('/v1/jobs/reports/r-1', { run_after: '2026-11-21T13:00:00Z', expires_at: '2026-11-22T10:00:00Z' });
    expect(response.status).toBe(400);
    expect(response.body.error.details).toEqual([{ field: 'expires_at', message: expect.stringContaining('2026-11-22T10:00:00.000Z') }]);
    expect(await tableItems(q)).toEqual(before);
  });
});
