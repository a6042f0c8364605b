/**
 * W3C trace context: an enqueue's `traceparent` is kept with its jobs, each attempt runs as a child span of it
 * (the handler's context, an http target's header), lifecycle events carry it, and a schedule's fire starts a
 * trace of its own.
 */
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, expect, test } from 'vitest';
import { fixedSecret } from '../../../../lib/aws/secrets.js';
import { createMemoryPublisher } from '../../../../lib/domain/lifecycle-events.js';
import { parseTraceparent } from '../../../../lib/domain/trace-context.js';
import { fireDueSchedules } from '../../../../lib/queue/schedules/fire-schedules.js';
import { listJobTypes } from '../../../../lib/queue/catalog/job-types.js';
import { requireJob } from '../../../../lib/queue/read-job.js';
import type { JobContext } from '../../../../lib/queue/attempt/run-batch.js';
import { runHttpTarget } from '../../../../lib/targets/http.js';
import { createTestApi, type ApiClient } from '../../../support/api.js';
import { createTestQueue, type TestQueue } from '../../../support/queue.js';
import { defineType, enqueue, poll, readItem, RunningInvoker } from '../../../support/lib-fixtures.js';

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const TRACEPARENT = `00-${TRACE_ID}-00f067aa0ba902b7-01`;

let queue: TestQueue;
let events: ReturnType<typeof createMemoryPublisher>;
let api: ApiClient;

beforeEach(async () => {
  events = createMemoryPublisher();
  queue = await createTestQueue({ events });
  api = createTestApi(queue);
  await api.put('/v1/job-types/traced', { target: { kind: 'handler', name: 'echo' } });
});
afterEach(() => queue.drop());

test('an enqueue keeps its traceparent with the job, and GET shows it', async () => {
  const created = await api.put('/v1/jobs/traced/t-1', { data: { n: 1 } }, { headers: { traceparent: TRACEPARENT } });
  expect(created.status).toBe(201);
  expect(created.body.traceparent).toBe(TRACEPARENT);
  expect((await api.get('/v1/jobs/traced/t-1')).body.traceparent).toBe(TRACEPARENT);
});

test('a job enqueued without one has none, and stores nothing for it', async () => {
  expect((await api.put('/v1/jobs/traced/t-1', { data: { n: 1 } })).body.traceparent).toBeNull();
  expect(await readItem(queue, 'traced', 't-1')).not.toHaveProperty('traceparent');
});

test('a traceparent that is not a trace context is a 400 naming it, and nothing is stored', async () => {
  const refused = await api.put('/v1/jobs/traced/t-1', { data: { n: 1 } }, { headers: { traceparent: '00-abc-def-01' } });
  expect(refused.status).toBe(400);
  expect(refused.body.error.details.map((detail: { field: string }) => detail.field)).toEqual(['traceparent']);
  expect(await readItem(queue, 'traced', 't-1')).toBeUndefined();
});

test('the same enqueue again in another trace is the same job, kept in its first trace', async () => {
  await api.put('/v1/jobs/traced/t-1', { data: { n: 1 } }, { headers: { traceparent: TRACEPARENT } });
  const again = await api.put('/v1/jobs/traced/t-1', { data: { n: 1 } }, { headers: { traceparent: `00-${'a'.repeat(32)}-${'b'.repeat(16)}-01` } });
  expect(again.status).toBe(200);
  expect(again.body.traceparent).toBe(TRACEPARENT);
});

test('every job of a batch is kept in the batch request’s trace', async () => {
  const answer = await api.post('/v1/jobs/traced/batch', { jobs: [{ id: 'b-1', data: 1 }, { data: 2 }] }, { headers: { traceparent: TRACEPARENT } });
  expect(answer.body.results.map((result: { job: { traceparent: string } }) => result.job.traceparent)).toEqual([TRACEPARENT, TRACEPARENT]);
});

test('the handler runs as a child span of the enqueue: same trace and flags, a span id of its own', async () => {
  const jobType = await defineType(queue.ctx, 'spans');
  await enqueue(queue.ctx, jobType, 's-1', { traceparent: TRACEPARENT });
  const seen: (string | undefined)[] = [];
  const invoker = new RunningInvoker(queue.ctx, { spans: (_data: unknown, context: JobContext) => seen.push(context.traceparent) });
  await poll(queue.ctx, [jobType], invoker);
  expect(seen).toHaveLength(1);
  const span = parseTraceparent(seen[0]!);
  expect(span).toMatchObject({ traceId: TRACE_ID, flags: '01' });
  expect(span?.spanId).not.toBe(parseTraceparent(TRACEPARENT)?.spanId);
});

test('a handler of a job without a trace gets none', async () => {
  const jobType = await defineType(queue.ctx, 'spans');
  await enqueue(queue.ctx, jobType, 's-1');
  const seen: (string | undefined)[] = [];
  await poll(queue.ctx, [jobType], new RunningInvoker(queue.ctx, { spans: (_data: unknown, context: JobContext) => seen.push(context.traceparent) }));
  expect(seen).toEqual([undefined]);
});

test('lifecycle events carry the job’s traceparent', async () => {
  const jobType = await defineType(queue.ctx, 'spans');
  await enqueue(queue.ctx, jobType, 's-1', { traceparent: TRACEPARENT });
  await poll(queue.ctx, [jobType], new RunningInvoker(queue.ctx, { spans: () => 'done' }));
  expect(events.events).toEqual([expect.objectContaining({ name: 'job.succeeded', id: 's-1', traceparent: TRACEPARENT })]);
});

test('an http target gets the attempt’s span as its traceparent header', async () => {
  const received: (string | string[] | undefined)[] = [];
  const server: Server = createServer((request, response) => {
    received.push(request.headers.traceparent);
    request.resume();
    response.writeHead(204).end();
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  try {
    const jobType = await defineType(queue.ctx, 'spans');
    const { job } = await enqueue(queue.ctx, jobType, 's-1', { traceparent: TRACEPARENT });
    const attemptSpan = `00-${TRACE_ID}-1111111111111111-01`;
    const outcome = await runHttpTarget(
      { job, jobType, signal: new AbortController().signal, heartbeat: async () => undefined, progress: async () => undefined, nowMs: () => Date.now(), traceparent: attemptSpan },
      { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, requestTimeoutS: 5, allowLinkLocal: false },
      'signing-secret',
      { apiBaseUrl: 'http://localhost:3000', callbackTokenSecret: fixedSecret('callback-secret') },
    );
    expect(outcome).toEqual({ kind: 'succeeded' });
    expect(received).toEqual([attemptSpan]);
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

test('a schedule’s fire starts a trace of its own for the job it makes', async () => {
  await api.put('/v1/schedules/nightly', { job_type: 'traced', cron: '* * * * *', data: {} });
  queue.clock.advance(120_000);
  await fireDueSchedules(queue.as('poller'), await listJobTypes(queue.ctx));
  const listed = await api.get('/v1/jobs/traced?status=queued');
  const [made] = listed.body.jobs;
  expect(parseTraceparent(made.traceparent)).toMatchObject({ flags: '01' });
  expect((await requireJob(queue.ctx, 'traced', made.id)).traceparent).toBe(made.traceparent);
});
