/** The local event filter (infra/local/aws/table-stream.ts), on the waker's filters as the stack sets them: what Lambda would hand the waker. */
import { describe, expect, test } from 'vitest';
import { WAKER_STREAM_FILTERS } from '../../../../../infra/waker.js';
import { matchesFilter } from '../../../../../infra/local/aws/table-stream.js';

const record = (eventName: string, image?: Record<string, unknown>) => ({ eventName, dynamodb: { Keys: { pk: { S: 'JOB#a#1' } }, ...(image ? { NewImage: image } : {}) } });
const handedToWaker = (value: unknown): boolean => WAKER_STREAM_FILTERS.some((pattern) => matchesFilter(pattern, value));

describe('the waker is handed', () => {
  test('a queued lane entry put', () => {
    expect(handedToWaker(record('INSERT', { gsi1pk: { S: 'Q#a#29400000#0' }, gsi1sk: { S: '1#1' } }))).toBe(true);
  });

  test('a claim written over a queued entry', () => {
    expect(handedToWaker(record('MODIFY', { gsi1pk: { S: 'C#29400000#0' }, gsi1sk: { S: '1#a#1' } }))).toBe(true);
  });
});

describe('the waker is not handed', () => {
  test('a job that finished: its entry is a listing, not a lane', () => {
    expect(handedToWaker(record('MODIFY', { gsi1pk: { S: 'F#a#succeeded#0' } }))).toBe(false);
  });

  test('an item with no index keys', () => {
    expect(handedToWaker(record('INSERT', { pk: { S: 'TYPE#a' } }))).toBe(false);
  });

  test('an item removed, though its last image was a lane entry', () => {
    expect(handedToWaker({ ...record('REMOVE'), dynamodb: { OldImage: { gsi1pk: { S: 'Q#a#1#0' } } } })).toBe(false);
  });

  test('a number where the pattern asks a string', () => {
    expect(handedToWaker(record('INSERT', { gsi1pk: { N: '1' } }))).toBe(false);
  });
});

test('a field of the record\'s prototype is never matched: "constructor" is no field of a record', () => {
  expect(matchesFilter({ constructor: ['x'] }, {})).toBe(false);
});

test('a pattern with a rule the local filter does not know is refused, not guessed', () => {
  expect(() => matchesFilter({ eventName: [{ 'anything-but': ['REMOVE'] }] }, { eventName: 'INSERT' })).toThrow('exact values and prefixes only');
});
