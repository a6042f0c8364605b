/**
 * The table's shape, in one place: the stack builds its CDK table from
 * `TABLE_SCHEMA` and the local runtime and tests create theirs with `ensureTable`.
 */
import {
  CreateTableCommand,
  DescribeTableCommand,
  DescribeTimeToLiveCommand,
  ResourceInUseException,
  ResourceNotFoundException,
  UpdateTableCommand,
  UpdateTimeToLiveCommand,
  waitUntilTableExists,
  type CreateTableCommandInput,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import { DUE_INDEX, TTL_ATTRIBUTE } from './keys.js';

export const TABLE_SCHEMA = {
  partitionKey: 'pk',
  sortKey: 'sk',
  dueIndex: {
    name: DUE_INDEX,
    partitionKey: 'gsi1pk',
    sortKey: 'gsi1sk',
    // The poller orders and throttles due jobs by these, and listings filter by type and status, without reading the jobs.
    projectedAttributes: ['priority', 'weight', 'throttleKey', 'status', 'type'],
  },
  ttlAttribute: TTL_ATTRIBUTE,
  /**
   * The table's stream: the waker reads each lane entry written (its index keys say where and when it falls due),
   * after the write committed. NEW_IMAGE, since the keys alone do not carry the index attributes.
   */
  streamViewType: 'NEW_IMAGE',
} as const;

export function buildCreateTableInput(tableName: string, options: { stream?: boolean } = {}): CreateTableCommandInput {
  const { partitionKey, sortKey, dueIndex } = TABLE_SCHEMA;
  return {
    TableName: tableName,
    BillingMode: 'PAY_PER_REQUEST',
    AttributeDefinitions: [partitionKey, sortKey, dueIndex.partitionKey, dueIndex.sortKey].map((name) => ({
      AttributeName: name,
      AttributeType: 'S',
    })),
    KeySchema: [
      { AttributeName: partitionKey, KeyType: 'HASH' },
      { AttributeName: sortKey, KeyType: 'RANGE' },
    ],
    GlobalSecondaryIndexes: [
      {
        IndexName: dueIndex.name,
        KeySchema: [
          { AttributeName: dueIndex.partitionKey, KeyType: 'HASH' },
          { AttributeName: dueIndex.sortKey, KeyType: 'RANGE' },
        ],
        Projection: { ProjectionType: 'INCLUDE', NonKeyAttributes: [...dueIndex.projectedAttributes] },
      },
    ],
    ...(options.stream === false ? {} : { StreamSpecification: { StreamEnabled: true, StreamViewType: TABLE_SCHEMA.streamViewType } }),
  };
}

/**
 * Creates the table with its index, stream and TTL if it does not exist yet; returns whether it created it. Tests
 * turn TTL off: DynamoDB Local expires items by the real clock, and tests run on clocks of their own. Tests that
 * run no waker turn the stream off: DynamoDB Local slows the writes to a table with a stream as more tables with
 * streams exist beside it (measured on 2026-11-29 by a one-off script against DynamoDB Local alone, no disk sync,
 * after a warm-up table: 4 000 PutItems of 300 bytes to a fresh table, 20 at a time: 1 120/s, then 401/s and 146/s
 * for the second and third such table, where plain tables held 1 300 to 1 850/s; one table with a stream kept its
 * pace over 18 000 writes). With a stream on every test's table, the suite had not ended after 20 minutes, where it takes 9.
 */
export async function ensureTable(client: DynamoDBClient, tableName: string, options: { timeToLive?: boolean; stream?: boolean } = {}): Promise<boolean> {
  try {
    const { Table } = await client.send(new DescribeTableCommand({ TableName: tableName }));
    // A table made by a release before the stream (a local DATA_DIR kept across upgrades) gets it now.
    if (options.stream !== false && !Table?.StreamSpecification?.StreamEnabled) {
      await client.send(new UpdateTableCommand({ TableName: tableName, StreamSpecification: { StreamEnabled: true, StreamViewType: TABLE_SCHEMA.streamViewType } }));
    }
    return false;
  } catch (error) {
    if (!(error instanceof ResourceNotFoundException)) throw error;
  }
  try {
    await client.send(new CreateTableCommand(buildCreateTableInput(tableName, { stream: options.stream !== false })));
  } catch (error) {
    // A try the SDK sent again after the first timed out unseen (DynamoDB Local under load) finds the table made.
    if (!(error instanceof ResourceInUseException)) throw error;
  }
  await waitUntilTableExists({ client, maxWaitTime: 60 }, { TableName: tableName });
  if (options.timeToLive === false) return true;
  const { TimeToLiveDescription } = await client.send(new DescribeTimeToLiveCommand({ TableName: tableName }));
  if (TimeToLiveDescription?.TimeToLiveStatus !== 'ENABLED' && TimeToLiveDescription?.TimeToLiveStatus !== 'ENABLING') {
    await client.send(new UpdateTimeToLiveCommand({ TableName: tableName, TimeToLiveSpecification: { AttributeName: TTL_ATTRIBUTE, Enabled: true } }));
  }
  return true;
}
