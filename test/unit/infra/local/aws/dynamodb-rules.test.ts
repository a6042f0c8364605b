import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { TransactWriteCommand, DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { describe, expect, test } from 'vitest';
import { enforceAwsRules, itemWrittenTwice } from '../../../../../infra/local/aws/dynamodb-rules.js';

const KEY = ['pk', 'sk'] as const;
const update = (pk: string, sk: string, table = 't') => ({ Update: { TableName: table, Key: { pk, sk }, UpdateExpression: 'ADD n :one', ExpressionAttributeValues: { ':one': 1 } } });

describe('a transaction that writes one item twice', () => {
  test('is found whatever the operations', () => {
    const put = { Put: { TableName: 't', Item: { pk: 'a', sk: 'b', n: 1 } } };
    expect(itemWrittenTwice([update('a', 'b'), update('c', 'd'), put], KEY)).toBe(JSON.stringify(['t', 'a', 'b']));
  });

  test('is not found when the items differ in a key attribute or the table', () => {
    expect(itemWrittenTwice([update('a', 'b'), update('a', 'c'), update('a', 'b', 'other')], KEY)).toBeUndefined();
  });

  test('is refused as AWS refuses it, before it leaves the process', async () => {
    const base = new DynamoDBClient({ endpoint: 'http://127.0.0.1:9', region: 'local', credentials: { accessKeyId: 'x', secretAccessKey: 'x' }, maxAttempts: 1 });
    const db = DynamoDBDocumentClient.from(enforceAwsRules(base, KEY));
    const sent = db.send(new TransactWriteCommand({ TransactItems: [update('a', 'b'), update('a', 'b')] }));
    await expect(sent).rejects.toMatchObject({ name: 'ValidationException', message: expect.stringContaining('multiple operations on one item') });
    base.destroy();
  });
});
