/**
 * The meter under `npm start`: a few jobs run over HTTP through the local runtime, with a proxy in front of
 * DynamoDB Local reading every answer's consumed capacity off the wire, and the runtime's own report lines heard as
 * they are logged. What the meter counted must agree with both, and with the requests the test made.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, request as httpRequest, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DeleteTableCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, expect, inject, test } from 'vitest';
import { onLogLine } from '../../../../functions/shared/log.js';
import { consumedUnitsOf } from '../../../../infra/local/aws/capacity-meter.js';
import { freePort } from '../../../../infra/local/aws/dynamodb-local.js';
import { METERED_SOURCES, type MeterSnapshot } from '../../../../infra/local/aws/meter.js';
import { PRICES_AS_OF } from '../../../../infra/local/aws/prices.js';
import type { Stats } from '../../../../lib/client/types.js';
import { QUEUE_FUNCTIONS } from '../../../../infra/local/aws/iam/stack-policies.js';
import { startLocalRuntime, type LocalRuntime } from '../../../../infra/local/runtime.js';
import { createDynamoClients } from '../../../../lib/store/client.js';
import { eventually } from '../../../support/eventually.js';

const JOBS = 4;

/** Units and calls as DynamoDB Local's answers said, for the calls that asked for their consumed capacity. */
interface WireTotals {
  calls: number;
  writeUnits: number;
  readUnits: number;
}

async function readAll(stream: AsyncIterable<Buffer>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return Buffer.concat(chunks);
}

/** Forwards every request to DynamoDB Local, adding up the consumed capacity each answer carries. */
async function startCapacityProxy(target: string): Promise<{ endpoint: string; totals: WireTotals; server: Server }> {
  const totals: WireTotals = { calls: 0, writeUnits: 0, readUnits: 0 };
  const { hostname, port } = new URL(target);
  const server = createServer(async (incoming, outgoing) => {
    const requestBody = await readAll(incoming);
    const command = `${String(incoming.headers['x-amz-target'] ?? '').replace(/^DynamoDB_\d+\./, '')}Command`;
    const headers = { ...incoming.headers };
    delete headers['accept-encoding'];
    const forwarded = httpRequest({ hostname, port, path: incoming.url, method: incoming.method, headers }, async (answer) => {
      const answerBody = await readAll(answer);
      if (requestBody.includes('"ReturnConsumedCapacity"')) {
        totals.calls += 1;
        const { writeUnits, readUnits } = consumedUnitsOf(command, JSON.parse(answerBody.toString('utf8') || '{}'));
        totals.writeUnits += writeUnits;
        totals.readUnits += readUnits;
      }
      outgoing.writeHead(answer.statusCode ?? 500, answer.headers);
      outgoing.end(answerBody);
    });
    forwarded.on('error', () => outgoing.destroy());
    forwarded.end(requestBody);
  });
  const proxyPort = await freePort();
  await new Promise<void>((resolve) => server.listen(proxyPort, '127.0.0.1', resolve));
  return { endpoint: `http://127.0.0.1:${proxyPort}`, totals, server };
}

const tableName = `meter-${randomUUID()}`;
let dataDir: string;
let proxy: Awaited<ReturnType<typeof startCapacityProxy>>;
let runtime: LocalRuntime;
let requestsMade = 0;
/** Requests the authorizer refused: they reach no api. */
let requestsRefused = 0;
const reportLines: { function: string; invocations: number }[] = [];
let metered: MeterSnapshot;
let stats: Stats;

async function call(method: string, path: string, body?: unknown): Promise<Record<string, unknown>> {
  requestsMade += 1;
  const response = await fetch(`${runtime.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${runtime.adminKey}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return (await response.json()) as Record<string, unknown>;
}

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'djq-meter-'));
  proxy = await startCapacityProxy(inject('dynamoEndpoint'));
  const stopHearing = onLogLine((line) => {
    const fields = JSON.parse(line) as { message?: string; function?: string; invocations?: number };
    if (fields.message === 'REPORT' || fields.message === 'REPORT summary') reportLines.push({ function: String(fields.function), invocations: fields.invocations ?? 1 });
  });
  runtime = await startLocalRuntime({ DYNAMODB_ENDPOINT: proxy.endpoint, TABLE_NAME: tableName, PORT: String(await freePort()), DATA_DIR: dataDir });
  try {
    await call('PUT', '/v1/job-types/metered', { target: { kind: 'handler', name: 'echo' } });
    for (let index = 0; index < JOBS; index++) await call('PUT', `/v1/jobs/metered/job-${index}`, { data: { index } });
    for (let index = 0; index < JOBS; index++) {
      await eventually(() => call('GET', `/v1/jobs/metered/job-${index}`), (job) => job.status === 'succeeded', 30_000, 100);
    }
    stats = (await call('GET', '/v1/stats')) as unknown as Stats;
    // A callback token the authorizer checks against the callback-token secret, and refuses.
    requestsMade += 1;
    requestsRefused += 1;
    expect((await fetch(`${runtime.url}/v1/jobs/metered/job-0/heartbeat?token=forged`, { method: 'POST', body: '{}' })).status).toBe(403);
  } finally {
    // Stopped, the runtime has ended every invocation and logged the report lines it was adding up.
    await runtime.stop();
    stopHearing();
  }
  metered = runtime.meter.snapshot();
  process.stderr.write(`METERED ${JSON.stringify(metered.usage)} PROXY ${JSON.stringify(proxy.totals)} REQ ${requestsMade}\n`);
}, 120_000);

afterAll(async () => {
  proxy?.server.close();
  const clients = createDynamoClients({ endpoint: inject('dynamoEndpoint') });
  await clients.base.send(new DeleteTableCommand({ TableName: tableName })).catch(() => undefined);
  clients.base.destroy();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

test('API Gateway bills each request the test made once, none of them near 512 KB', () => {
  expect(metered.usage.gateway.httpApiRequests).toBe(requestsMade);
});

test('the api is invoked once per request the authorizer let through', () => {
  expect(metered.usage.api.lambdaRequests).toBe(requestsMade - requestsRefused);
});

test('the authorizer reads the callback-token parameter from Parameter Store once: its latest version, the only one', () => {
  expect(metered.usage.authorizer.ssmCalls).toBe(1);
});

test('every function was invoked as often as its report lines say, the worker at least once', () => {
  const reported = (fn: string): number => reportLines.filter((line) => line.function === fn).reduce((total, line) => total + line.invocations, 0);
  expect(Object.fromEntries(QUEUE_FUNCTIONS.map((fn) => [fn, metered.usage[fn].lambdaRequests]))).toEqual(Object.fromEntries(QUEUE_FUNCTIONS.map((fn) => [fn, reported(fn)])));
  expect(metered.usage.worker.lambdaRequests).toBeGreaterThanOrEqual(1);
});

test("DynamoDB units are those DynamoDB Local's answers carried, call for call", () => {
  const sum = (pick: (source: (typeof METERED_SOURCES)[number]) => number): number => METERED_SOURCES.reduce((total, source) => total + pick(source), 0);
  expect({
    calls: sum((source) => metered.usage[source].dynamoDbCalls),
    writeUnits: sum((source) => metered.usage[source].dynamoDbWriteUnits),
    readUnits: sum((source) => metered.usage[source].dynamoDbReadUnits),
  }).toEqual(proxy.totals);
  expect(proxy.totals.writeUnits).toBeGreaterThan(0);
});

test('each job that succeeded put its lifecycle event on the bus', () => {
  expect(metered.usage.worker.eventBridgeEvents).toBeGreaterThanOrEqual(JOBS);
});

test("the worker's log holds at least Lambda's own lines of each invocation, and its metrics are counted", () => {
  expect(metered.usage.worker.logBytes).toBeGreaterThanOrEqual(250 * metered.usage.worker.lambdaRequests);
  expect(metered.usage.worker.customMetrics).toBeGreaterThan(0);
});

test('GET /v1/stats says what the traffic so far would have cost deployed, by service, at the dated prices', () => {
  expect(stats.deployed_cost).toMatchObject({ prices_as_of: PRICES_AS_OF, region: 'us-east-1' });
  expect(stats.deployed_cost?.units.lambda_requests).toBeGreaterThan(0);
  expect(stats.deployed_cost?.traffic_dollars.dynamodb).toBeGreaterThan(0);
  expect(stats.deployed_cost?.fixed_dollars_per_month.ssm).toBe(0);
  expect(stats.deployed_cost?.total_dollars).toBeGreaterThan(0);
});
