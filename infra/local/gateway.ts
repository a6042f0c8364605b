/**
 * What API Gateway does between a request and the api function, done locally
 * with the same code: every request but the public GETs goes through the
 * authorizer its route has behind API Gateway (../api-gateway.ts), is refused
 * with the gateway's own answers, and when admitted reaches the api with the
 * authorizer's context in `requestContext.authorizer.lambda`.
 *
 * Its answers are kept as API Gateway keeps them: per Authorization header,
 * admitted or refused, for KEY_AUTHORIZER_CACHE_TTL_S; a failure is not kept.
 * So a revoked key stops within that TTL here too, and a request costs the
 * authorizer's key read only once per key and period.
 */
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import type { Authorizer, AuthorizerEvent, AuthorizerResult } from '../../functions/authorizer/app.js';
import { PUBLIC_PATHS } from '../../functions/shared/public-paths.js';
import { createExpiringMap } from '../../lib/domain/expiring-map.js';
import { log } from '../../functions/shared/log.js';
import { AUTHORIZER_TIMEOUT_MS, gatewayAnswer, identitySourceOf, KEY_AUTHORIZER_CACHE_TTL_S } from '../api-gateway.js';
import type { ApiHandler } from './http-server.js';

/** The REQUEST authorizer event API Gateway builds from a request (payload format 2.0). */
export function toAuthorizerEvent(event: APIGatewayProxyEventV2, identitySource: string[]): AuthorizerEvent {
  return {
    version: '2.0',
    type: 'REQUEST',
    routeArn: `arn:aws:execute-api:local:000000000000:local/$default/${event.requestContext.http.method}${event.requestContext.http.path}`,
    identitySource,
    routeKey: event.routeKey,
    rawPath: event.rawPath,
    rawQueryString: event.rawQueryString,
    cookies: event.cookies ?? [],
    headers: event.headers,
    ...(event.queryStringParameters ? { queryStringParameters: event.queryStringParameters } : {}),
    requestContext: event.requestContext,
    ...(event.pathParameters ? { pathParameters: event.pathParameters } : {}),
    ...(event.stageVariables ? { stageVariables: event.stageVariables } : {}),
  } as AuthorizerEvent;
}

/** Lambda ends an authorizer at its timeout; locally nothing would, so the gateway stops waiting instead. */
async function withinTimeout(answer: Promise<AuthorizerResult>, timeoutMs: number): Promise<AuthorizerResult> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the authorizer did not answer within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    return await Promise.race([answer, timedOut]);
  } finally {
    clearTimeout(timer);
  }
}

/** Distinct Authorization headers within one TTL are few; the bound only keeps a flood of made-up keys from growing the map. */
const MAX_CACHED_ANSWERS = 10_000;

/** The authorizer's answers by identity source, each until its TTL ends; none for a route without identity sources. */
function createAnswerCache(ttlMs: number, nowMs: () => number) {
  const answers = createExpiringMap<AuthorizerResult>({ ttlMs, maxEntries: MAX_CACHED_ANSWERS, nowMs });
  const keyOf = (identitySource: string[]): string | undefined => (ttlMs > 0 && identitySource.length > 0 ? JSON.stringify(identitySource) : undefined);
  return {
    get(identitySource: string[]): AuthorizerResult | undefined {
      const key = keyOf(identitySource);
      return key === undefined ? undefined : answers.get(key);
    },
    keep(identitySource: string[], result: AuthorizerResult): void {
      const key = keyOf(identitySource);
      if (key !== undefined) answers.set(key, result);
    },
  };
}

export function createLocalGateway(deps: {
  authorizer: Authorizer;
  api: ApiHandler;
  authorizerTimeoutMs?: number;
  /** @default KEY_AUTHORIZER_CACHE_TTL_S, as the stack sets it */
  authorizerCacheTtlMs?: number;
  /** @default Date.now */
  nowMs?: () => number;
}): ApiHandler {
  const timeoutMs = deps.authorizerTimeoutMs ?? AUTHORIZER_TIMEOUT_MS;
  const cache = createAnswerCache(deps.authorizerCacheTtlMs ?? KEY_AUTHORIZER_CACHE_TTL_S * 1000, deps.nowMs ?? Date.now);
  return async (event, context) => {
    const { method, path } = event.requestContext.http;
    if (method === 'GET' && PUBLIC_PATHS.has(path)) return deps.api(event, context);
    const identitySource = identitySourceOf(event);
    if (identitySource === undefined) return gatewayAnswer('unauthorized');
    let result = cache.get(identitySource);
    try {
      if (!result) {
        result = await withinTimeout(deps.authorizer(toAuthorizerEvent(event, identitySource)), timeoutMs);
        cache.keep(identitySource, result);
      }
    } catch (error) {
      log('error', 'authorizer failed', { requestId: event.requestContext.requestId, error });
      return gatewayAnswer('authorizer_failed');
    }
    if (!result.isAuthorized) return gatewayAnswer('forbidden');
    const requestContext = { ...event.requestContext, authorizer: { lambda: result.context } };
    return deps.api({ ...event, requestContext } as APIGatewayProxyEventV2, context);
  };
}
