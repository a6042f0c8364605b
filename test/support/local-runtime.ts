/** The local runtime (`npm start`) on a table of its own in the suite's DynamoDB Local, started before a file's tests and dropped after them. */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DeleteTableCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, inject } from 'vitest';
import { freePort } from '../../infra/local/aws/dynamodb-local.js';
import { startLocalRuntime, type LocalRuntime } from '../../infra/local/runtime.js';
import type { Env } from '../../lib/queue/settings.js';
import { createDynamoClients } from '../../lib/store/client.js';

/** A runtime named `name` with `env` over the suite's endpoint, a table, a port and a data directory of its own; read it inside tests. */
export function runtimePerFile(name: string, env: Env = {}): () => LocalRuntime {
  let dataDir: string | undefined;
  let runtime: LocalRuntime | undefined;
  const tableName = `${name}-${randomUUID()}`;
  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), `djq-${name}-`));
    runtime = await startLocalRuntime({ DYNAMODB_ENDPOINT: inject('dynamoEndpoint'), TABLE_NAME: tableName, PORT: String(await freePort()), DATA_DIR: dataDir, ...env });
  }, 120_000);
  afterAll(async () => {
    await runtime?.stop();
    const clients = createDynamoClients({ endpoint: inject('dynamoEndpoint') });
    await clients.base.send(new DeleteTableCommand({ TableName: tableName })).catch(() => undefined);
    clients.base.destroy();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });
  return () => {
    if (!runtime) throw new Error('the runtime runs only inside the tests of its file');
    return runtime;
  };
}
