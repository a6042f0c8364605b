/**
 * The local event source mapping on DynamoDB Local's own stream (infra/local/aws/table-stream.ts): what is written
 * after it is ready is handed over, filtered and in order; a batch that fails is handed again; a delay holds each
 * record back from when it was read; a pause holds everything until resumed, and a record past the mapping's
 * maximum age is dropped; the mapping's reads meet the function's role.
 */
import { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterEach, expect, inject, test } from 'vitest';
import { WAKER_STREAM_FILTERS } from '../../../../../infra/waker.js';
import { streamReadRequests } from '../../../../../infra/local/aws/iam/requests.js';
import { startTableStream, type TableStream, type TableStreamOptions } from '../../../../../infra/local/aws/table-stream.js';
import { dynamoClientConfig } from '../../../../../lib/store/client.js';
import { eventually } from '../../../../support/eventually.js';
import { takeDeniedCalls } from '../../../../support/iam.js';
import { createTestQueue, type TestQueue } from '../../../../support/queue.js';

const cleanUps: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanUp of cleanUps.splice(0)) await cleanUp();
});

interface Handed {
  batches: { Records: { eventName?: string; dynamodb?: { NewImage?: { pk?: { S?: string } } } }[] }[];
  /** When each batch was handed over. */
  handedAtMs: number[];
  keys: () => string[];
  stream: TableStream;
}

async function streamOf(queue: TestQueue, options: Partial<TableStreamOptions> = {}): Promise<Handed> {
  const batches: Handed['batches'] = [];
  const handedAtMs: number[] = [];
  const stop = new AbortController();
  const streams = new DynamoDBStreamsClient(dynamoClientConfig({ endpoint: inject('dynamoEndpoint') }));
  const stream = startTableStream({
    tables: queue.clients.base,
    streams,
    tableName: queue.tableName,
    filters: WAKER_STREAM_FILTERS,
    batchSize: 100,
    retryAttempts: 2,
    authorize: () => queue.iam.check.forFunction('waker').authorize(streamReadRequests(queue.iam.check.policies.arns.tableStream)),
    handle: async (event) => {
      batches.push(event as Handed['batches'][number]);
      handedAtMs.push(Date.now());
    },
    onError: () => undefined,
    signal: stop.signal,
    ...options,
  });
  cleanUps.push(async () => {
    stop.abort();
    await stream.stopped;
    streams.destroy();
    await queue.drop();
  });
  await stream.ready;
  return { batches, handedAtMs, keys: () => batches.flatMap((batch) => batch.Records.map((record) => record.dynamodb?.NewImage?.pk?.S ?? '')), stream };
}

const laneItem = (id: string) => ({ pk: id, sk: 'JOB', gsi1pk: 'Q#a#1#0', gsi1sk: `1000#${id}` });

test('hands over the lane entries written after it is ready, in the order they were written', async () => {
  const queue = await createTestQueue({ stream: true });
  const handed = await streamOf(queue);
  for (const id of ['j1', 'j2', 'j3']) await queue.ctx.db.send(new PutCommand({ TableName: queue.tableName, Item: laneItem(id) }));
  await eventually(async () => handed.keys(), (keys) => keys.length >= 3);
  expect(handed.keys()).toEqual(['j1', 'j2', 'j3']);
});

test('keeps back what the filters do not let through', async () => {
  const queue = await createTestQueue({ stream: true });
  const handed = await streamOf(queue);
  await queue.ctx.db.send(new PutCommand({ TableName: queue.tableName, Item: { pk: 'TYPE#a', sk: 'TYPE' } }));
  await queue.ctx.db.send(new PutCommand({ TableName: queue.tableName, Item: { ...laneItem('done'), gsi1pk: 'F#a#succeeded#0' } }));
  await queue.ctx.db.send(new PutCommand({ TableName: queue.tableName, Item: laneItem('last') }));
  await eventually(async () => handed.keys(), (keys) => keys.length >= 1);
  expect(handed.keys()).toEqual(['last']);
});

test('hands a batch that failed again, and the records after it only once it passed', async () => {
  const queue = await createTestQueue({ stream: true });
  let failures = 1;
  const seen: string[] = [];
  await streamOf(queue, {
    handle: async (event) => {
      const keys = (event.Records as Handed['batches'][number]['Records']).map((record) => record.dynamodb?.NewImage?.pk?.S ?? '');
      seen.push(...keys);
      if (failures-- > 0) throw new Error('the waker failed');
    },
  });
  await queue.ctx.db.send(new PutCommand({ TableName: queue.tableName, Item: laneItem('first') }));
  await eventually(async () => seen, (keys) => keys.length >= 2);
  await queue.ctx.db.send(new PutCommand({ TableName: queue.tableName, Item: laneItem('second') }));
  await eventually(async () => seen, (keys) => keys.includes('second'));
  expect(seen).toEqual(['first', 'first', 'second']);
});

test('holds each record back the delay from when it was read, reading on meanwhile: one written during another\'s delay waits no longer', async () => {
  const queue = await createTestQueue({ stream: true });
  const delayMs = 4_000;
  const handed = await streamOf(queue, { delayMs });
  const writtenAtMs: number[] = [];
  for (const id of ['first', 'second']) {
    writtenAtMs.push(Date.now());
    await queue.ctx.db.send(new PutCommand({ TableName: queue.tableName, Item: laneItem(id) }));
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  await eventually(async () => handed.keys(), (keys) => keys.length >= 2);
  expect(handed.keys()).toEqual(['first', 'second']);
  const lateMs = handed.handedAtMs.map((atMs, at) => atMs - writtenAtMs[at]!);
  for (const late of lateMs) expect(late).toBeGreaterThanOrEqual(delayMs);
  // DynamoDB Local shows a record on its stream within a second or two of its write, and the mapping polls four
  // times a second; a read held back by the first record's delay would make the second wait most of a delay more.
  expect(lateMs[1]).toBeLessThan(delayMs + 2_500);
});

test('paused, hands nothing over; resumed, hands over from where it stopped, in order', async () => {
  const queue = await createTestQueue({ stream: true });
  const handed = await streamOf(queue);
  await queue.ctx.db.send(new PutCommand({ TableName: queue.tableName, Item: laneItem('before') }));
  await eventually(async () => handed.keys(), (keys) => keys.length >= 1);
  handed.stream.pause();
  for (const id of ['during1', 'during2']) await queue.ctx.db.send(new PutCommand({ TableName: queue.tableName, Item: laneItem(id) }));
  await new Promise((resolve) => setTimeout(resolve, 2_500));
  expect(handed.keys()).toEqual(['before']);
  handed.stream.resume();
  await eventually(async () => handed.keys(), (keys) => keys.length >= 3);
  expect(handed.keys()).toEqual(['before', 'during1', 'during2']);
});

test('drops the records older than its maximum age when it would hand them, as the stack\'s mapping does', async () => {
  const queue = await createTestQueue({ stream: true });
  let expired = 0;
  const handed = await streamOf(queue, { maxRecordAgeS: 1, onExpired: (records) => void (expired += records) });
  handed.stream.pause();
  await queue.ctx.db.send(new PutCommand({ TableName: queue.tableName, Item: laneItem('old') }));
  await new Promise((resolve) => setTimeout(resolve, 3_000));
  handed.stream.resume();
  await queue.ctx.db.send(new PutCommand({ TableName: queue.tableName, Item: laneItem('young') }));
  await eventually(async () => handed.keys(), (keys) => keys.length >= 1);
  expect(handed.keys()).toEqual(['young']);
  expect(expired).toBe(1);
});

test('stops reading when the role may not read the stream, as Lambda\'s mapping does', async () => {
  const queue = await createTestQueue({ stream: true });
  const errors: string[] = [];
  const handed = await streamOf(queue, {
    authorize: () => queue.iam.check.forFunction('api').authorize(streamReadRequests(queue.iam.check.policies.arns.tableStream)),
    onError: (error, during) => void errors.push(`${during}: ${String(error)}`),
  });
  await queue.ctx.db.send(new PutCommand({ TableName: queue.tableName, Item: laneItem('unseen') }));
  await eventually(async () => errors, (found) => found.length > 0);
  expect(errors[0]).toMatch(/^read: AccessDenied/);
  expect(handed.keys()).toEqual([]);
  expect(new Set(takeDeniedCalls().map(({ fn, request }) => `${fn} ${request.action}`))).toEqual(new Set(['api dynamodb:DescribeStream']));
});
