/**
 * `PATCH /v1/jobs/{type}/{id}`: a queued job's run_after, priority and expires_at change in one conditional
 * write that moves it in the due index, windows applied, the change recorded; a claim racing it leaves
 * exactly one winner.
 */
import { beforeEach, describe, expect, test } from 'vitest';
import { claimJob } from '../../../../../lib/queue/attempt/claim.js';
import { changeQueuedJob } from '../../../../../lib/queue/enqueue/change-waiting-job.js';
import { requireJobType } from '../../../../../lib/queue/catalog/job-types.js';
import { getJob } from '../../../../../lib/queue/read-job.js';
import { ConflictError } from '../../../../../lib/domain/errors.js';
import { queuedIndexKeys } from '../../../../../lib/store/keys.js';
import { createApiClient, freshApiPerTest, tableItems, type ApiClient } from '../../../../support/api.js';
import { RecordingInvoker, poll, readItem } from '../../../../support/lib-fixtures.js';
import { beforeCall } from '../../../../support/hold-calls.js';

// Hour-long buckets: the fake clock jumps an hour ahead, and a poll scans each bucket it jumped over.
const api = freshApiPerTest({ settings: { bucketMs: 3_600_000 } });
const T0 = Date.parse('2026-11-21T10:00:00.000Z');
const iso = (epochMs: number): string => new Date(epochMs).toISOString();
const HOUR = 3_600_000;
const TOMORROW = T0 + 24 * HOUR;

beforeEach(async () => {
  expect((await api().api.put('/v1/job-types/reports', { target: { kind: 'handler', name: 'echo' } })).status).toBe(201);
});

/** The due-index keys the job's item holds now. */
async function indexOf(id: string): Promise<{ gsi1pk: unknown; gsi1sk: unknown }> {
  const item = await readItem(api().queue, 'reports', id);
  return { gsi1pk: item?.gsi1pk, gsi1sk: item?.gsi1sk };
}

async function enqueueForTomorrow(id = 'r1', body: Record<string, unknown> = {}): Promise<void> {
  expect((await api().api.put(`/v1/jobs/reports/${id}`, { data: { id }, run_after: iso(TOMORROW), ...body })).status).toBe(201);
}

async function pollReports(): Promise<RecordingInvoker> {
  const { ctx } = api().queue;
  const invoker = new RecordingInvoker();
  await poll(ctx, [await requireJobType(ctx, 'reports')], invoker);
  return invoker;
}

describe('PATCH /v1/jobs/{type}/{id}', () => {
  test('run_after "now" makes a job scheduled for tomorrow due now: moved in the index, and the next poll claims it', async () => {
    const { api: client, queue } = api();
    await enqueueForTomorrow();
    expect((await pollReports()).jobs).toEqual([]);
    queue.clock.advance(5_000);
    const response = await client.patch('/v1/jobs/reports/r1', { run_after: 'now' });
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ status: 'queued', run_after: iso(T0 + 5_000), updated_at: iso(T0 + 5_000) });
    expect(await indexOf('r1')).toEqual(queuedIndexKeys(queue.ctx.settings, { type: 'reports', id: 'r1' }, T0 + 5_000, T0 + 5_000));
    expect((await pollReports()).jobs.map((job) => job.id)).toEqual(['r1']);
  });

  test('a due job moved later is not claimed until its new run_after', async () => {
    const { api: client, queue } = api();
    expect((await client.put('/v1/jobs/reports/r1', { data: 1 })).status).toBe(201);
    expect((await client.patch('/v1/jobs/reports/r1', { run_after: iso(T0 + HOUR) })).body.run_after).toBe(iso(T0 + HOUR));
    expect((await pollReports()).jobs).toEqual([]);
    queue.clock.advance(HOUR);
    expect((await pollReports()).jobs.map((job) => job.id)).toEqual(['r1']);
  });

  test('"now" leaves a job that is already due where it is, and changes nothing', async () => {
    const { api: client, queue } = api();
    expect((await client.put('/v1/jobs/reports/r1', { data: 1 })).status).toBe(201);
    queue.clock.advance(60_000);
    const before = await tableItems(queue);
    const response = await client.patch('/v1/jobs/reports/r1', { run_after: 'now' });
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ run_after: iso(T0), changes: [] });
    expect(await tableItems(queue)).toEqual(before);
  });

  test('priority and expires_at change, and expires_at null removes the expiry', async () => {
    const { api: client } = api();
    await enqueueForTomorrow('r1', { expires_at: iso(TOMORROW + HOUR) });
    const changed = await client.patch('/v1/jobs/reports/r1', { priority: 5, expires_at: iso(TOMORROW + 2 * HOUR) });
    expect(changed.status).toBe(200);
    expect(changed.body).toMatchObject({ priority: 5, expires_at: iso(TOMORROW + 2 * HOUR), run_after: iso(TOMORROW) });
    expect((await readItem(api().queue, 'reports', 'r1'))?.priority).toBe(5);
    const removed = await client.patch('/v1/jobs/reports/r1', { expires_at: null });
    expect(removed.body.expires_at).toBeNull();
    expect(await readItem(api().queue, 'reports', 'r1')).not.toHaveProperty('expiresAtMs');
  });

  test("the job records each change: who (the key's id), when, and each field from and to", async () => {
    const { api: client, queue } = api();
    const created = await client.post('/v1/keys', { scopes: ['enqueue:reports', 'read:reports'] });
    const producer = createApiClient(client.handler, created.body.key);
    await enqueueForTomorrow();
    queue.clock.advance(1_000);
    expect((await producer.patch('/v1/jobs/reports/r1', { run_after: 'now', priority: 7 })).status).toBe(200);
    queue.clock.advance(1_000);
    expect((await client.patch('/v1/jobs/reports/r1', { expires_at: iso(T0 + HOUR) })).status).toBe(200);
    expect((await client.get('/v1/jobs/reports/r1')).body).toMatchObject({
      changes: [
        { at: iso(T0 + 1_000), by: created.body.id, run_after: { from: iso(TOMORROW), to: iso(T0 + 1_000) }, priority: { from: 100, to: 7 } },
        { at: iso(T0 + 2_000), by: 'API_TOKEN', expires_at: { from: null, to: iso(T0 + HOUR) } },
      ],
      changes_dropped: 0,
      history: [],
    });
  });

  test("a new run_after is moved into the job's time windows, as at enqueue", async () => {
    const { api: client } = api();
    // 05:00–07:00 in New York is 10:00Z–12:00Z in November.
    const windows = [{ start: '05:00', end: '07:00', tz: 'America/New_York' }];
    await enqueueForTomorrow('r1', { time_windows: windows });
    const response = await client.patch('/v1/jobs/reports/r1', { run_after: '2026-11-21T13:00:00Z' });
    expect(response.body.run_after).toBe('2026-11-22T10:00:00.000Z');
    expect((await client.patch('/v1/jobs/reports/r1', { run_after: 'now' })).body.run_after).toBe(iso(T0));
  });

  test('a same-id PUT of the original body is still the idempotent 200, answering the changed job', async () => {
    const { api: client } = api();
    const original = { data: { id: 'r1' }, run_after: iso(TOMORROW) };
    expect((await client.put('/v1/jobs/reports/r1', original)).status).toBe(201);
    const changed = await client.patch('/v1/jobs/reports/r1', { run_after: 'now', priority: 1 });
    const again = await client.put('/v1/jobs/reports/r1', original);
    expect(again.status).toBe(200);
    expect(again.body).toEqual(changed.body);
    expect((await client.put('/v1/jobs/reports/r1', { ...original, priority: 1 })).status).toBe(409);
  });

  test('a job that is not queued is 409 naming its status, and changes nothing', async () => {
    const { api: client, queue } = api();
    expect((await client.put('/v1/jobs/reports/r1', { data: 1 })).status).toBe(201);
    await claimJob(queue.ctx, { type: 'reports', id: 'r1' }, await requireJobType(queue.ctx, 'reports'));
    expect((await client.put('/v1/jobs/reports/r2', { data: 2 })).status).toBe(201);
    expect((await client.delete('/v1/jobs/reports/r2')).status).toBe(200);
    const before = await tableItems(queue);
    for (const [id, status] of [['r1', 'running'], ['r2', 'cancelled']]) {
      const response = await client.patch(`/v1/jobs/reports/${id}`, { priority: 1 });
      expect(response.status).toBe(409);
      expect(response.body.error.message).toContain(status);
    }
    expect(await tableItems(queue)).toEqual(before);
  });

  test('a job or type that does not exist is 404', async () => {
    const { api: client } = api();
    expect((await client.patch('/v1/jobs/reports/nope', { priority: 1 })).status).toBe(404);
    expect((await client.patch('/v1/jobs/nope/r1', { priority: 1 })).status).toBe(404);
  });

  test.each([
    { name: 'an empty body', body: {}, field: 'body' },
    { name: 'an unknown field', body: { data: 1 }, field: 'data' },
    { name: 'a priority out of range', body: { priority: 1001 }, field: 'priority' },
    { name: 'a run_after that is no date', body: { run_after: 'tomorrow' }, field: 'run_after' },
    { name: 'a run_after without an offset', body: { run_after: '2026-11-22T10:00:00' }, field: 'run_after' },
    { name: 'an expires_at before the run_after', body: { expires_at: iso(TOMORROW - 1) }, field: 'expires_at' },
    { name: 'a run_after after the expires_at', body: { run_after: iso(TOMORROW + 3 * HOUR) }, field: 'run_after' },
  ])('$name is 400 naming $field and changes nothing', async ({ body, field }) => {
    const { api: client, queue } = api();
    await enqueueForTomorrow('r1', { expires_at: iso(TOMORROW + 2 * HOUR) });
    const before = await tableItems(queue);
    const response = await client.patch('/v1/jobs/reports/r1', body);
    expect(response.status).toBe(400);
    expect(new Set(response.body.error.details.map((detail: { field: string }) => detail.field))).toEqual(new Set([field]));
    expect(await tableItems(queue)).toEqual(before);
  });

  test('needs the scope that enqueues and cancels jobs of the type', async () => {
    const { api: client } = api();
    await enqueueForTomorrow();
    const keyWith = async (...scopes: string[]): Promise<ApiClient> =>
      createApiClient(client.handler, (await client.post('/v1/keys', { scopes })).body.key);
    expect((await (await keyWith('read:reports', 'callback:reports')).patch('/v1/jobs/reports/r1', { priority: 1 })).status).toBe(403);
    expect((await (await keyWith('enqueue:other')).patch('/v1/jobs/reports/r1', { priority: 1 })).status).toBe(403);
    expect((await (await keyWith('enqueue:reports')).patch('/v1/jobs/reports/r1', { priority: 1 })).status).toBe(200);
  });
});

describe('a change racing a claim', () => {
  test('a poller that read the entry before the move cannot claim the job at its old time', async () => {
    const { queue } = api();
    const { ctx } = queue;
    expect((await api().api.put('/v1/jobs/reports/r1', { data: 1 })).status).toBe(201);
    const jobType = await requireJobType(ctx, 'reports');
    await changeQueuedJob(queue.as('api'), jobType, 'r1', { runAfter: TOMORROW }, 'test');
    // The claim a poller makes from the entry it read at T0.
    expect((await claimJob(queue.as('poller'), { type: 'reports', id: 'r1' }, jobType)).kind).toBe('lost');
    expect(await getJob(ctx, 'reports', 'r1')).toMatchObject({ status: 'queued', runAfterMs: TOMORROW, attempt: 0 });
  });

  test('a claim landing between the change read and its write wins; the change is 409 and writes nothing', async () => {
    const { queue, api: client } = api();
    const { ctx } = queue;
    expect((await client.put('/v1/jobs/reports/r1', { data: 1 })).status).toBe(201);
    const jobType = await requireJobType(ctx, 'reports');
    let claimed = false;
    beforeCall(
      queue.clientsOf('api').base,
      ({ commandName }) => commandName === 'UpdateItemCommand',
      async () => (claimed = (await claimJob(queue.as('poller'), { type: 'reports', id: 'r1' }, jobType)).kind === 'claimed'),
    );
    const response = await client.patch('/v1/jobs/reports/r1', { run_after: iso(TOMORROW) });
    expect(claimed).toBe(true);
    expect(response.status).toBe(409);
    expect(response.body.error.message).toContain('running');
    const job = await getJob(ctx, 'reports', 'r1');
    expect(job).toMatchObject({ status: 'running', runAfterMs: T0, attempt: 1 });
    expect(job?.changes).toBeUndefined();
  });

  test("a poll racing changes of its due jobs hands each job to a worker or leaves it moved, never both", async () => {
    const { queue } = api();
    const { ctx } = queue;
    const ids = Array.from({ length: 8 }, (_, i) => `p${i}`);
    for (const id of ids) expect((await api().api.put(`/v1/jobs/reports/${id}`, { data: id })).status).toBe(201);
    const jobType = await requireJobType(ctx, 'reports');
    const invoker = new RecordingInvoker();
    // The changes start as the poll reads the due entries, so they race its claims of them.
    let racingChanges: Promise<boolean[]> | undefined;
    beforeCall(
      queue.clientsOf('poller').base,
      ({ commandName }) => commandName === 'QueryCommand',
      async () => {
        // Not awaited: the changes run alongside the poll's claims.
        racingChanges = Promise.all(ids.map((id) => changeQueuedJob(queue.as('api'), jobType, id, { runAfter: TOMORROW }, 'test').then(() => true, () => false)));
      },
    );
    await poll(ctx, [jobType], invoker);
    const changes = await racingChanges!;
    const dispatched = new Set(invoker.jobs.map((job) => job.id));
    for (const [i, id] of ids.entries()) {
      expect(dispatched.has(id)).toBe(!changes[i]);
      expect(await getJob(ctx, 'reports', id)).toMatchObject(changes[i] ? { status: 'queued', runAfterMs: TOMORROW } : { status: 'running', runAfterMs: T0 });
    }
  });

  test('changes and claims sent at once: for each job exactly one wins, and the job is as the winner left it', async () => {
    const { queue } = api();
    const { ctx } = queue;
    const JOBS = 8;
    const ids = Array.from({ length: JOBS }, (_, i) => `r${i}`);
    for (const id of ids) expect((await api().api.put(`/v1/jobs/reports/${id}`, { data: id })).status).toBe(201);
    const jobType = await requireJobType(ctx, 'reports');
    const outcomes = await Promise.all(
      ids.map(async (id) => {
        const [change, claim] = await Promise.allSettled([
          changeQueuedJob(queue.as('api'), jobType, id, { runAfter: TOMORROW }, 'test'),
          claimJob(queue.as('poller'), { type: 'reports', id }, jobType),
        ]);
        return { id, changed: change.status === 'fulfilled', claimed: claim.status === 'fulfilled' && claim.value.kind === 'claimed', change };
      }),
    );
    for (const { id, changed, claimed, change } of outcomes) {
      expect(changed !== claimed).toBe(true);
      const job = (await getJob(ctx, 'reports', id))!;
      const item = await readItem(queue, 'reports', id);
      if (changed) {
        expect(job).toMatchObject({ status: 'queued', runAfterMs: TOMORROW, attempt: 0, changeCount: 1 });
        expect(item?.gsi1sk).toBe(queuedIndexKeys(ctx.settings, job, TOMORROW, T0).gsi1sk);
      } else {
        expect(change.status === 'rejected' && change.reason).toBeInstanceOf(ConflictError);
        expect(job).toMatchObject({ status: 'running', runAfterMs: T0, attempt: 1 });
        expect(job.changes).toBeUndefined();
        expect(String(item?.gsi1pk)).toMatch(/^C#/);
      }
    }
  });
});
