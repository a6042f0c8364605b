/**
 * A bulk cancel that includes running jobs (`include_running: true`): the jobs it selects that have started are
 * cancelled too, a running one asked to stop as DELETE asks it, one awaiting its callback ended at once; without
 * the option, started jobs are left alone as before.
 */
import { beforeEach, expect, test } from 'vitest';
import { registry } from '../../../../../functions/worker/handlers/index.js';
import type { Job } from '../../../../../lib/domain/job.js';
import { claimJob } from '../../../../../lib/queue/attempt/claim.js';
import { requireJobType } from '../../../../../lib/queue/catalog/job-types.js';
import { getJob } from '../../../../../lib/queue/read-job.js';
import { sweepOnce } from '../../../../../lib/queue/sweep/sweep.js';
import { runClaimedJob } from '../../../../../lib/queue/attempt/run-batch.js';
import { freshApiPerTest, tableItems } from '../../../../support/api.js';
import { runToEnd, seedQueued } from '../../../../support/bulk-fixtures.js';

const api = freshApiPerTest();
const WORKER = { id: 'worker-1', host: 'host-a' };

beforeEach(async () => {
  expect((await api().api.put('/v1/job-types/emails', { target: { kind: 'handler', name: 'echo' } })).status).toBe(201);
  expect((await api().api.put('/v1/job-types/hooks', { target: { kind: 'handler', name: 'await_callback' } })).status).toBe(201);
});

const ctx = () => api().queue.ctx;
const job = async (type: string, id: string): Promise<Job> => (await getJob(ctx(), type, id))!;
const start = (type: string, body: unknown) => api().api.post(`/v1/jobs/${type}/bulk`, body);

/** A job of `type` claimed by a worker that has not ended it: running. */
async function running(type: string, id: string): Promise<Job> {
  await seedQueued(ctx(), await requireJobType(ctx(), type), [{ id }]);
  const claimed = await claimJob(ctx(), { type, id }, await requireJobType(ctx(), type));
  if (claimed.kind !== 'claimed') throw new Error(`not claimed: ${claimed.kind}`);
  return claimed.job;
}

/** A `hooks` job whose handler asked for a callback: awaiting_callback. */
async function awaiting(id: string): Promise<void> {
  const claimed = await running('hooks', id);
  expect(await runClaimedJob(api().queue.as('worker'), claimed, await requireJobType(ctx(), 'hooks'), { registry, worker: WORKER })).toBe('awaiting_callback');
}

test('a bulk cancel of queued jobs leaves running ones alone', async () => {
  await seedQueued(ctx(), await requireJobType(ctx(), 'emails'), [{ id: 'waiting' }]);
  await running('emails', 'started');
  const started = await start('emails', { action: 'cancel', status: 'queued' });
  await runToEnd(api().queue.as('sweeper'), started.body.id);
  expect((await job('emails', 'waiting')).status).toBe('cancelled');
  const untouched = await job('emails', 'started');
  expect(untouched.status).toBe('running');
  expect(untouched.cancelRequestedAtMs).toBeUndefined();
});

test('a bulk cancel of running jobs with include_running asks each to stop, naming the operation, and counts it done', async () => {
  const claimed = await running('emails', 'started');
  const started = await start('emails', { action: 'cancel', status: 'running', include_running: true });
  expect(started.status).toBe(202);
  expect(started.body).toMatchObject({ status: 'running', include_running: true });
  await runToEnd(api().queue.as('sweeper'), started.body.id);
  expect((await api().api.get(`/v1/operations/${started.body.id}`)).body).toMatchObject({ state: 'succeeded', matched: 1, done: 1, skipped: 0 });
  expect(await job('emails', 'started')).toMatchObject({ status: 'running', cancelRequestedAtMs: expect.any(Number), cancelledBy: started.body.id });
  // Its worker, ending the attempt, ends it cancelled.
  const ended = await runClaimedJob(api().queue.as('worker'), claimed, await requireJobType(ctx(), 'emails'), { registry, worker: WORKER });
  expect(ended).toBe('cancelled');
  expect(await job('emails', 'started')).toMatchObject({ status: 'cancelled', cancelledBy: started.body.id });
});

test('a bulk cancel of jobs awaiting their callback with include_running ends them at once', async () => {
  await awaiting('h-1');
  const started = await start('hooks', { action: 'cancel', status: 'awaiting_callback', include_running: true });
  await runToEnd(api().queue.as('sweeper'), started.body.id);
  expect((await api().api.get(`/v1/operations/${started.body.id}`)).body).toMatchObject({ state: 'succeeded', matched: 1, done: 1 });
  expect(await job('hooks', 'h-1')).toMatchObject({ status: 'cancelled', cancelledBy: started.body.id, history: [expect.objectContaining({ outcome: 'cancelled' })] });
});

test('a running job asked to stop by a bulk cancel whose worker died ends cancelled at the sweep', async () => {
  const claimed = await running('emails', 'started');
  const started = await start('emails', { action: 'cancel', status: 'running', include_running: true });
  await runToEnd(api().queue.as('sweeper'), started.body.id);
  api().queue.clock.advance((await requireJobType(ctx(), 'emails')).visibilityTimeoutS * 1000 + 1);
  await sweepOnce(api().queue.as('sweeper'), { customPolicies: {} });
  expect(await job('emails', 'started')).toMatchObject({ status: 'cancelled', attempt: claimed.attempt });
});

test('include_running: false is the same operation as a cancel without it', async () => {
  const without = await start('emails', { action: 'cancel', status: 'queued' });
  const withFalse = await start('emails', { action: 'cancel', status: 'queued', include_running: false });
  expect(withFalse.status).toBe(200);
  expect(withFalse.body.id).toBe(without.body.id);
  expect(withFalse.body.include_running).toBe(false);
});

test.each([
  { name: 'a cancel of running jobs without include_running', body: { action: 'cancel', status: 'running' }, field: 'status' },
  { name: 'a cancel of jobs awaiting their callback with include_running false', body: { action: 'cancel', status: 'awaiting_callback', include_running: false }, field: 'status' },
  { name: 'a retry with include_running', body: { action: 'retry', status: 'failed', include_running: true }, field: 'include_running' },
  { name: 'include_running that is not a boolean', body: { action: 'cancel', status: 'queued', include_running: 'yes' }, field: 'include_running' },
])('$name is 400 naming $field, and changes nothing', async ({ body, field }) => {
  await running('emails', 'started');
  const before = await tableItems(api().queue);
  const response = await start('emails', body);
  expect(response.status).toBe(400);
  expect(response.body.error.details.map((detail: { field: string }) => detail.field)).toContain(field);
  expect(await tableItems(api().queue)).toEqual(before);
});
