/**
 * Callback tokens: the worker gives a downstream a `callback_url` carrying a
 * token bound to (type, id, attempt), so it can report the outcome without an
 * API key. Tokens are verified statelessly (an HMAC under a shared secret); a
 * token for attempt 1 verifies as attempt 1 only, so it can never end attempt 2.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

export interface CallbackTokenClaims {
  type: string;
  id: string;
  attempt: number;
}

const VERSION = 'v1';

function mac(secret: string, claims: CallbackTokenClaims): string {
  // Type names and ids cannot contain a newline, so the fields cannot be shifted into one another.
  return createHmac('sha256', secret).update(`${VERSION}\n${claims.type}\n${claims.id}\n${claims.attempt}`).digest('base64url');
}

export function createCallbackToken(secret: string, claims: CallbackTokenClaims): string {
  return `${VERSION}.${claims.attempt}.${mac(secret, claims)}`;
}

/** The attempt the token was issued for, or undefined when it was not issued for this job under this secret. */
export function verifyCallbackToken(secret: string, token: string, job: { type: string; id: string }): number | undefined {
  const match = /^v1\.([1-9][0-9]{0,5})\.([A-Za-z0-9_-]{43})$/.exec(token);
  if (!match) return undefined;
  const attempt = Number(match[1]);
  const expected = Buffer.from(mac(secret, { ...job, attempt }));
  const presented = Buffer.from(match[2]!);
  return presented.length === expected.length && timingSafeEqual(presented, expected) ? attempt : undefined;
}

/** The URL a downstream POSTs its status callback to: the job's callback route with the attempt's token. */
export function callbackUrl(apiBaseUrl: string, secret: string, claims: CallbackTokenClaims): string {
  const base = apiBaseUrl.replace(/\/+$/, '');
  const token = createCallbackToken(secret, claims);
  return `${base}/v1/jobs/${encodeURIComponent(claims.type)}/${encodeURIComponent(claims.id)}?token=${token}`;
}
