/**
 * docs/guides/targets.md `http` targets against real HTTP servers on loopback: the example
 * downstream (infra/local/downstream.ts) and a scripted one, with the api
 * served over HTTP so downstreams call back through `callback_url`.
 */
import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DeleteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, afterEach, beforeAll, beforeEach, expect, test } from 'vitest';
import { createApiHandler } from '../../../../functions/api/app.js';
import { createAuthorizer } from '../../../../functions/authorizer/app.js';
import { registry } from '../../../../functions/worker/handlers/index.js';
import { createDownstream, type DownstreamJob } from '../../../../infra/local/downstream.js';
import { createLocalGateway } from '../../../../infra/local/aws/gateway.js';
import { createHttpServer, type ApiHandler } from '../../../../infra/local/http-server.js';
import { verifyCallbackToken } from '../../../../lib/domain/callback-tokens.js';
import { createMemoryPublisher } from '../../../../lib/domain/lifecycle-events.js';
import { JOB_TYPES_REFRESH_MS, listJobTypes, putJobType } from '../../../../lib/queue/catalog/job-types.js';
import { createSigningSecretCache } from '../../../../lib/queue/catalog/job-type-cache.js';
import { type SigningSecrets } from '../../../../lib/targets/target.js';
import { enqueueJob } from '../../../../lib/queue/enqueue/enqueue.js';
import { requireJob } from '../../../../lib/queue/read-job.js';
import { jobTypeKey } from '../../../../lib/store/keys.js';
import { parseJobTypeDefinition } from '../../../../lib/wire/job-types.js';
import type { Job } from '../../../../lib/domain/job.js';
import type { JobType } from '../../../../lib/domain/job-type.js';
import { pollOnce } from '../../../../lib/queue/poll/poll.js';
import type { WorkerBatch } from '../../../../lib/domain/invocations.js';
import { signatureOf, SIGNATURE_HEADER, TIMESTAMP_HEADER } from '../../../../lib/domain/signing.js';
import { sweepOnce } from '../../../../lib/queue/sweep/sweep.js';
import { resolveWithSystemDns } from '../../../../lib/targets/addresses.js';
import { runWorkerBatch } from '../../../../lib/queue/attempt/run-batch.js';
import type { BatchResult } from '../../../../lib/queue/attempt/run-batch.js';
import { ADMIN_TOKEN, createTestApi } from '../../../support/api.js';
import { createTestQueue, manualClock, type TestQueue } from '../../../support/queue.js';
import { fixedSecret } from '../../../../lib/aws/secrets.js';
import { eventually } from '../../../support/eventually.js';

const CALLBACK_SECRET = 'callback-token-secret-for-tests';
const WORKER = { id: 'worker-1', host: 'host-a' };

interface Scripted {
  status: number;
  headers?: Record<string, string>;
  body?: unknown;
  delayMs?: number;
  /** Send the status line and headers at once, the body only after this long. */
  bodyDelayMs?: number;
}

interface Received {
  headers: IncomingHttpHeaders;
  rawBody: string;
  job: DownstreamJob;
}

async function listenOnLoopback(server: Server): Promise<string> {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function close(server: Server): Promise<void> {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
}

/** A downstream that answers whatever the test scripted and records every request. */
let scripted: { url: string; server: Server; received: Received[]; answer: (job: DownstreamJob) => Scripted };
/** The example downstream, knowing the secret of whichever type the test created last. */
let example: { url: string; server: Server; secret: string; callbacks: number[] };
let api: { url: string; server: Server };
let queue: TestQueue;
/** The worker's secrets, kept across the test's batches as a worker process keeps them across its invocations. */
let signingSecrets: SigningSecrets;
let events: ReturnType<typeof createMemoryPublisher>;
/** Host names the worker resolves; anything else goes to the system resolver. */
const fakeDns = new Map<string, string>();

beforeAll(async () => {
  const scriptedServer = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const rawBody = Buffer.concat(chunks).toString('utf8');
      const job = JSON.parse(rawBody) as DownstreamJob;
      scripted.received.push({ headers: request.headers, rawBody, job });
      const answer = scripted.answer(job);
      if (answer.bodyDelayMs !== undefined) {
        response.writeHead(answer.status, { 'content-type': 'application/json' });
        response.flushHeaders();
        setTimeout(() => response.destroyed || response.end(JSON.stringify(answer.body ?? {})), answer.bodyDelayMs);
        return;
      }
      setTimeout(() => {
        if (response.destroyed) return;
        response.writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers });
        response.end(answer.body === undefined ? '' : JSON.stringify(answer.body));
      }, answer.delayMs ?? 0);
    });
  });
  scripted = { url: await listenOnLoopback(scriptedServer), server: scriptedServer, received: [], answer: () => ({ status: 200 }) };
  example = { url: '', server: createServer(), secret: '', callbacks: [] };
  // The example downstream reads the secret per request, so one server serves every test's type.
  const exampleServer = createServer((request, response) =>
    createDownstream({ secret: example.secret, callbackDelayMs: 20, onCallback: (_job, status) => example.callbacks.push(status) }).emit('request', request, response),
  );
  example = { ...example, server: exampleServer, url: await listenOnLoopback(exampleServer) };
  // The api handler is rebuilt per test over that test's table; the server stays.
  let handler: ApiHandler = async () => ({ statusCode: 503 });
  const apiServer = createHttpServer((event, context) => handler(event, context));
  api = { server: apiServer, url: await listenOnLoopback(apiServer) };
  setApiHandler = (next) => (handler = next);
});

let setApiHandler: (handler: ApiHandler) => void;

afterAll(async () => {
  await Promise.all([close(scripted.server), close(example.server), close(api.server)]);
});

beforeEach(async () => {
  events = createMemoryPublisher();
  // The worker signs with the queue's clock and downstreams check it against theirs: start at the real time.
  queue = await createTestQueue({ clock: manualClock(Date.now()), events });
  signingSecrets = createSigningSecretCache(queue.as('worker'));
  // The api behind the authorizer, as API Gateway runs them: callback tokens are checked there.
  const authorizer = createAuthorizer({ ctx: queue.as('authorizer'), staticAdminToken: ADMIN_TOKEN, callbackTokenSecret: fixedSecret(CALLBACK_SECRET) });
  setApiHandler(createLocalGateway({ authorizer, api: createApiHandler({ ctx: queue.as('api'), registry }) as ApiHandler }));
  scripted.received = [];
  example.callbacks = [];
  fakeDns.clear();
});

afterEach(async () => {
  await queue.drop();
});

async function defineHttpType(name: string, body: Record<string, unknown>): Promise<JobType> {
  const definition = parseJobTypeDefinition({ retry: { kind: 'fixed', delay_s: 1 }, ...body });
  const { jobType, newSigningSecret } = await putJobType(queue.ctx, name, definition);
  if (newSigningSecret) example.secret = newSigningSecret;
  return jobType;
}

async function enqueue(jobType: JobType, id: string, data: unknown = { n: 1 }): Promise<void> {
  await enqueueJob(queue.ctx, jobType, id, { data, priority: 100, weight: 1 });
}

/**
 * One poll of the types given (default: as the table holds them now); every claimed batch runs in the worker,
 * as `received` turns it into the invocation's event, with http targets wired to the api and the fake DNS.
 */
async function runDue(
  options: { jobTypes?: JobType[]; received?: (batch: WorkerBatch) => WorkerBatch } = {},
): Promise<BatchResult[]> {
  const results: BatchResult[] = [];
  const invoker = {
    invoke: async (batch: WorkerBatch) => {
      const event = options.received ? options.received(batch) : structuredClone(batch);
      results.push(
        await runWorkerBatch(queue.as('worker'), event, {
          registry,
          worker: WORKER,
          signingSecrets,
          targets: {
            http: {
              apiBaseUrl: api.url,
              callbackTokenSecret: fixedSecret(CALLBACK_SECRET),
              resolveHost: async (hostname) => {
                const faked = fakeDns.get(hostname);
                return faked ? [{ address: faked, family: faked.includes(':') ? 6 : 4 }] : resolveWithSystemDns(hostname);
              },
            },
          },
        }),
      );
    },
  };
  await pollOnce(queue.as('poller'), { jobTypes: options.jobTypes ?? (await listJobTypes(queue.ctx)), invoker, cursors: new Map() });
  return results;
}

const signedWith = (request: Received, secret: string): boolean =>
  request.headers[SIGNATURE_HEADER] === signatureOf(secret, Number(request.headers[TIMESTAMP_HEADER]), request.rawBody);

const typeItem = (name: string) => ({ TableName: queue.tableName, Key: jobTypeKey(name) });

const job = (type: string, id: string): Promise<Job> => requireJob(queue.ctx, type, id);
const eventNames = (id: string): string[] => events.events.filter((event) => event.id === id).map((event) => event.name);


test('a 200 answer succeeds the job and keeps the result the downstream returned', async () => {
  const type = await defineHttpType('sync', { target: { kind: 'http', url: `${example.url}/jobs` } });
  await enqueue(type, 'j1', { to: 'ada' });
  expect(await runDue()).toMatchObject([{ succeeded: 1 }]);
  const done = await job('sync', 'j1');
  expect(done.status).toBe('succeeded');
  expect(done.result).toEqual({ handled_by: 'example-downstream', data: { to: 'ada' } });
  expect(eventNames('j1')).toEqual(['job.succeeded']);
});

test('the request carries the job, a callback URL for this attempt, and a signature over timestamp and body', async () => {
  const type = await defineHttpType('envelope', { target: { kind: 'http', url: `${scripted.url}/hook?key=abc` } });
  await enqueue(type, 'j1', { to: 'ada' });
  await runDue();
  const [request] = scripted.received;
  expect(request?.job).toMatchObject({ id: 'j1', type: 'envelope', attempt: 1, data: { to: 'ada' } });
  const callback = new URL(request!.job.callback_url);
  expect(`${callback.origin}${callback.pathname}`).toBe(`${api.url}/v1/jobs/envelope/j1`);
  expect(verifyCallbackToken(CALLBACK_SECRET, callback.searchParams.get('token') ?? '', { type: 'envelope', id: 'j1' })).toBe(1);
  const timestamp = Number(request!.headers[TIMESTAMP_HEADER]);
  expect(timestamp).toBe(Math.floor(queue.clock.nowMs() / 1000));
  expect(request!.headers[SIGNATURE_HEADER]).toBe(signatureOf(type.signingSecret!, timestamp, request!.rawBody));
});

test("a job is signed with its type's secret though the batch the worker received carries none", async () => {
  const type = await defineHttpType('unsent', { target: { kind: 'http', url: scripted.url } });
  await enqueue(type, 'j1');
  const events: string[] = [];
  const asLambdaDelivers = (batch: WorkerBatch): WorkerBatch => {
    events.push(JSON.stringify(batch));
    return JSON.parse(events.at(-1)!) as WorkerBatch;
  };
  expect(await runDue({ received: asLambdaDelivers })).toMatchObject([{ succeeded: 1 }]);
  expect(events[0]).not.toContain('signingSecret');
  expect(events[0]).not.toContain(type.signingSecret);
  expect(signedWith(scripted.received[0]!, type.signingSecret!)).toBe(true);
});

test('the worker signs with the secret kept on the type, never one the invocation carries', async () => {
  const type = await defineHttpType('forged', { target: { kind: 'http', url: scripted.url } });
  await enqueue(type, 'j1');
  const forged: JobType = { ...type, signingSecret: 'whsec_from-the-event' };
  expect(await runDue({ received: (batch) => ({ jobs: batch.jobs, jobTypes: { forged } }) })).toMatchObject([{ succeeded: 1 }]);
  expect(signedWith(scripted.received[0]!, type.signingSecret!)).toBe(true);
});

test('a secret changed in the type item is signed with once the cache period has passed, not before', async () => {
  const type = await defineHttpType('rotated', { target: { kind: 'http', url: scripted.url } });
  const rotated = 'whsec_rotated';
  await enqueue(type, 'j1');
  await runDue();
  await queue.clients.db.send(
    new UpdateCommand({ ...typeItem('rotated'), UpdateExpression: 'SET signingSecret = :secret', ExpressionAttributeValues: { ':secret': rotated } }),
  );
  await enqueue(type, 'j2');
  await runDue();
  queue.clock.advance(JOB_TYPES_REFRESH_MS);
  await enqueue(type, 'j3');
  await runDue();
  const signer = (request: Received) => [type.signingSecret, rotated].find((secret) => signedWith(request, secret!));
  expect(scripted.received.map((request) => [request.job.id, signer(request)])).toEqual([
    ['j1', type.signingSecret],
    ['j2', type.signingSecret],
    ['j3', rotated],
  ]);
});

test('a job whose type item holds no signing secret any more fails without retry, as an unconfigured target does', async () => {
  const type = await defineHttpType('unsigned', { target: { kind: 'http', url: scripted.url }, attempts: 3 });
  await enqueue(type, 'j1');
  await queue.clients.db.send(new UpdateCommand({ ...typeItem('unsigned'), UpdateExpression: 'REMOVE signingSecret' }));
  expect(await runDue()).toMatchObject([{ failed: 1, error: 0 }]);
  expect((await job('unsigned', 'j1')).history[0]?.error).toEqual({ class: 'TargetNotConfiguredError', message: 'job type "unsigned" has no signing secret' });
  expect(scripted.received).toEqual([]);
});

test('a job whose type item is gone by the time the worker runs it fails the same way', async () => {
  const type = await defineHttpType('vanished', { target: { kind: 'http', url: scripted.url }, attempts: 3 });
  await enqueue(type, 'j1');
  const typesAsPolled = await listJobTypes(queue.ctx);
  await queue.clients.db.send(new DeleteCommand(typeItem('vanished')));
  expect(await runDue({ jobTypes: typesAsPolled })).toMatchObject([{ failed: 1, error: 0 }]);
  expect((await job('vanished', 'j1')).history[0]?.error?.class).toBe('TargetNotConfiguredError');
  expect(scripted.received).toEqual([]);
});

test('a 202 leaves the job awaiting its callback, and the downstream completes it through callback_url without an API key', async () => {
  const type = await defineHttpType('later', { target: { kind: 'http', url: example.url }, timeout_s: 600 });
  await enqueue(type, 'j1', { reply: 'callback' });
  expect(await runDue()).toMatchObject([{ awaiting_callback: 1 }]);
  const done = await eventually(() => job('later', 'j1'), (current) => current.status === 'succeeded');
  expect(done.status).toBe('succeeded');
  expect(done.result).toEqual({ handled_by: 'example-downstream', later: true });
  expect(await eventually(async () => example.callbacks, (callbacks) => callbacks.length > 0)).toEqual([200]);
  expect(eventNames('j1')).toEqual(['job.succeeded']);
});

test('a 202 without a callback times out after timeout_s, is retried, and ends dead when attempts run out', async () => {
  scripted.answer = () => ({ status: 202 });
  const type = await defineHttpType('silent', { target: { kind: 'http', url: scripted.url }, attempts: 2, timeout_s: 5 });
  await enqueue(type, 'j1');
  expect(await runDue()).toMatchObject([{ awaiting_callback: 1 }]);
  queue.clock.advance(5_000);
  expect(await sweepOnce(queue.as('sweeper'), { customPolicies: {} })).toMatchObject({ requeued: 1 });
  queue.clock.advance(1_000);
  expect(await runDue()).toMatchObject([{ awaiting_callback: 1 }]);
  queue.clock.advance(5_000);
  expect(await sweepOnce(queue.as('sweeper'), { customPolicies: {} })).toMatchObject({ ended: 1 });
  const dead = await job('silent', 'j1');
  expect(dead.status).toBe('failed');
  expect(dead.history.map((entry) => [entry.attempt, entry.outcome, entry.error?.class])).toEqual([
    [1, 'timed_out', 'CallbackTimeoutError'],
    [2, 'timed_out', 'CallbackTimeoutError'],
  ]);
  expect(scripted.received.map((request) => request.job.attempt)).toEqual([1, 2]);
  expect(eventNames('j1')).toEqual(['job.failed', 'job.failed', 'job.dead']);
});

test('a 500 fails the attempt and retries it after the backoff', async () => {
  scripted.answer = () => ({ status: 500, body: { error: 'database down' } });
  const type = await defineHttpType('flaky', {
    target: { kind: 'http', url: scripted.url },
    retry: { kind: 'exponential', base_s: 4, factor: 2, max_s: 60, jitter: 0 },
  });
  await enqueue(type, 'j1');
  expect(await runDue()).toMatchObject([{ retrying: 1 }]);
  const retrying = await job('flaky', 'j1');
  expect(retrying.status).toBe('queued');
  expect(retrying.runAfterMs).toBe(queue.clock.nowMs() + 4_000);
  expect(retrying.history[0]?.error).toMatchObject({ class: 'HttpError', message: expect.stringContaining('answered 500') });
  expect(eventNames('j1')).toEqual(['job.failed']);
});

test('a 400 fails the job at once, whatever attempts remain', async () => {
  scripted.answer = () => ({ status: 400, body: { error: 'no such customer' } });
  const type = await defineHttpType('strict', { target: { kind: 'http', url: scripted.url }, attempts: 5 });
  await enqueue(type, 'j1');
  expect(await runDue()).toMatchObject([{ failed: 1 }]);
  const failed = await job('strict', 'j1');
  expect(failed.status).toBe('failed');
  expect(failed.attempt).toBe(1);
  expect(failed.history[0]?.error?.message).toContain('answered 400: {"error":"no such customer"}');
  expect(eventNames('j1')).toEqual(['job.failed', 'job.dead']);
});

test('a 429 is retried after the Retry-After the downstream asked for, not the backoff', async () => {
  scripted.answer = () => ({ status: 429, headers: { 'retry-after': '7' } });
  const type = await defineHttpType('limited', { target: { kind: 'http', url: scripted.url } });
  await enqueue(type, 'j1');
  expect(await runDue()).toMatchObject([{ retrying: 1 }]);
  expect((await job('limited', 'j1')).runAfterMs).toBe(queue.clock.nowMs() + 7_000);
});

test('a 408 is retried like a 429', async () => {
  scripted.answer = () => ({ status: 408 });
  const type = await defineHttpType('slow-client', { target: { kind: 'http', url: scripted.url } });
  await enqueue(type, 'j1');
  expect(await runDue()).toMatchObject([{ retrying: 1 }]);
});

test('a downstream slower than the request deadline fails the attempt as a timeout, which is retried', async () => {
  scripted.answer = () => ({ status: 200, delayMs: 2_500 });
  const type = await defineHttpType('sluggish', { target: { kind: 'http', url: scripted.url, request_timeout_s: 1 } });
  await enqueue(type, 'j1');
  expect(await runDue()).toMatchObject([{ retrying: 1 }]);
  expect((await job('sluggish', 'j1')).history[0]?.error).toMatchObject({ class: 'TimeoutError' });
});

test('a downstream that answers at once but sends its body past the deadline is a timeout too', async () => {
  scripted.answer = () => ({ status: 200, bodyDelayMs: 2_500, body: { result: 'late' } });
  const type = await defineHttpType('dribbling', { target: { kind: 'http', url: scripted.url, request_timeout_s: 1 } });
  await enqueue(type, 'j1');
  expect(await runDue()).toMatchObject([{ retrying: 1 }]);
  expect((await job('dribbling', 'j1')).history[0]?.error).toMatchObject({ class: 'TimeoutError' });
});

test('a refused connection fails the attempt and is retried', async () => {
  const closed = createServer();
  const url = await listenOnLoopback(closed);
  await close(closed);
  const type = await defineHttpType('gone', { target: { kind: 'http', url } });
  await enqueue(type, 'j1');
  expect(await runDue()).toMatchObject([{ retrying: 1 }]);
  expect((await job('gone', 'j1')).history[0]?.error).toMatchObject({ class: 'ConnectionError', message: expect.stringContaining('ECONNREFUSED') });
});

test('the example downstream rejects a tampered body, a signature under another secret, and a stale timestamp', async () => {
  await defineHttpType('signed', { target: { kind: 'http', url: example.url } });
  const body = JSON.stringify({ id: 'j1', type: 'signed', attempt: 1, data: {}, callback_url: 'http://127.0.0.1/' });
  const post = (rawBody: string, timestampS: number, signature: string) =>
    fetch(example.url, { method: 'POST', body: rawBody, headers: { [TIMESTAMP_HEADER]: String(timestampS), [SIGNATURE_HEADER]: signature } });
  const nowS = Math.floor(Date.now() / 1000);
  expect((await post(body, nowS, signatureOf(example.secret, nowS, body))).status).toBe(200);
  expect((await post(body.replace('"data":{}', '"data":{"admin":true}'), nowS, signatureOf(example.secret, nowS, body))).status).toBe(401);
  expect((await post(body, nowS, signatureOf('whsec_not-the-secret', nowS, body))).status).toBe(401);
  expect((await post(body, nowS - 301, signatureOf(example.secret, nowS - 301, body))).status).toBe(401);
});

test('a callback token for attempt 1 cannot complete attempt 2 (409); the attempt-2 token can', async () => {
  scripted.answer = () => ({ status: 202 });
  const type = await defineHttpType('twice', { target: { kind: 'http', url: scripted.url }, attempts: 3, timeout_s: 5 });
  await enqueue(type, 'j1');
  await runDue();
  queue.clock.advance(5_000);
  await sweepOnce(queue.as('sweeper'), { customPolicies: {} });
  queue.clock.advance(1_000);
  await runDue();
  const [first, second] = scripted.received.map((request) => request.job.callback_url);
  const callback = (url: string, attempt: number) =>
    fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ status: 'succeeded', attempt }) });

  expect((await callback(first!, 2)).status).toBe(409);
  expect((await callback(first!, 1)).status).toBe(409);
  expect((await job('twice', 'j1')).status).toBe('awaiting_callback');
  expect((await callback(second!, 2)).status).toBe(200);
  expect((await job('twice', 'j1')).status).toBe('succeeded');
});

test('a callback token works on its job only: another job or a forged token is 403, another route 401', async () => {
  scripted.answer = () => ({ status: 202 });
  const type = await defineHttpType('scoped', { target: { kind: 'http', url: scripted.url }, timeout_s: 600 });
  await enqueue(type, 'j1');
  await enqueue(type, 'j2');
  await runDue();
  const token = new URL(scripted.received.find((request) => request.job.id === 'j1')!.job.callback_url).searchParams.get('token');
  const post = (path: string, body: unknown) =>
    fetch(`${api.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  expect((await post(`/v1/jobs/scoped/j2?token=${token}`, { status: 'succeeded', attempt: 1 })).status).toBe(403);
  expect((await post(`/v1/jobs/scoped/j1?token=v1.1.${'A'.repeat(43)}`, { status: 'succeeded', attempt: 1 })).status).toBe(403);
  expect((await post(`/v1/jobs/scoped/j1/replay?token=${token}`, {})).status).toBe(401);
  expect((await fetch(`${api.url}/v1/jobs/scoped/j1?token=${token}`)).status).toBe(401);
  expect((await post(`/v1/jobs/scoped/j1/heartbeat?token=${token}`, { attempt: 1, extend_s: 60 })).status).toBe(200);
  expect((await post(`/v1/jobs/scoped/j1?token=${token}`, { status: 'failed', attempt: 1, retryable: false })).status).toBe(200);
  expect((await job('scoped', 'j1')).status).toBe('failed');
  expect((await job('scoped', 'j2')).status).toBe('awaiting_callback');
});

test('a host name resolving to the metadata address is refused without a request, and not retried', async () => {
  fakeDns.set('metadata.internal.test', '169.254.169.254');
  const type = await defineHttpType('sneaky', { target: { kind: 'http', url: 'http://metadata.internal.test/latest/meta-data/' }, attempts: 3 });
  await enqueue(type, 'j1');
  expect(await runDue()).toMatchObject([{ failed: 1 }]);
  const refused = await job('sneaky', 'j1');
  expect(refused.history[0]?.error).toMatchObject({ class: 'AddressRefusedError', message: expect.stringContaining('169.254.169.254') });
  expect(eventNames('j1')).toEqual(['job.failed', 'job.dead']);
});

test('a host name is resolved, checked and connected to at the address that passed', async () => {
  fakeDns.set('downstream.internal.test', '127.0.0.1');
  const port = new URL(scripted.url).port;
  scripted.answer = () => ({ status: 200, body: { result: 'via name' } });
  const type = await defineHttpType('named', { target: { kind: 'http', url: `http://downstream.internal.test:${port}/hook` } });
  await enqueue(type, 'j1');
  expect(await runDue()).toMatchObject([{ succeeded: 1 }]);
  expect((await job('named', 'j1')).result).toBe('via name');
  expect(scripted.received[0]?.headers.host).toBe(`downstream.internal.test:${port}`);
});

test('a literal IPv6 metadata address stored on a type is refused at run time too', async () => {
  const type = await defineHttpType('v6', { target: { kind: 'http', url: 'http://[fd00:ec2::254]/latest' } });
  await enqueue(type, 'j1');
  expect(await runDue()).toMatchObject([{ failed: 1 }]);
  expect((await job('v6', 'j1')).history[0]?.error?.class).toBe('AddressRefusedError');
});

test('the api refuses a job type whose URL is a metadata address unless allow_link_local is set', async () => {
  const client = createTestApi(queue);
  const refused = await client.put('/v1/job-types/meta', { target: { kind: 'http', url: 'http://169.254.169.254/latest' } });
  expect(refused.status).toBe(400);
  expect(refused.body.error.details).toEqual([{ field: 'target.url', message: expect.stringContaining('link-local') }]);
  const allowed = await client.put('/v1/job-types/meta', { target: { kind: 'http', url: 'http://169.254.169.254/latest', allow_link_local: true } });
  expect(allowed.status).toBe(201);
});

test('the signing secret is returned once, when the type is created, and kept when it is replaced', async () => {
  const client = createTestApi(queue);
  const body = { target: { kind: 'http', url: scripted.url } };
  const created = await client.put('/v1/job-types/secretive', body);
  expect(created.status).toBe(201);
  expect(created.body.signing_secret).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);
  expect(created.body.target).toEqual({ kind: 'http', url: scripted.url, request_timeout_s: 30, allow_link_local: false });
  const replaced = await client.put('/v1/job-types/secretive', { ...body, attempts: 5 });
  expect(replaced.status).toBe(200);
  expect(replaced.body).not.toHaveProperty('signing_secret');
  expect((await client.get('/v1/job-types/secretive')).text).not.toContain('whsec_');
  expect((await client.get('/v1/job-types')).text).not.toContain('whsec_');
  const [stored] = await listJobTypes(queue.ctx);
  expect(stored?.signingSecret).toBe(created.body.signing_secret);
});
