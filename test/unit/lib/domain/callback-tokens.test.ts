import { describe, expect, test } from 'vitest';
import { callbackUrl, createCallbackToken, verifyCallbackToken } from '../../../../lib/domain/callback-tokens.js';
import { signatureOf, verifySignature } from '../../../../lib/domain/signing.js';

const SECRET = 'callback-secret-for-tests';
const JOB = { type: 'emails', id: 'job_1' };

describe('callback tokens', () => {
  test('a token verifies for its job and returns the attempt it was issued for', () => {
    const token = createCallbackToken(SECRET, { ...JOB, attempt: 3 });
    expect(verifyCallbackToken(SECRET, token, JOB)).toBe(3);
  });

  test('a token does not verify for another job, another type or under another secret', () => {
    const token = createCallbackToken(SECRET, { ...JOB, attempt: 1 });
    expect(verifyCallbackToken(SECRET, token, { type: 'emails', id: 'job_2' })).toBeUndefined();
    expect(verifyCallbackToken(SECRET, token, { type: 'sms', id: 'job_1' })).toBeUndefined();
    expect(verifyCallbackToken('another-secret', token, JOB)).toBeUndefined();
  });

  test('changing the attempt inside a token breaks it, so attempt 1 cannot pose as attempt 2', () => {
    const token = createCallbackToken(SECRET, { ...JOB, attempt: 1 });
    expect(verifyCallbackToken(SECRET, token.replace(/^v1\.1\./, 'v1.2.'), JOB)).toBeUndefined();
  });

  test('malformed tokens are rejected', () => {
    for (const token of ['', 'v1', 'v1.1.', 'v2.1.abc', `v1.0.${'a'.repeat(43)}`, `v1.1.${'a'.repeat(44)}`]) {
      expect(verifyCallbackToken(SECRET, token, JOB)).toBeUndefined();
    }
  });

  test('a token for an attempt of several digits verifies, up to six', () => {
    expect(verifyCallbackToken(SECRET, createCallbackToken(SECRET, { ...JOB, attempt: 12 }), JOB)).toBe(12);
    expect(verifyCallbackToken(SECRET, createCallbackToken(SECRET, { ...JOB, attempt: 999_999 }), JOB)).toBe(999_999);
    expect(verifyCallbackToken(SECRET, createCallbackToken(SECRET, { ...JOB, attempt: 1_000_000 }), JOB)).toBeUndefined();
  });

  test('a valid token with anything before or after it is rejected', () => {
    const token = createCallbackToken(SECRET, { ...JOB, attempt: 1 });
    expect(verifyCallbackToken(SECRET, `x${token}`, JOB)).toBeUndefined();
    expect(verifyCallbackToken(SECRET, `${token}x`, JOB)).toBeUndefined();
  });

  test('the callback URL drops every trailing slash of the API base URL', () => {
    const url = callbackUrl('http://localhost:3000//', SECRET, { ...JOB, attempt: 1 });
    expect(url.startsWith('http://localhost:3000/v1/jobs/emails/job_1?token=')).toBe(true);
  });

  test('the callback URL is the job callback route with the token as a query parameter', () => {
    const url = new URL(callbackUrl('http://localhost:3000/', SECRET, { type: 'emails', id: 'a:b', attempt: 2 }));
    expect(url.origin + url.pathname).toBe('http://localhost:3000/v1/jobs/emails/a%3Ab');
    expect(verifyCallbackToken(SECRET, url.searchParams.get('token') ?? '', { type: 'emails', id: 'a:b' })).toBe(2);
  });
});

describe('request signatures', () => {
  const body = '{"id":"job_1"}';
  const nowS = 1_800_000_000;
  const signature = signatureOf(SECRET, nowS, body);

  test('a signature over the timestamp and body verifies', () => {
    expect(verifySignature({ secret: SECRET, timestamp: String(nowS), signature, body, nowS: nowS + 10 })).toEqual({ valid: true });
  });

  test('a changed body or timestamp does not verify', () => {
    expect(verifySignature({ secret: SECRET, timestamp: String(nowS), signature, body: '{"id":"job_2"}', nowS })).toEqual({ valid: false, reason: 'mismatch' });
    expect(verifySignature({ secret: SECRET, timestamp: String(nowS + 1), signature, body, nowS })).toEqual({ valid: false, reason: 'mismatch' });
  });

  test('a timestamp more than five minutes away is stale, even with a valid signature', () => {
    expect(verifySignature({ secret: SECRET, timestamp: String(nowS), signature, body, nowS: nowS + 301 })).toEqual({ valid: false, reason: 'stale' });
  });

  test('missing headers are malformed', () => {
    expect(verifySignature({ secret: SECRET, timestamp: undefined, signature, body, nowS })).toEqual({ valid: false, reason: 'malformed' });
    expect(verifySignature({ secret: SECRET, timestamp: String(nowS), signature: undefined, body, nowS })).toEqual({ valid: false, reason: 'malformed' });
  });
});
