/** The size limits of JSON a job carries (data, result), measured as the API would store it. */
import { PayloadTooLargeError } from './errors.js';

export function jsonBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value) ?? '', 'utf8');
}

/** A PayloadTooLargeError naming `field` when `value` serialises to more than `maxBytes`. */
export function assertJsonSize(field: string, value: unknown, maxBytes: number): void {
  const bytes = jsonBytes(value);
  if (bytes > maxBytes) throw new PayloadTooLargeError(field, `${field} is ${bytes} bytes; the limit is ${maxBytes}`);
}
