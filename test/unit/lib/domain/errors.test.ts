/** The queue's errors carry their own names, which logs, answers and retries tell them apart by (lib/domain/errors.ts). */
import { expect, test } from 'vitest';
import * as errors from '../../../../lib/domain/errors.js';

test.each([
  ['ValidationError', () => new errors.ValidationError([])],
  ['NotFoundError', () => new errors.NotFoundError('gone')],
  ['ConflictError', () => new errors.ConflictError('taken')],
  ['PayloadTooLargeError', () => new errors.PayloadTooLargeError('data', 'big')],
  ['UnsupportedMediaTypeError', () => new errors.UnsupportedMediaTypeError('text/plain')],
  ['UnauthorizedError', () => new errors.UnauthorizedError('who')],
  ['ForbiddenError', () => new errors.ForbiddenError('no')],
  ['ClaimLostError', () => new errors.ClaimLostError('lost')],
  ['ConfigError', () => new errors.ConfigError('bad')],
])('a %s is named so', (name, make) => {
  // Made inside the test, so that the mutation run counts the constructor as this test's.
  const error = make();
  expect(error.name).toBe(name);
  expect(error).toBeInstanceOf(errors.QueueError);
});

test("a ValidationError's message lists each field with its problem", () => {
  const error = new errors.ValidationError([
    { field: 'a', message: 'is wrong' },
    { field: 'b', message: 'is missing' },
  ]);
  expect(error.message).toBe('a: is wrong; b: is missing');
});

test('a ConflictError names no field unless given one', () => {
  expect(new errors.ConflictError('taken').details).toStrictEqual([]);
});
