/**
 * What API Gateway's HTTP API does by itself in front of the api function,
 * written once: the stack (queue-stack.ts) gives routes their authorizers
 * from it, and the local gateway (local/gateway.ts) mimics it, so a request
 * answered one way behind API Gateway is answered the same way by `npm start`.
 *
 * Sources: the API Gateway Developer Guide, "Working with AWS Lambda
 * authorizers for HTTP APIs" (http-api-lambda-authorizer): "If the client's
 * request doesn't include the identity sources, API Gateway doesn't invoke
 * your Lambda authorizer, and the client receives a 401 error"; cached answers
 * are keyed on the identity sources, so "to enable caching, your authorizer
 * must have at least one identity source"; "if API Gateway can't invoke your
 * Lambda authorizer, or your Lambda authorizer returns a response in an
 * invalid format, clients receive a 500 Internal Server Error". The API
 * Gateway v2 API reference, CreateAuthorizer, identitySource: each must be
 * "present in the request, not null, and non-empty", "otherwise, it returns a
 * 401 Unauthorized response without calling the Lambda function". A simple
 * response of `isAuthorized: false` is a 403 `{"message":"Forbidden"}`
 * (re:Post question "http api lambda authorizer", QU4ik4HXnoRu-OQiSz12By5g).
 */
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { json } from '../functions/shared/http.js';
import { AUTHORIZER_TIMEOUT_S } from '../lib/domain/limits.js';

/** `key`: `$request.header.Authorization`, cached. `callback`: no identity source, so uncached and always invoked. */
export type RouteAuthorizer = 'key' | 'callback';

/**
 * The protected routes of their own; every other request but the public GETs takes the `$default` route,
 * behind the key authorizer.
 */
export const AUTHORIZED_ROUTES: readonly { method: 'POST'; path: string; authorizer: RouteAuthorizer }[] = [
  // A downstream calls back with the token of its callback_url and no Authorization header, which the key
  // authorizer would refuse unseen.
  { method: 'POST', path: '/v1/jobs/{type}/{id}', authorizer: 'callback' },
  { method: 'POST', path: '/v1/jobs/{type}/{id}/heartbeat', authorizer: 'callback' },
  // A batch or a bulk operation would otherwise match the callback route above, and a correlation callback
  // names no job a callback token could be checked against.
  { method: 'POST', path: '/v1/jobs/{type}/batch', authorizer: 'key' },
  { method: 'POST', path: '/v1/jobs/{type}/bulk', authorizer: 'key' },
  { method: 'POST', path: '/v1/callbacks/{correlation_key}', authorizer: 'key' },
  { method: 'POST', path: '/jobber/queue', authorizer: 'key' },
];

/**
 * How long API Gateway keeps the key authorizer's answer for one Authorization header: a revoked key stops
 * working within this. The callback authorizer has no identity source, so its answers are never kept.
 */
export const KEY_AUTHORIZER_CACHE_TTL_S = 30;

/** The authorizer function's Lambda timeout: past it the invocation fails, and API Gateway answers 500. */
export const AUTHORIZER_TIMEOUT_MS = AUTHORIZER_TIMEOUT_S * 1000;

const segments = (path: string): string[] => path.split('/');

/** A `{name}` segment matches any one non-empty segment; a literal only itself. */
function matches(template: string, path: string): boolean {
  const wanted = segments(template);
  const given = segments(path);
  return wanted.length === given.length && wanted.every((part, at) => (part.startsWith('{') ? given[at] !== '' : part === given[at]));
}

const literalSegments = (template: string): number => segments(template).filter((part) => !part.startsWith('{')).length;

/** The authorizer of the route API Gateway picks: the most specific that matches, else `$default`'s. */
export function authorizerOf(method: string, path: string): RouteAuthorizer {
  const candidates = AUTHORIZED_ROUTES.filter((route) => route.method === method && matches(route.path, path));
  candidates.sort((a, b) => literalSegments(b.path) - literalSegments(a.path));
  return candidates[0]?.authorizer ?? 'key';
}

/**
 * The values of the request's identity sources, as the authorizer event carries them, or undefined when one
 * is missing or empty: API Gateway then answers 401 without invoking the authorizer.
 */
export function identitySourceOf(event: APIGatewayProxyEventV2): string[] | undefined {
  if (authorizerOf(event.requestContext.http.method, event.requestContext.http.path) === 'callback') return [];
  const authorization = event.headers?.authorization;
  return authorization?.trim() ? [authorization] : undefined;
}

const ANSWERS = {
  /** An identity source is missing: the authorizer never ran. */
  unauthorized: { status: 401, message: 'Unauthorized' },
  /** The authorizer answered `isAuthorized: false`. */
  forbidden: { status: 403, message: 'Forbidden' },
  /** The authorizer threw, timed out or answered something else. */
  authorizer_failed: { status: 500, message: 'Internal Server Error' },
  /** The api function failed as Lambda fails it: timed out, or answered more than Lambda's response payload. */
  function_failed: { status: 500, message: 'Internal Server Error' },
  /** The request is more than Lambda takes in one synchronous invoke: the function never ran. */
  request_too_large: { status: 413, message: 'Request Entity Too Large' },
} as const;

/** API Gateway's own answer, never the api's: `{"message": ...}`, with no `error` object. */
export function gatewayAnswer(answer: keyof typeof ANSWERS): APIGatewayProxyStructuredResultV2 {
  const { status, message } = ANSWERS[answer];
  return json(status, { message });
}
