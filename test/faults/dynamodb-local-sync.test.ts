/**
 * DynamoDB Local with its flushes off (DYNAMODB_LOCAL_SYNC=off) still keeps every write it answered when
 * it is killed: the writes are in the OS's cache, which outlives the process. Runs where libeatmydata is
 * installed (the `eatmydata` package); elsewhere the setting refuses to start, as the unit tests show.
 */
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CreateTableCommand } from '@aws-sdk/client-dynamodb';
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, expect, test } from 'vitest';
import { NO_SYNC_LIBRARY_PATHS, startDynamoDbLocal, type DynamoDbLocal } from '../../infra/local/aws/dynamodb-local.js';
import { createDynamoClients } from '../../lib/store/client.js';

const installed = NO_SYNC_LIBRARY_PATHS.some((path) => existsSync(path));
let dataDir: string | undefined;
let dynamo: DynamoDbLocal | undefined;

afterAll(async () => {
  await dynamo?.stop();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

async function killed(running: DynamoDbLocal): Promise<void> {
  const exited = new Promise((resolve) => running.process.once('exit', resolve));
  running.process.kill('SIGKILL');
  await exited;
}

test.skipIf(!installed)('every write answered with flushes off is there after DynamoDB Local is killed', async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'djq-nosync-'));
  dynamo = await startDynamoDbLocal({ dbPath: dataDir, sync: 'off' });
  expect(readFileSync(`/proc/${dynamo.process.pid}/maps`, 'utf8')).toContain('libeatmydata');
  const first = createDynamoClients({ endpoint: dynamo.endpoint });
  await first.base.send(
    new CreateTableCommand({
      TableName: 'nosync',
      BillingMode: 'PAY_PER_REQUEST',
      AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
      KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
    }),
  );
  const ids = Array.from({ length: 200 }, (_, index) => `job-${index}`);
  await Promise.all(ids.map((pk) => first.db.send(new PutCommand({ TableName: 'nosync', Item: { pk, status: 'queued' } }))));
  first.base.destroy();
  await killed(dynamo);

  dynamo = await startDynamoDbLocal({ dbPath: dataDir, sync: 'off' });
  const second = createDynamoClients({ endpoint: dynamo.endpoint });
  const found = await Promise.all(ids.map(async (pk) => (await second.db.send(new GetCommand({ TableName: 'nosync', Key: { pk } }))).Item?.pk));
  second.base.destroy();
  expect(found).toEqual(ids);
});
