/**
 * Authentication by callback token, the one place it happens: a downstream
 * given a `callback_url` may POST the job's status callback or heartbeat with
 * the `token` query parameter instead of an API key. The token names the job
 * and the attempt it was issued for (lib/callback-tokens.ts); the route then
 * refuses (409) a body whose `attempt` is not that attempt.
 */
import { verifyCallbackToken } from '../../lib/callback-tokens.js';
import { ConflictError, UnauthorizedError } from '../../lib/errors.js';
import type { HttpEvent } from './http.js';

const CALLBACK_ROUTE = /^\/v1\/jobs\/([^/]+)\/([^/]+?)(?:\/heartbeat)?$/;

/** Attempts proven by the token of each request authenticated that way. */
const tokenAttempts = new WeakMap<HttpEvent, number>();

function decoded(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}

/**
 * False when the request carries no callback token (it needs an API key then); true when it carries a valid
 * one for the job its path names; an UnauthorizedError for any other token, or a token on any other route.
 */
export function authenticateByCallbackToken(event: HttpEvent, secret: string | undefined): boolean {
  const token = event.queryStringParameters?.token;
  if (token === undefined) return false;
  const match = event.requestContext.http.method === 'POST' ? CALLBACK_ROUTE.exec(event.requestContext.http.path) : null;
  if (!match) throw new UnauthorizedError('a callback token is accepted only by a job\'s status callback and heartbeat routes');
  const type = decoded(match[1]!);
  const id = decoded(match[2]!);
  const attempt = secret !== undefined && type !== undefined && id !== undefined ? verifyCallbackToken(secret, token, { type, id }) : undefined;
  if (attempt === undefined) throw new UnauthorizedError('the callback token is not valid for this job');
  tokenAttempts.set(event, attempt);
  return true;
}

/** A request authenticated by callback token may report on its token's attempt only; a ConflictError otherwise. */
export function assertCallbackTokenAttempt(event: HttpEvent, attempt: number): void {
  const tokenAttempt = tokenAttempts.get(event);
  if (tokenAttempt !== undefined && tokenAttempt !== attempt) {
    throw new ConflictError(`the callback token was issued for attempt ${tokenAttempt}, not attempt ${attempt}`);
  }
}
