/**
 * Signatures on requests to http targets. The worker sends
 *   x-djq-timestamp: <unix seconds>
 *   x-djq-signature: v1=<hex HMAC-SHA256(secret, "<timestamp>.<raw body>")>
 * A downstream recomputes the HMAC over the raw body, compares in constant
 * time, and rejects timestamps older (or newer) than a few minutes, so a
 * captured request cannot be replayed later.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export const TIMESTAMP_HEADER = 'x-djq-timestamp';
export const SIGNATURE_HEADER = 'x-djq-signature';
/** How far a request's timestamp may be from the receiver's clock. */
export const SIGNATURE_TOLERANCE_S = 300;

/** A fresh per-type signing secret: 32 random bytes, base64url, with a prefix that says what it is. */
export function newSigningSecret(): string {
  return `whsec_${randomBytes(32).toString('base64url')}`;
}

export function signatureOf(secret: string, timestampS: number, body: string): string {
  return `v1=${createHmac('sha256', secret).update(`${timestampS}.${body}`).digest('hex')}`;
}

export function signedHeaders(secret: string, timestampS: number, body: string): Record<string, string> {
  return { [TIMESTAMP_HEADER]: String(timestampS), [SIGNATURE_HEADER]: signatureOf(secret, timestampS, body) };
}

export type SignatureCheck = { valid: true } | { valid: false; reason: 'malformed' | 'stale' | 'mismatch' };

export function verifySignature(input: {
  secret: string;
  timestamp: string | undefined;
  signature: string | undefined;
  body: string;
  nowS: number;
  toleranceS?: number;
}): SignatureCheck {
  const timestampS = Number(input.timestamp);
  if (!input.timestamp || !Number.isInteger(timestampS) || !input.signature) return { valid: false, reason: 'malformed' };
  if (Math.abs(input.nowS - timestampS) > (input.toleranceS ?? SIGNATURE_TOLERANCE_S)) return { valid: false, reason: 'stale' };
  const expected = Buffer.from(signatureOf(input.secret, timestampS, input.body));
  const presented = Buffer.from(input.signature);
  const matches = presented.length === expected.length && timingSafeEqual(presented, expected);
  return matches ? { valid: true } : { valid: false, reason: 'mismatch' };
}
