/**
 * The stack's alarms under `npm start`: GET /v1/stats, which the dashboard's health view reads, carries every alarm
 * the stack deploys with its state as the runtime evaluates it. How they are evaluated is
 * test/integration/infra/local/aws/monitoring.alarms.test.ts's.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DeleteTableCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, expect, inject, test } from 'vitest';
import { freePort } from '../../../../infra/local/aws/dynamodb-local.js';
import { startLocalRuntime, type LocalRuntime } from '../../../../infra/local/runtime.js';
import { createQueueApp } from '../../../../infra/queue-app.js';
import type { Stats } from '../../../../lib/client/types.js';
import { createDynamoClients } from '../../../../lib/store/client.js';

let dataDir: string;
let runtime: LocalRuntime;
const tableName = `alarms-${randomUUID()}`;

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'djq-alarms-'));
  runtime = await startLocalRuntime({ DYNAMODB_ENDPOINT: inject('dynamoEndpoint'), TABLE_NAME: tableName, PORT: String(await freePort()), DATA_DIR: dataDir });
}, 120_000);

afterAll(async () => {
  await runtime?.stop();
  const clients = createDynamoClients({ endpoint: inject('dynamoEndpoint') });
  await clients.base.send(new DeleteTableCommand({ TableName: tableName })).catch(() => undefined);
  clients.base.destroy();
  await rm(dataDir, { recursive: true, force: true });
});

test('GET /v1/stats carries every alarm the stack deploys, by its id, none in ALARM on an idle queue', async () => {
  const response = await fetch(`${runtime.url}/v1/stats`, { headers: { authorization: `Bearer ${runtime.adminKey}` } });
  const { alarms } = (await response.json()) as Stats;
  const { stack } = createQueueApp({ context: { 'aws:cdk:bundling-stacks': [] } });
  expect(alarms?.map(({ name }) => name).sort()).toEqual(stack.alarms.map((alarm) => alarm.node.id).sort());
  expect(alarms?.filter(({ state }) => state === 'ALARM')).toEqual([]);
});
