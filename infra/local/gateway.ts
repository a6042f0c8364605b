/**
 * What API Gateway does between a request and the api function, done locally
 * with the same code: every request but the public GETs goes through the
 * authorizer its route has behind API Gateway (../api-gateway.ts), is refused
 * with the gateway's own answers, and when admitted reaches the api with the
 * authorizer's context in `requestContext.authorizer.lambda`.
 *
 * Locally nothing caches the authorizer's answers, so a revoked key stops at
 * once; behind API Gateway it stops within the authorizer's cache TTL.
 */
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import type { Authorizer, AuthorizerEvent, AuthorizerResult } from '../../functions/authorizer/app.js';
import { PUBLIC_PATHS } from '../../functions/shared/public-paths.js';
import { log } from '../../functions/shared/log.js';
import { AUTHORIZER_TIMEOUT_MS, gatewayAnswer, identitySourceOf } from '../api-gateway.js';
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

export function createLocalGateway(deps: { authorizer: Authorizer; api: ApiHandler; authorizerTimeoutMs?: number }): ApiHandler {
  const timeoutMs = deps.authorizerTimeoutMs ?? AUTHORIZER_TIMEOUT_MS;
  return async (event, context) => {
    const { method, path } = event.requestContext.http;
    if (method === 'GET' && PUBLIC_PATHS.has(path)) return deps.api(event, context);
    const identitySource = identitySourceOf(event);
    if (identitySource === undefined) return gatewayAnswer('unauthorized');
    let result;
    try {
      result = await withinTimeout(deps.authorizer(toAuthorizerEvent(event, identitySource)), timeoutMs);
    } catch (error) {
      log('error', 'authorizer failed', { requestId: event.requestContext.requestId, error });
      return gatewayAnswer('authorizer_failed');
    }
    if (!result.isAuthorized) return gatewayAnswer('forbidden');
    const requestContext = { ...event.requestContext, authorizer: { lambda: result.context } };
    return deps.api({ ...event, requestContext } as APIGatewayProxyEventV2, context);
  };
}
