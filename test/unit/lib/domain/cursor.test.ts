/** Listing cursors: what a page hands out, and what comes back from a caller (lib/domain/cursor.ts). */
import { expect, test } from 'vitest';
import { cursorFields, encodeCursor, invalidCursor } from '../../../../lib/domain/cursor.js';
import { ValidationError } from '../../../../lib/domain/errors.js';

const asCursor = (text: string): string => Buffer.from(text, 'utf8').toString('base64url');

test("a cursor gives back the fields of the position it was made of", () => {
  expect(cursorFields(encodeCursor({ pk: 'JOB#t#1', n: 3 }))).toStrictEqual({ pk: 'JOB#t#1', n: 3 });
});

test('a cursor is base64url JSON, safe in a query string', () => {
  const cursor = encodeCursor({ text: '??>>~~' });
  expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);
  expect(Buffer.from(cursor, 'base64url').toString('utf8')).toBe('{"text":"??>>~~"}');
});

test.each([
  ['text that is not JSON', 'not json'],
  ['a JSON array', '[1,2]'],
  ['JSON null', 'null'],
  ['a JSON number', '42'],
  ['a JSON string', '"pk"'],
])('%s is no cursor this API returned', (_what, text) => {
  expect(() => cursorFields(asCursor(text))).toThrow(invalidCursor());
});

test('a refused cursor is a ValidationError of the field cursor', () => {
  const error = invalidCursor();
  expect(error).toBeInstanceOf(ValidationError);
  expect(error.details).toStrictEqual([{ field: 'cursor', message: 'is not a cursor this API returned' }]);
});

test('a listing may refuse a cursor for a reason of its own', () => {
  expect(invalidCursor('belongs to another listing').details).toStrictEqual([{ field: 'cursor', message: 'belongs to another listing' }]);
});
