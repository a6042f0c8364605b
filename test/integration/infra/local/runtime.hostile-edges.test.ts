/**
 * The edges a hostile or careless caller finds beyond malformed requests: credentials in a
 * target URL, targets that reach the worker's own host, bodies that are not UTF-8, answers a browser
 * could sniff, traces that show the server's paths, and a route that escaped the key authorizer.
 * The local runtime serves most of them over HTTP, as `npm start` does; the deployed address policy is
 * checked in-process, on the api and the http target as a Lambda function wires them.
 */
import { randomUUID } from 'node:crypto';
import { jobTypeFromInput } from '../../../support/job-types.js';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import { createApiHandler } from '../../../../functions/api/app.js';
import { createAuthorizer } from '../../../../functions/authorizer/app.js';
import { targetAddressPolicyFromEnvironment, targetClientsFromEnvironment } from '../../../../functions/shared/environment.js';
import { registry } from '../../../../functions/worker/handlers/index.js';
import { freePort } from '../../../../infra/local/aws/dynamodb-local.js';
import { createLocalGateway } from '../../../../infra/local/aws/gateway.js';
import { startLocalRuntime, type LocalRuntime } from '../../../../infra/local/runtime.js';
import { fixedSecret } from '../../../../lib/aws/secrets.js';
import { ConfigError } from '../../../../lib/domain/errors.js';
import { createQueueContext, type QueueContext } from '../../../../lib/queue/context.js';
import { readQueueSettings } from '../../../../lib/queue/settings.js';
import { putJobType } from '../../../../lib/queue/catalog/job-types.js';
import { createDynamoClients, type DynamoClients } from '../../../../lib/store/client.js';
import { runHttpTarget } from '../../../../lib/targets/http.js';
import type { TargetRun } from '../../../../lib/targets/target.js';
import { jobTypeInputSchema, parseJobTypeDefinition } from '../../../../lib/wire/job-types.js';
import { parseWith } from '../../../../lib/wire/parse.js';
import { ADMIN_TOKEN, createApiClient, type ApiHandler } from '../../../support/api.js';
import { runningJob, T0 } from '../../../support/jobs.js';
import { createTestQueue, type TestQueue } from '../../../support/queue.js';
import { rawRequest, type RawAnswer } from '../../../support/raw-http.js';
import { eventually } from '../../../support/eventually.js';


interface Downstream {
  url: string;
  received: IncomingHttpHeaders[];
  server: Server;
}

/** A downstream on loopback that answers every request with a result and keeps each request's headers. */
async function startDownstream(): Promise<Downstream> {
  const received: IncomingHttpHeaders[] = [];
  const server = createServer((request, response) => {
    received.push(request.headers);
    request.resume();
    request.on('end', () => {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ result: 'reached' }));
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, received, server };
}


describe('over HTTP, as npm start serves it', () => {
  let dataDir: string;
  let runtime: LocalRuntime;
  let clients: DynamoClients;
  let ctx: QueueContext;
  let downstream: Downstream;
  let readKey: string;
  const tableName = `hostile-edges-${randomUUID()}`;

  const send = (method: string, path: string, headers: Record<string, string>, body?: string | Buffer): Promise<RawAnswer> =>
    rawRequest(runtime.url, method, path, headers, body);

  const call = (method: string, path: string, key: string | undefined, body?: unknown): Promise<RawAnswer> =>
    send(
      method,
      path,
      { ...(key ? { authorization: `Bearer ${key}` } : {}), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body === undefined ? undefined : JSON.stringify(body),
    );

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'djq-edges-'));
    const env = { DYNAMODB_ENDPOINT: inject('dynamoEndpoint'), TABLE_NAME: tableName, PORT: String(await freePort()), DATA_DIR: dataDir, POLL_INTERVAL_MS: '200' };
    runtime = await startLocalRuntime(env);
    clients = createDynamoClients({ endpoint: env.DYNAMODB_ENDPOINT });
    ctx = createQueueContext(clients.db, readQueueSettings({ TABLE_NAME: tableName }));
    downstream = await startDownstream();
    expect((await call('PUT', '/v1/job-types/emails', runtime.adminKey, { target: { kind: 'handler', name: 'echo' }, concurrency: 0 })).status).toBe(201);
    const created = await call('POST', '/v1/keys', runtime.adminKey, { scopes: ['read:*'] });
    expect(created.status).toBe(201);
    readKey = JSON.parse(created.text).key;
  }, 120_000);

  afterAll(async () => {
    downstream?.server.close();
    await runtime?.stop();
    clients?.base.destroy();
    await rm(dataDir, { recursive: true, force: true });
  });

  describe('credentials in a target URL', () => {
    test.each([
      { name: 'a user and password', url: (base: string) => base.replace('http://', 'http://user:pw@') + '/ok', names: 'user:password@' },
      { name: 'an api_key query parameter', url: (base: string) => `${base}/ok?api_key=k-123`, names: '"api_key"' },
      { name: 'a token query parameter among others', url: (base: string) => `${base}/ok?region=eu&Access-Token=t-123`, names: '"Access-Token"' },
    ])('are refused when a type is defined: $name', async ({ url, names }) => {
      const answer = await call('PUT', '/v1/job-types/creds', runtime.adminKey, { target: { kind: 'http', url: url(downstream.url) } });
      expect(answer.status).toBe(400);
      const { details } = JSON.parse(answer.text).error;
      expect(details).toEqual([{ field: 'target.url', message: expect.stringContaining(names) }]);
      expect(details[0].message).toContain('signing secret');
      expect((await call('GET', '/v1/job-types/creds', runtime.adminKey)).status).toBe(404);
    });

    test('a URL with other query parameters is accepted and shown as given to the admin, its values hidden from read keys', async () => {
      const url = `${downstream.url}/ok?region=eu&v=2`;
      expect((await call('PUT', '/v1/job-types/plain-query', runtime.adminKey, { target: { kind: 'http', url } })).status).toBe(201);
      expect(JSON.parse((await call('GET', '/v1/job-types/plain-query', runtime.adminKey)).text).target.url).toBe(url);
      expect(JSON.parse((await call('GET', '/v1/job-types/plain-query', readKey)).text).target.url).toBe(`${downstream.url}/ok?region=***&v=***`);
    });

    test('a type stored with credentials before the rule shows them hidden to read keys, and its jobs still reach the downstream with them', async () => {
      const url = `${downstream.url.replace('http://', 'http://user:pw@')}/ok?api_key=k-123&region=eu`;
      await putJobType(ctx, 'legacy', parseJobTypeDefinition({ target: { kind: 'http', url }, attempts: 1 }));

      const listed = JSON.parse((await call('GET', '/v1/job-types', readKey)).text).job_types.find((type: { name: string }) => type.name === 'legacy');
      const one = JSON.parse((await call('GET', '/v1/job-types/legacy', readKey)).text);
      for (const shown of [listed.target.url, one.target.url]) {
        expect(shown).toBe(`${downstream.url.replace('http://', 'http://***:***@')}/ok?api_key=***&region=***`);
      }

      expect((await call('PUT', '/v1/jobs/legacy/j1', runtime.adminKey, { data: 1 })).status).toBe(201);
      const job = await eventually(async () => JSON.parse((await call('GET', '/v1/jobs/legacy/j1', readKey)).text), (body) => body.status === 'succeeded');
      expect(job.status).toBe('succeeded');
      expect(downstream.received.at(-1)?.authorization).toBe(`Basic ${Buffer.from('user:pw').toString('base64')}`);
    }, 30_000);
  });

  test('the local runtime lets http targets reach loopback, where `npm run downstream` listens', async () => {
    expect((await call('PUT', '/v1/job-types/local-hook', runtime.adminKey, { target: { kind: 'http', url: `${downstream.url}/hook` }, attempts: 1 })).status).toBe(201);
    expect((await call('PUT', '/v1/jobs/local-hook/j1', runtime.adminKey, { data: 1 })).status).toBe(201);
    const job = await eventually(async () => JSON.parse((await call('GET', '/v1/jobs/local-hook/j1', readKey)).text), (body) => body.status === 'succeeded');
    expect(job.result).toBe('reached');
  }, 30_000);

  describe('bodies that are not UTF-8', () => {
    test('are refused naming the body, and store nothing', async () => {
      const bytes = Buffer.concat([Buffer.from('{"data":"'), Buffer.from([0xff, 0xfe, 0xc3, 0x28]), Buffer.from('"}')]);
      const answer = await send('PUT', '/v1/jobs/emails/bad-bytes', { authorization: `Bearer ${runtime.adminKey}`, 'content-type': 'application/json' }, bytes);
      expect(answer.status).toBe(400);
      expect(JSON.parse(answer.text).error.details).toEqual([{ field: 'body', message: 'is not valid UTF-8' }]);
      expect((await call('GET', '/v1/jobs/emails/bad-bytes', runtime.adminKey)).status).toBe(404);
    });

    test('a lone continuation byte in a batch is refused too', async () => {
      const bytes = Buffer.concat([Buffer.from('{"jobs":[{"id":"b1","data":"'), Buffer.from([0x80]), Buffer.from('"}]}')]);
      const answer = await send('POST', '/v1/jobs/emails/batch', { authorization: `Bearer ${runtime.adminKey}`, 'content-type': 'application/json; charset=utf-8' }, bytes);
      expect(answer.status).toBe(400);
      expect(JSON.parse(answer.text).error.details).toEqual([{ field: 'body', message: 'is not valid UTF-8' }]);
    });

    test('UTF-8 beyond ASCII, a literal U+FFFD included, is kept as sent', async () => {
      const data = 'é 日本 🎉 \uFFFD';
      const answer = await send('PUT', '/v1/jobs/emails/good-bytes', { authorization: `Bearer ${runtime.adminKey}`, 'content-type': 'application/json' }, Buffer.from(JSON.stringify({ data }), 'utf8'));
      expect(answer.status).toBe(201);
      expect(JSON.parse(answer.text).data).toBe(data);
    });
  });

  describe('nosniff', () => {
    test.each([
      { name: "the api's 200", method: 'GET', path: '/v1/job-types', who: 'read' },
      { name: "the api's 404", method: 'GET', path: '/v1/jobs/emails/nope', who: 'read' },
      { name: "the api's 400", method: 'PUT', path: '/v1/jobs/emails/x', who: 'admin', body: '{' },
      { name: 'the health check', method: 'GET', path: '/health', who: 'none' },
      { name: "the gateway's 401", method: 'GET', path: '/v1/job-types', who: 'none' },
      { name: "the gateway's 403", method: 'GET', path: '/v1/job-types', who: 'bad' },
      { name: 'the dashboard page', method: 'GET', path: '/', who: 'none' },
    ])('is on $name', async ({ method, path, who, body }) => {
      const key = who === 'admin' ? runtime.adminKey : who === 'read' ? readKey : who === 'bad' ? 'nope' : undefined;
      const headers: Record<string, string> = { ...(key ? { authorization: `Bearer ${key}` } : {}), ...(body ? { 'content-type': 'application/json' } : {}) };
      const answer = await send(method, path, headers, body);
      expect(answer.headers['x-content-type-options']).toBe('nosniff');
    });

    test("is on the local server's own 413 for a request over 10 MiB", async () => {
      const answer = await send('PUT', '/v1/jobs/emails/huge', { authorization: `Bearer ${runtime.adminKey}`, 'content-type': 'application/json' }, Buffer.alloc(10 * 1024 * 1024 + 1, 0x20));
      expect(answer.status).toBe(413);
      expect(answer.headers['x-content-type-options']).toBe('nosniff');
    });
  });

  test('POST /v1/jobs/{type}/bulk without a key is 401 from the gateway, as every keyed route', async () => {
    const answer = await call('POST', '/v1/jobs/emails/bulk', undefined, { action: 'retry', status: 'failed' });
    expect({ status: answer.status, body: JSON.parse(answer.text) }).toEqual({ status: 401, body: { message: 'Unauthorized' } });
  });

  test("a handler's error trace reaches read keys without the server's paths, its frames still named", async () => {
    expect((await call('PUT', '/v1/job-types/failing', runtime.adminKey, { target: { kind: 'handler', name: 'fail' }, attempts: 1 })).status).toBe(201);
    expect((await call('PUT', '/v1/jobs/failing/j1', runtime.adminKey, { data: { message: 'broken on purpose' } })).status).toBe(201);
    const job = await eventually(async () => JSON.parse((await call('GET', '/v1/jobs/failing/j1', readKey)).text), (body) => body.status === 'failed');
    const error = job.history[0].error;
    expect(error.message).toBe('broken on purpose');
    expect(error.trace).toMatch(/^Error: broken on purpose\n\s+at /);
    expect(error.trace).toMatch(/builtin\.ts:\d+:\d+/);
    expect(error.trace).not.toContain(process.cwd());
    expect(error.trace).not.toMatch(/(?:^|[\s(])(?:file:\/\/)?\/[^\s/]+\//m);
  }, 30_000);
});

describe('where the worker runs deployed (Lambda)', () => {
  const deployed = targetAddressPolicyFromEnvironment({});
  let queue: TestQueue;
  let api: ReturnType<typeof createApiClient>;

  beforeAll(async () => {
    queue = await createTestQueue();
    const authorizer = createAuthorizer({ ctx: queue.as('authorizer'), staticAdminToken: ADMIN_TOKEN });
    const handler = createApiHandler({ ctx: queue.as('api'), registry, targetAddressPolicy: deployed }) as ApiHandler;
    api = createApiClient(createLocalGateway({ authorizer, api: handler, nowMs: () => queue.as('api').nowMs() }));
  });

  afterAll(async () => {
    await queue?.drop();
  });

  test.each([
    { name: "the Lambda runtime API on the worker's own host", url: 'http://127.0.0.1:9001/2018-06-01/runtime/invocation/next', says: 'loopback' },
    { name: 'localhost', url: 'http://localhost:3001/hook', says: 'loopback' },
    { name: '0.0.0.0', url: 'http://0.0.0.0/', says: 'loopback' },
    { name: 'IPv6 unspecified', url: 'http://[::]/', says: 'loopback' },
    { name: 'the metadata address, IPv4-compatible', url: 'http://[::a9fe:a9fe]/latest/meta-data/', says: 'link-local' },
    { name: 'the metadata address through NAT64', url: 'http://[64:ff9b::a9fe:a9fe]/latest/meta-data/', says: 'link-local' },
    { name: 'the metadata address, IPv4-translated', url: 'http://[::ffff:0:a9fe:a9fe]/latest/meta-data/', says: 'link-local' },
  ])('the api refuses a target URL at $name', async ({ url, says }) => {
    const answer = await api.put('/v1/job-types/hook', { target: { kind: 'http', url } });
    expect(answer.status).toBe(400);
    expect(answer.body.error.details).toEqual([{ field: 'target.url', message: expect.stringContaining(says) }]);
  });

  test("a Lambda worker's http target gets the deployed policy, whatever runs it", () => {
    const targets = targetClientsFromEnvironment({ PUBLIC_API_URL: 'https://api.example.com', CALLBACK_TOKEN_SECRET: 'callback-secret' });
    expect(targets.http?.addressPolicy).toEqual({ allowLoopback: false, allowPrivate: true });
  });

  test('the api accepts private and public addresses unless the deployment refuses private ones', async () => {
    expect((await api.put('/v1/job-types/vpc', { target: { kind: 'http', url: 'http://10.0.0.5/hook' } })).status).toBe(201);
    expect(targetAddressPolicyFromEnvironment({ HTTP_TARGET_PRIVATE_ADDRESSES: 'refuse' })).toEqual({ allowLoopback: false, allowPrivate: false });
    expect(() => targetAddressPolicyFromEnvironment({ HTTP_TARGET_PRIVATE_ADDRESSES: 'no' })).toThrow(ConfigError);
  });

  describe('the http target', () => {
    let downstream: Downstream;
    beforeAll(async () => {
      downstream = await startDownstream();
    });
    afterAll(() => {
      downstream?.server.close();
    });

    const runOf = (url: string): TargetRun => ({
      job: runningJob({ attempt: 1, data: 1 }),
      jobType: jobTypeFromInput('hook', parseWith(jobTypeInputSchema, { target: { kind: 'http', url } }), { createdAtMs: T0, updatedAtMs: T0 }),
      signal: new AbortController().signal,
      heartbeat: async () => undefined,
      progress: async () => undefined,
      nowMs: () => T0,
    });

    const deps = (resolvesTo: string, policy = deployed) => ({
      apiBaseUrl: 'https://api.example.com',
      callbackTokenSecret: fixedSecret('callback-secret'),
      addressPolicy: policy,
      resolveHost: async () => [{ address: resolvesTo, family: resolvesTo.includes(':') ? (6 as const) : (4 as const) }],
    });

    test.each(['127.0.0.1', '::1', '::ffff:127.0.0.1', '::a9fe:a9fe'])(
      'refuses, without a request and without retry, a host name that resolves to %s',
      async (address) => {
        const port = new URL(downstream.url).port;
        const url = `http://hook.example.test:${port}/hook`;
        const before = downstream.received.length;
        const outcome = await runHttpTarget(runOf(url), { url, requestTimeoutS: 5, allowLinkLocal: false }, 'signing-secret', deps(address));
        expect(outcome).toMatchObject({ kind: 'failed', failure: { error: { class: 'AddressRefusedError' }, retryable: false } });
        expect(downstream.received.length).toBe(before);
      },
    );

    test('refuses a private address when the deployment refuses them', async () => {
      const url = 'http://hook.example.test/hook';
      const refusing = await runHttpTarget(runOf(url), { url, requestTimeoutS: 5, allowLinkLocal: false }, 'signing-secret', deps('10.0.0.5', { allowLoopback: false, allowPrivate: false }));
      expect(refusing).toMatchObject({ kind: 'failed', failure: { error: { class: 'AddressRefusedError', message: expect.stringContaining('HTTP_TARGET_PRIVATE_ADDRESSES') } } });
    });
  });
});
