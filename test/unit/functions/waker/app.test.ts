/** What the waker function reads of a batch (functions/waker/app.ts): lane entries from stream records, timers from messages. */
import { expect, test } from 'vitest';
import { readWakerEvent } from '../../../../functions/waker/app.js';

const streamRecord = (image: Record<string, { S: string }>) => ({ eventSource: 'aws:dynamodb', eventName: 'MODIFY', dynamodb: { NewImage: image } });

test('a stream record of a queued lane entry says its type lane, shard and due time', () => {
  const event = { Records: [streamRecord({ pk: { S: 'JOB#a#1' }, gsi1pk: { S: 'Q#a#29400000#3' }, gsi1sk: { S: '1764000000000#1' } })] };
  expect(readWakerEvent(event).entries).toEqual([{ kind: 'lane', lane: { kind: 'queued', type: 'a' }, shard: 3, dueAtMs: 1_764_000_000_000, partition: 'Q#a#29400000#3' }]);
});

test('a stream record of a claim says when it lapses', () => {
  const event = { Records: [streamRecord({ gsi1pk: { S: 'C#29400000#1' }, gsi1sk: { S: '1764000030000#a#1' } })] };
  expect(readWakerEvent(event).entries).toEqual([{ kind: 'lane', lane: { kind: 'claims' }, shard: 1, dueAtMs: 1_764_000_030_000, partition: 'C#29400000#1' }]);
});

test("a stream record of a schedule says when it next fires; a paused one's says nothing", () => {
  const event = { Records: [streamRecord({ gsi1pk: { S: 'SCHEDULES' }, gsi1sk: { S: '1764000060000#nightly' } }), streamRecord({ gsi1pk: { S: 'SCHEDULES' }, gsi1sk: { S: 'PAUSED#weekly' } })] };
  expect(readWakerEvent(event)).toEqual({ entries: [{ kind: 'schedule', dueAtMs: 1_764_000_060_000, partition: 'SCHEDULES' }], timers: [], ignored: 1 });
});

test('a stream record of a job type that claims jobs says a type was written; one paused, or with no room, says nothing', () => {
  const type = (paused: boolean, concurrency?: number) =>
    streamRecord({
      pk: { S: 'TYPE#a' },
      sk: { S: 'TYPE' },
      gsi1pk: { S: 'TYPES' },
      gsi1sk: { S: 'a' },
      name: { S: 'a' },
      ...(paused ? { paused: { BOOL: true } } : {}),
      ...(concurrency !== undefined ? { concurrency: { N: String(concurrency) } } : {}),
    } as never);
  expect(readWakerEvent({ Records: [type(false), type(true), type(false, 0)] })).toEqual({ entries: [{ kind: 'jobType' }], timers: [], ignored: 0 });
});

test('a stream record of a bulk operation running says so', () => {
  const event = { Records: [streamRecord({ gsi1pk: { S: 'OPS' }, gsi1sk: { S: '1764000000000#op-1' } })] };
  expect(readWakerEvent(event).entries).toEqual([{ kind: 'operation' }]);
});

test('a stream record off the lanes (a finished job) is counted as ignored', () => {
  const event = { Records: [streamRecord({ gsi1pk: { S: 'F#a#succeeded#0' }, gsi1sk: { S: '1764000000000#1' } }), streamRecord({ pk: { S: 'TYPE#a' } })] };
  expect(readWakerEvent(event)).toEqual({ entries: [], timers: [], ignored: 2 });
});

test('a timer message says whom to wake and for when, and where its work lies when it names that', () => {
  const bare = { role: 'poller', partition: 1, dueAtMs: 5_000 };
  const named = { ...bare, lanePartitions: ['Q#a#0#1'] };
  const event = { Records: [bare, named].map((timer) => ({ eventSource: 'aws:sqs', body: JSON.stringify(timer) })) };
  expect(readWakerEvent(event).timers).toEqual([bare, named]);
});

test.each([
  ['not JSON', 'wake up'],
  ['an unknown role', JSON.stringify({ role: 'worker', partition: 0, dueAtMs: 1 })],
  ['a negative partition', JSON.stringify({ role: 'poller', partition: -1, dueAtMs: 1 })],
  ['no due time', JSON.stringify({ role: 'sweeper', partition: 0 })],
  ['partitions that are not names', JSON.stringify({ role: 'sweeper', partition: 0, dueAtMs: 1, lanePartitions: [1] })],
  ['too many partitions', JSON.stringify({ role: 'sweeper', partition: 0, dueAtMs: 1, lanePartitions: Array.from({ length: 26 }, (_, at) => `C#0#${at}`) })],
])('a message with %s is ignored, not a timer', (_, body) => {
  expect(readWakerEvent({ Records: [{ eventSource: 'aws:sqs', body }] })).toEqual({ entries: [], timers: [], ignored: 1 });
});

test('a record from another source is refused, so the batch fails loudly', () => {
  expect(() => readWakerEvent({ Records: [{ eventSource: 'aws:kinesis' }] })).toThrow('aws:kinesis');
});

test('an event without records is refused', () => {
  expect(() => readWakerEvent({ shards: [0] })).toThrow('Records');
});
