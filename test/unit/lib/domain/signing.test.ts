/** Signatures on requests to http targets, as the worker makes them (lib/domain/signing.ts); their check is in callback-tokens.test.ts. */
import { createHmac } from 'node:crypto';
import { expect, test } from 'vitest';
import { SIGNATURE_HEADER, TIMESTAMP_HEADER, newSigningSecret, signedHeaders, verifySignature } from '../../../../lib/domain/signing.js';

test('a signing secret is whsec_ and 32 random bytes in base64url, a new one each time', () => {
  const secret = newSigningSecret();
  expect(secret).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);
  expect(newSigningSecret()).not.toBe(secret);
});

test('a signed request carries its timestamp in seconds and v1= the hex HMAC-SHA256 of "<timestamp>.<body>"', () => {
  const expected = createHmac('sha256', 'whsec_k').update('1700000000.{"a":1}').digest('hex');
  expect(signedHeaders('whsec_k', 1_700_000_000, '{"a":1}')).toStrictEqual({ [TIMESTAMP_HEADER]: '1700000000', [SIGNATURE_HEADER]: `v1=${expected}` });
  expect([TIMESTAMP_HEADER, SIGNATURE_HEADER]).toEqual(['x-djq-timestamp', 'x-djq-signature']);
});

test('a timestamp exactly at the tolerance is still accepted', () => {
  const headers = signedHeaders('whsec_k', 1_000, 'b');
  const check = (nowS: number) =>
    verifySignature({ secret: 'whsec_k', timestamp: headers[TIMESTAMP_HEADER], signature: headers[SIGNATURE_HEADER], body: 'b', nowS });
  expect(check(1_300)).toStrictEqual({ valid: true });
  expect(check(700)).toStrictEqual({ valid: true });
  expect(check(699)).toStrictEqual({ valid: false, reason: 'stale' });
});

test('a receiver may set a tolerance of its own', () => {
  const headers = signedHeaders('whsec_k', 1_000, 'b');
  const input = { secret: 'whsec_k', timestamp: headers[TIMESTAMP_HEADER], signature: headers[SIGNATURE_HEADER], body: 'b', nowS: 1_011 };
  expect(verifySignature({ ...input, toleranceS: 10 })).toStrictEqual({ valid: false, reason: 'stale' });
  expect(verifySignature({ ...input, toleranceS: 11 })).toStrictEqual({ valid: true });
});

test('a timestamp that is not a whole number is malformed', () => {
  const signature = signedHeaders('whsec_k', 1_000, 'b')[SIGNATURE_HEADER];
  expect(verifySignature({ secret: 'whsec_k', timestamp: '1000.5', signature, body: 'b', nowS: 1_000 })).toStrictEqual({ valid: false, reason: 'malformed' });
  expect(verifySignature({ secret: 'whsec_k', timestamp: 'soon', signature, body: 'b', nowS: 1_000 })).toStrictEqual({ valid: false, reason: 'malformed' });
});

test('a signature of another length is a mismatch, not an error', () => {
  expect(verifySignature({ secret: 'whsec_k', timestamp: '1000', signature: 'v1=abc', body: 'b', nowS: 1_000 })).toStrictEqual({ valid: false, reason: 'mismatch' });
});
