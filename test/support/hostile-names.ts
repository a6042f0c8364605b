/** The alphabet of names a hostile client sends, shared by the property tests that drive names through the api. */
import fc from 'fast-check';

/** Every member a plain object inherits, `__proto__` and `constructor` among them. */
const OBJECT_MEMBERS = Object.getOwnPropertyNames(Object.prototype);

/** Names a client could send: inherited members, %-escapes, any unicode, names at and past every length limit. */
export const hostileName = fc.oneof(
  fc.constantFrom(...OBJECT_MEMBERS, 'prototype', 'length', 'name', '*'),
  fc.tuple(fc.constantFrom(...OBJECT_MEMBERS), fc.constantFrom('.', '%', ' ', '\u0000', '.toString')).map(([member, tail]) => member + tail),
  fc.constantFrom('%00', '%2F', '%25', '%7B%7D', '%', '%zz', '..%2F..', '%E2%80%AE', '%5F%5Fproto%5F%5F'),
  fc.string({ unit: 'grapheme', minLength: 1, maxLength: 12 }),
  fc.string({ unit: 'binary', minLength: 1, maxLength: 12 }),
  fc.constantFrom('x'.repeat(128), 'x'.repeat(129), '€'.repeat(128), '\u{1F600}'.repeat(64), 'y'.repeat(5_000)),
);
