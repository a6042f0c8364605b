/** What a refused input is told: the fields and messages of the ValidationError a check throws. */
import { expect } from 'vitest';
import { ValidationError, type FieldIssue } from '../../lib/domain/errors.js';
import { parseWith } from '../../lib/wire/parse.js';

/** The details of the ValidationError that parsing `input` throws. */
export function detailsOf(schema: Parameters<typeof parseWith>[0], input: unknown): FieldIssue[] {
  try {
    parseWith(schema, input);
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationError);
    return (error as ValidationError).details;
  }
  throw new Error('expected a ValidationError');
}

export const fieldsOf = (details: FieldIssue[]): string[] => details.map((detail) => detail.field);

/** The fields a ValidationError thrown by `check` names; none when it passes. */
export function fieldsRefused(check: () => unknown): string[] {
  try {
    check();
    return [];
  } catch (error) {
    return (error as ValidationError).details.map((issue) => issue.field);
  }
}
