/**
 * Sizes in bytes, as the services that keep or carry a job count them: JSON as the API stores it (data, result),
 * text in UTF-8, and items as DynamoDB counts them against its 400 KB item limit.
 */
import { PayloadTooLargeError } from './errors.js';

export function utf8Bytes(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}

/**
 * Whether `text` is well-formed UTF-16: no surrogate outside a pair. A lone one cannot be sent as UTF-8, so
 * the SDK would store it as U+FFFD, and two different keys would name one counter.
 */
export const isWellFormedText = (text: string): boolean => !/\p{Cs}/u.test(text);

export function jsonBytes(value: unknown): number {
  return utf8Bytes(JSON.stringify(value) ?? '');
}

/** A PayloadTooLargeError naming `field` when `value` serialises to more than `maxBytes`. */
export function assertJsonSize(field: string, value: unknown, maxBytes: number): void {
  const bytes = jsonBytes(value);
  if (bytes > maxBytes) throw new PayloadTooLargeError(field, `${field} is ${bytes} bytes; the limit is ${maxBytes}`);
}

const ELLIPSIS = '…';
const ELLIPSIS_BYTES = utf8Bytes(ELLIPSIS);
const encoder = new TextEncoder();

/**
 * `text` in at most `maxBytes` of UTF-8: as it is when it fits, otherwise cut and ending in `…`. The cut falls
 * between characters, never inside one (a surrogate pair stays whole or goes whole).
 */
export function truncateUtf8(text: string, maxBytes: number): string {
  if (utf8Bytes(text) <= maxBytes) return text;
  const room = Math.max(0, maxBytes - ELLIPSIS_BYTES);
  // encodeInto writes whole characters only, and says how much of the text they were.
  const { read } = encoder.encodeInto(text, new Uint8Array(room));
  return `${text.slice(0, read)}${ELLIPSIS}`;
}

/** DynamoDB's most bytes in one item: attribute names and values together. */
export const DYNAMODB_ITEM_LIMIT_BYTES = 400 * 1024;

/** DynamoDB's largest number: up to 38 significant digits in 21 bytes. */
const MAX_NUMBER_BYTES = 21;

function numberBytes(value: number): number {
  // One byte per two significant digits and one more; counting every digit shown errs on the large side.
  const digits = String(value).replace(/[^0-9]/g, '').length;
  return Math.min(MAX_NUMBER_BYTES, Math.ceil(digits / 2) + 1);
}

/**
 * The size DynamoDB gives a value as the document client writes it: strings in UTF-8, numbers by their digits,
 * booleans and null one byte, lists and maps 3 bytes and 1 more per element besides what they hold (a map's
 * names included). An undefined element is not written, so it counts nothing.
 */
export function dynamoValueBytes(value: unknown): number {
  if (value === undefined) return 0;
  if (typeof value === 'string') return utf8Bytes(value);
  if (typeof value === 'number') return numberBytes(value);
  if (typeof value === 'boolean' || value === null) return 1;
  if (Array.isArray(value)) return value.reduce((bytes: number, element) => bytes + 1 + dynamoValueBytes(element), 3);
  if (typeof value === 'object') {
    let bytes = 3;
    for (const [name, element] of Object.entries(value)) if (element !== undefined) bytes += 1 + utf8Bytes(name) + dynamoValueBytes(element);
    return bytes;
  }
  throw new TypeError(`a ${typeof value} cannot be stored in DynamoDB`);
}

/** The size DynamoDB counts against its item limit: each attribute's name and value. */
export function dynamoItemBytes(item: Readonly<Record<string, unknown>>): number {
  let bytes = 0;
  for (const [name, value] of Object.entries(item)) if (value !== undefined) bytes += utf8Bytes(name) + dynamoValueBytes(value);
  return bytes;
}
