/**
 * What API Gateway does between a request and the api function, done locally
 * with the same code: every path but the public ones goes through the
 * authorizer first, and an admitted request reaches the api with the
 * authorizer's context in `requestContext.authorizer.lambda`.
 *
 * Locally nothing caches the authorizer's answers, so a revoked key stops at
 * once; behind API Gateway it stops within the authorizer's cache TTL.
 */
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import type { Authorizer, AuthorizerEvent } from '../../functions/authorizer/app.js';
import { PUBLIC_PATHS } from '../../functions/api/app.js';
import { errorBody, json } from '../../functions/api/http.js';
import { log } from '../../functions/shared/log.js';
import type { ApiHandler } from './http-server.js';

/** The REQUEST authorizer event API Gateway builds from a request (payload format 2.0). */
export function toAuthorizerEvent(event: APIGatewayProxyEventV2): AuthorizerEvent {
  const authorization = event.headers?.authorization;
  return {
    version: '2.0',
    type: 'REQUEST',
    routeArn: `arn:aws:execute-api:local:000000000000:local/$default/${event.requestContext.http.method}${event.requestContext.http.path}`,
    identitySource: authorization === undefined ? [] : [authorization],
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

export function createLocalGateway(deps: { authorizer: Authorizer; api: ApiHandler }): ApiHandler {
  return async (event, context) => {
    if (PUBLIC_PATHS.has(event.requestContext.http.path)) return deps.api(event, context);
    const requestId = event.requestContext.requestId;
    let result;
    try {
      result = await deps.authorizer(toAuthorizerEvent(event));
    } catch (error) {
      log('error', 'authorizer failed', { requestId, error });
      return json(500, errorBody('internal', 'internal error', requestId));
    }
    if (!result.isAuthorized) {
      return json(401, errorBody('unauthorized', 'a valid "Authorization: Bearer <key>" header is required', requestId));
    }
    const requestContext = { ...event.requestContext, authorizer: { lambda: result.context } };
    return deps.api({ ...event, requestContext } as APIGatewayProxyEventV2, context);
  };
}
