/**
 * The sender's answers to throttling that DynamoDB Local never produces: keys a batch read left unprocessed, and
 * a transaction cancelled because an item of it was throttled.
 */
import { DynamoDBClient, ProvisionedThroughputExceededException, TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { BatchGetCommand, DynamoDBDocumentClient, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, test } from 'vitest';
import { batchGetItems, transactWrite, UNPROCESSED_KEYS_TRIES, type TransactItem } from '../../../../lib/store/send.js';

const db = mockClient(DynamoDBDocumentClient);
const ctx = { db: DynamoDBDocumentClient.from(new DynamoDBClient({ region: 'eu-west-1' })), settings: { tableName: 'jobs' }, random: () => 0.5 };
const keys = [{ pk: 'JOB#a', sk: 'JOB' }, { pk: 'JOB#b', sk: 'JOB' }];
const item = (key: { pk: string; sk: string }) => ({ ...key, status: 'queued' });

const cancelled = (...codes: string[]) =>
  new TransactionCanceledException({ message: 'cancelled', $metadata: {}, CancellationReasons: codes.map((Code) => ({ Code })) });
const transaction: TransactItem[] = [{ Update: { TableName: 'jobs', Key: keys[0], UpdateExpression: 'SET #n = :n', ExpressionAttributeNames: { '#n': 'n' }, ExpressionAttributeValues: { ':n': 1 } } }];

beforeEach(() => db.reset());

describe('a batch read', () => {
  test('tries its unprocessed keys again until they are read', async () => {
    db.on(BatchGetCommand)
      .resolvesOnce({ Responses: { jobs: [item(keys[0]!)] }, UnprocessedKeys: { jobs: { Keys: [keys[1]!] } } })
      .resolvesOnce({ Responses: { jobs: [] }, UnprocessedKeys: { jobs: { Keys: [keys[1]!] } } })
      .resolves({ Responses: { jobs: [item(keys[1]!)] } });
    expect(await batchGetItems(ctx, keys)).toEqual([item(keys[0]!), item(keys[1]!)]);
    expect(db.commandCalls(BatchGetCommand).map((call) => call.args[0].input.RequestItems?.jobs?.Keys)).toEqual([keys, [keys[1]], [keys[1]]]);
  });

  test('fails as a throttled call does when keys are still unprocessed after a bounded number of tries', async () => {
    db.on(BatchGetCommand).resolves({ Responses: { jobs: [] }, UnprocessedKeys: { jobs: { Keys: keys } } });
    await expect(batchGetItems(ctx, keys)).rejects.toBeInstanceOf(ProvisionedThroughputExceededException);
    expect(db.commandCalls(BatchGetCommand)).toHaveLength(UNPROCESSED_KEYS_TRIES);
  });
});

describe('a transaction', () => {
  test.each(['ThrottlingError', 'ProvisionedThroughputExceeded'])('cancelled for throttling (%s) is tried again and written', async (code) => {
    db.on(TransactWriteCommand).rejectsOnce(cancelled(code)).rejectsOnce(cancelled('None', code)).resolves({});
    expect(await transactWrite(ctx, transaction)).toEqual({ ok: true });
    expect(db.commandCalls(TransactWriteCommand)).toHaveLength(3);
  });

  test('still throttled after every try is thrown, not taken for a refusal', async () => {
    const throttled = cancelled('ThrottlingError');
    db.on(TransactWriteCommand).rejects(throttled);
    await expect(transactWrite(ctx, transaction)).rejects.toBe(throttled);
  });

  test('refused by a condition is answered at once, even when another item was throttled', async () => {
    db.on(TransactWriteCommand).rejects(cancelled('ConditionalCheckFailed', 'ThrottlingError'));
    expect(await transactWrite(ctx, transaction)).toEqual({ ok: false, reasons: [{ code: 'ConditionalCheckFailed' }, { code: 'ThrottlingError' }] });
    expect(db.commandCalls(TransactWriteCommand)).toHaveLength(1);
  });
});
