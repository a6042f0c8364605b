/**
 * Listing cursors: where a page ended, as base64url JSON. A cursor is handed to the caller, so it comes back as
 * any text at all: decoding yields only an object's fields, for each listing to check against what it writes.
 */
import { ValidationError } from './errors.js';

export function encodeCursor(position: object): string {
  return Buffer.from(JSON.stringify(position), 'utf8').toString('base64url');
}

/** A refusal of a cursor, naming the field; by default, that this API never returned it. */
export function invalidCursor(message = 'is not a cursor this API returned'): ValidationError {
  return new ValidationError([{ field: 'cursor', message }]);
}

/** The fields of the JSON object a cursor holds, unchecked; anything but such an object is `invalidCursor()`. */
export function cursorFields(cursor: string): Record<string, unknown> {
  let position: unknown;
  try {
    position = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw invalidCursor();
  }
  if (typeof position !== 'object' || position === null || Array.isArray(position)) throw invalidCursor();
  return position as Record<string, unknown>;
}
