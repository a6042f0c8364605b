/** Reading API input: zod schemas whose every error names its field. */
import type { z } from 'zod';
import { ValidationError, type FieldIssue } from '../domain/errors.js';

/** Turns zod issues into field-named details; unknown fields are named one by one. */
export function issuesToDetails(error: z.ZodError): FieldIssue[] {
  return error.issues.flatMap((issue) => {
    const base = issue.path.map(String).join('.');
    if (issue.code === 'unrecognized_keys') {
      return issue.keys.map((key) => ({
        field: base ? `${base}.${key}` : key,
        message: 'unknown field',
      }));
    }
    return [{ field: base || 'body', message: issue.message }];
  });
}

export function parseWith<T>(schema: z.ZodType<T>, input: unknown): T {
  const result = schema.safeParse(input);
  if (!result.success) throw new ValidationError(issuesToDetails(result.error));
  return result.data;
}

/** An instant as the API shows it; null when absent. */
export const isoOrNull = (epochMs: number | undefined): string | null =>
  epochMs === undefined ? null : new Date(epochMs).toISOString();
