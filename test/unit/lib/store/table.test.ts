/** ensureTable when DynamoDB answers late: a CreateTable sent again after its first try landed unseen. */
import {
  CreateTableCommand,
  DescribeTableCommand,
  DescribeTimeToLiveCommand,
  DynamoDBClient,
  ResourceInUseException,
  ResourceNotFoundException,
  UpdateTimeToLiveCommand,
} from '@aws-sdk/client-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, expect, test } from 'vitest';
import { ensureTable } from '../../../../lib/store/table.js';

const dynamo = mockClient(DynamoDBClient);
const client = new DynamoDBClient({ region: 'us-east-1', credentials: { accessKeyId: 'x', secretAccessKey: 'x' } });

beforeEach(() => {
  dynamo.reset();
  dynamo
    .on(DescribeTableCommand)
    .rejectsOnce(new ResourceNotFoundException({ message: 'not found', $metadata: {} }))
    .resolves({ Table: { TableStatus: 'ACTIVE' } });
  dynamo.on(CreateTableCommand).rejects(new ResourceInUseException({ message: 'Table already exists: jobs', $metadata: {} }));
});

test('a table its own earlier try created is waited for and gets its TTL, not an error', async () => {
  dynamo.on(DescribeTimeToLiveCommand).resolves({ TimeToLiveDescription: { TimeToLiveStatus: 'DISABLED' } });
  expect(await ensureTable(client, 'jobs')).toBe(true);
  expect(dynamo.commandCalls(UpdateTimeToLiveCommand)).toHaveLength(1);
});

test('TTL already enabled on it is left as it is', async () => {
  dynamo.on(DescribeTimeToLiveCommand).resolves({ TimeToLiveDescription: { TimeToLiveStatus: 'ENABLED', AttributeName: 'ttl' } });
  await ensureTable(client, 'jobs');
  expect(dynamo.commandCalls(UpdateTimeToLiveCommand)).toHaveLength(0);
});
