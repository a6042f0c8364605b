/** What the waker function reads of a batch (functions/waker/app.ts): lane entries from stream records, timers from messages. */
import { expect, test } from 'vitest';
import { readWakerEvent } from '../../../../functions/waker/app.js';

const streamRecord = (image: Record<string, { S: string }>) => ({ eventSource: 'aws:dynamodb', eventName: 'MODIFY', dynamodb: { NewImage: image } });

test('a stream record of a queued lane entry says its type lane, shard and due time', () => {
  const event = { Records: [streamRecord({ pk: { S: 'JOB#a#1' }, gsi1pk: { S: 'Q#a#29400000#3' }, gsi1sk: { S: '1764000000000#1' } })] };
  expect(readWakerEvent(event).entries).toEqual([{ lane: { kind: 'queued', type: 'a' }, shard: 3, dueAtMs: 1_764_000_000_000 }]);
});

test('a stream record of a claim says when it lapses', () => {
  const event = { Records: [streamRecord({ gsi1pk: { S: 'C#29400000#1' }, gsi1sk: { S: '1764000030000#a#1' } })] };
  expect(readWakerEvent(event).entries).toEqual([{ lane: { kind: 'claims' }, shard: 1, dueAtMs: 1_764_000_030_000 }]);
});

test('a stream record off the lanes (a finished job) is counted as ignored', () => {
  const event = { Records: [streamRecord({ gsi1pk: { S: 'F#a#succeeded#0' }, gsi1sk: { S: '1764000000000#1' } }), streamRecord({ pk: { S: 'TYPE#a' } })] };
  expect(readWakerEvent(event)).toEqual({ entries: [], timers: [], ignored: 2 });
});

test('a timer message says whom to wake and for when', () => {
  const event = { Records: [{ eventSource: 'aws:sqs', body: JSON.stringify({ role: 'poller', partition: 1, dueAtMs: 5_000 }) }] };
  expect(readWakerEvent(event).timers).toEqual([{ role: 'poller', partition: 1, dueAtMs: 5_000 }]);
});

test.each([
  ['not JSON', 'wake up'],
  ['an unknown role', JSON.stringify({ role: 'worker', partition: 0, dueAtMs: 1 })],
  ['a negative partition', JSON.stringify({ role: 'poller', partition: -1, dueAtMs: 1 })],
  ['no due time', JSON.stringify({ role: 'sweeper', partition: 0 })],
])('a message with %s is ignored, not a timer', (_, body) => {
  expect(readWakerEvent({ Records: [{ eventSource: 'aws:sqs', body }] })).toEqual({ entries: [], timers: [], ignored: 1 });
});

test('a record from another source is refused, so the batch fails loudly', () => {
  expect(() => readWakerEvent({ Records: [{ eventSource: 'aws:kinesis' }] })).toThrow('aws:kinesis');
});

test('an event without records is refused', () => {
  expect(() => readWakerEvent({ shards: [0] })).toThrow('Records');
});
