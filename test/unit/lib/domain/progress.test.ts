/** A running attempt's progress reports, as a handler gives them: what is kept and what is refused (lib/domain/progress.ts). */
import { expect, test } from 'vitest';
import { PayloadTooLargeError, ValidationError } from '../../../../lib/domain/errors.js';
import { MAX_PROGRESS_BYTES, MAX_PROGRESS_MESSAGE_CHARS, assertProgressFits } from '../../../../lib/domain/progress.js';

const PERCENT_RULE = [{ field: 'progress.percent', message: 'must be a number from 0 to 100' }];
const MESSAGE_RULE = [{ field: 'progress.message', message: 'must be a string of at most 1000 characters' }];

function refusal(report: Parameters<typeof assertProgressFits>[0]): unknown {
  try {
    assertProgressFits(report);
  } catch (error) {
    return error;
  }
  return undefined;
}

test('an empty report, and one at 0 and at 100 percent, fit', () => {
  expect(() => assertProgressFits({})).not.toThrow();
  expect(() => assertProgressFits({ percent: 0 })).not.toThrow();
  expect(() => assertProgressFits({ percent: 100, message: 'done', data: { rows: 3 } })).not.toThrow();
});

test.each([-0.5, 100.5, Number.NaN, Number.POSITIVE_INFINITY])('a percent of %s is refused, naming progress.percent', (percent) => {
  const error = refusal({ percent });
  expect(error).toBeInstanceOf(ValidationError);
  expect((error as ValidationError).details).toStrictEqual(PERCENT_RULE);
});

test('a message of 1000 characters fits; one of 1001 is refused, naming progress.message', () => {
  expect(() => assertProgressFits({ message: 'm'.repeat(MAX_PROGRESS_MESSAGE_CHARS) })).not.toThrow();
  const error = refusal({ message: 'm'.repeat(MAX_PROGRESS_MESSAGE_CHARS + 1) });
  expect(error).toBeInstanceOf(ValidationError);
  expect((error as ValidationError).details).toStrictEqual(MESSAGE_RULE);
});

test('a message that is not a string is refused', () => {
  expect((refusal({ message: 42 as unknown as string }) as ValidationError).details).toStrictEqual(MESSAGE_RULE);
});

test('a report over 8 KiB as JSON is too large, naming progress', () => {
  const error = refusal({ data: 'x'.repeat(MAX_PROGRESS_BYTES) });
  expect(error).toBeInstanceOf(PayloadTooLargeError);
  expect((error as PayloadTooLargeError).field).toBe('progress');
});
