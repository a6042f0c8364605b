/** A value's size as JSON, against a limit (lib/domain/json-size.ts); sizes as DynamoDB counts them are in json-size.item-size.test.ts. */
import { expect, test } from 'vitest';
import { PayloadTooLargeError } from '../../../../lib/domain/errors.js';
import { assertJsonSize, jsonBytes } from '../../../../lib/domain/json-size.js';

test('a value exactly as large as the limit fits; a byte more is too large', () => {
  expect(jsonBytes('ab')).toBe(4);
  expect(() => assertJsonSize('data', 'ab', 4)).not.toThrow();
  expect(() => assertJsonSize('data', 'ab', 3)).toThrow(PayloadTooLargeError);
});

test('a value too large is refused naming its field, its size and the limit', () => {
  expect(() => assertJsonSize('result', 'ab', 3)).toThrow('result is 4 bytes; the limit is 3');
});

test('a value with no JSON form (undefined) counts no bytes', () => {
  expect(jsonBytes(undefined)).toBe(0);
});
