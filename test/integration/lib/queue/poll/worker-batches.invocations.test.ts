/**
 * Worker batching: the poller hands up to WORKER_BATCH_SIZE claimed jobs to
 * one worker invocation, and the worker runs them concurrently, each job's
 * failure, crash or timeout ending that job's attempt only.
 */
import { InvokeCommand, LambdaClient } from '@aws-sdk/client-lambda';
import { mockClient } from 'aws-sdk-client-mock';
import { expect, test } from 'vitest';
import { createLambdaInvoker } from '../../../../../lib/aws/lambda.js';
import { listJobTypes } from '../../../../../lib/queue/catalog/job-types.js';
import { getJob } from '../../../../../lib/queue/read-job.js';
import type { CursorCache } from '../../../../../lib/queue/poll/poll-state.js';
import { RecordingInvoker, RunningInvoker, T0, defineType, enqueue, freshQueuePerTest, poll } from '../../../../support/lib-fixtures.js';

const queue = freshQueuePerTest({ settings: { workerBatchSize: 10, workerConcurrency: 4 } });

test('50 due jobs reach the workers in 5 invocations: 0.1 Lambda invocations per job at batch size 10', async () => {
  const { ctx } = queue();
  const emails = await defineType(ctx, 'emails');
  await Promise.all(Array.from({ length: 50 }, (_, i) => enqueue(ctx, emails, `e-${i}`)));
  const invoker = new RecordingInvoker();
  expect(await poll(ctx, [emails], invoker)).toMatchObject({ claimed: 50, dispatched: 50 });
  expect(invoker.batches.map((batch) => batch.jobs.length)).toEqual([10, 10, 10, 10, 10]);
  expect(invoker.batches.length / invoker.jobs.length).toBe(0.1);
});

test('at a steady 40 jobs/s with a poll every 500 ms, workers are invoked 0.1 times per job', async () => {
  const { ctx, clock } = queue();
  const emails = await defineType(ctx, 'emails');
  const jobs = 200;
  await Promise.all(Array.from({ length: jobs }, (_, i) => enqueue(ctx, emails, `e-${i}`, { runAfterMs: T0 + 1 + i * 25 })));
  const invoker = new RecordingInvoker();
  const cursors: CursorCache = new Map();
  for (let elapsedMs = 500; elapsedMs <= 5_000; elapsedMs += 500) {
    clock.set(T0 + elapsedMs);
    await poll(ctx, [emails], invoker, cursors);
  }
  expect(invoker.jobs).toHaveLength(jobs);
  // 20 jobs due per poll: two full batches each time.
  expect(invoker.batches.length / jobs).toBe(0.1);
});

test('in one batch, a crashing, a failing and a hanging job end their own attempts; the others succeed', async () => {
  const { ctx } = queue();
  const names = ['ok', 'crash', 'fail', 'hang'];
  for (const name of names) await defineType(ctx, name, { timeout_s: 1, retry: { kind: 'none' } });
  for (const name of names) await enqueue(ctx, (await listJobTypes(ctx)).find((t) => t.name === name)!, `${name}-1`);
  await enqueue(ctx, (await listJobTypes(ctx)).find((t) => t.name === 'ok')!, 'ok-2');
  const invoker = new RunningInvoker(ctx, {
    ok: (data) => data,
    crash: () => {
      throw new TypeError("Cannot read properties of undefined (reading 'id')");
    },
    fail: async () => Promise.reject(new Error('downstream said no')),
    hang: () => new Promise(() => undefined),
  });
  const result = await poll(ctx, await listJobTypes(ctx), invoker);
  expect(result.dispatched).toBe(5);
  expect(invoker.batches).toHaveLength(1);
  expect(invoker.results[0]).toMatchObject({ succeeded: 2, failed: 3, error: 0 });
  const outcome = async (type: string, id: string) => {
    const job = await getJob(ctx, type, id);
    return [job?.status, job?.history[0]?.error?.class ?? null];
  };
  expect(await outcome('ok', 'ok-1')).toEqual(['succeeded', null]);
  expect(await outcome('ok', 'ok-2')).toEqual(['succeeded', null]);
  expect(await outcome('crash', 'crash-1')).toEqual(['failed', 'TypeError']);
  expect(await outcome('fail', 'fail-1')).toEqual(['failed', 'Error']);
  expect(await outcome('hang', 'hang-1')).toEqual(['failed', 'TimeoutError']);
});

test('the payload the worker Lambda is invoked with holds no signing secret anywhere', async () => {
  const { ctx } = queue();
  const webhooks = await defineType(ctx, 'webhooks', { target: { kind: 'http', url: 'https://example.com/hook' } });
  await enqueue(ctx, webhooks, 'w-1');
  await enqueue(ctx, await defineType(ctx, 'emails'), 'e-1');
  const lambda = mockClient(LambdaClient).on(InvokeCommand).resolves({ StatusCode: 202 });
  try {
    expect(await poll(ctx, await listJobTypes(ctx), createLambdaInvoker(new LambdaClient({}), 'worker'))).toMatchObject({ dispatched: 2 });
    const payloads = lambda.commandCalls(InvokeCommand).map((call) => Buffer.from(call.args[0].input.Payload as Uint8Array).toString('utf8'));
    expect(payloads).toHaveLength(1);
    expect(payloads[0]).not.toContain('signingSecret');
    expect(payloads[0]).not.toContain(webhooks.signingSecret);
    expect(JSON.parse(payloads[0]!)).toMatchObject({ jobTypes: { webhooks: { target: { kind: 'http' } }, emails: {} } });
  } finally {
    lambda.restore();
  }
});

test('a batch carries the types of its own jobs, not every type the poller serves', async () => {
  const { ctx } = queue();
  const emails = await defineType(ctx, 'emails');
  await defineType(ctx, 'reports');
  await defineType(ctx, 'webhooks', { target: { kind: 'http', url: 'https://example.com/hook' } });
  await enqueue(ctx, emails, 'e-1');
  const invoker = new RecordingInvoker();
  await poll(ctx, await listJobTypes(ctx), invoker);
  expect(invoker.batches.map((batch) => Object.keys(batch.jobTypes))).toEqual([['emails']]);
});
