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
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import type { Authorizer, AuthorizerEvent, AuthorizerResult } from '../../../functions/authorizer/app.js';
import { PUBLIC_PATHS } from '../../../functions/shared/public-paths.js';
import { createExpiringMap } from '../../../lib/domain/expiring-map.js';
import { log } from '../../../functions/shared/log.js';
import { API_TIMEOUT_S } from '../../../lib/domain/limits.js';
import { AUTHORIZER_TIMEOUT_MS, gatewayAnswer, identitySourceOf, KEY_AUTHORIZER_CACHE_TTL_S } from '../../api-gateway.js';
import type { ApiHandler } from '../http-server.js';
import type { InvocationReporter } from './invocation-report.js';
import { invokeWithTimeout, LambdaTimeoutError } from './lambda-timeout.js';

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

const TIMED_OUT: unique symbol = Symbol('timed out');

/** Lambda ends a function at its timeout: the gateway stops waiting for its answer then, and its AWS calls from then on are refused. */
async function withinTimeout<T>(
  fn: 'api' | 'authorizer',
  answer: () => Promise<T>,
  timeoutMs: number,
  invocation: { report?: InvocationReporter; requestId?: string },
): Promise<T | typeof TIMED_OUT> {
  try {
    return await invokeWithTimeout(fn, timeoutMs, answer, invocation);
  } catch (error) {
    if (error instanceof LambdaTimeoutError) return TIMED_OUT;
    throw error;
  }
}

/**
 * Lambda's synchronous invoke takes a request payload (the event as JSON) of at most 6 MiB and answers one of
 * at most 6 MiB + 100 bytes; past either, the invoke fails and API Gateway answers for the function.
 */
export const LAMBDA_SYNC_REQUEST_MAX_BYTES = 6 * 1024 * 1024;
export const LAMBDA_SYNC_RESPONSE_MAX_BYTES = 6 * 1024 * 1024 + 100;

/** JSON escaping turns one byte into at most six (`\u0000`); below this a body cannot pass the limit, so it is not measured. */
const MAX_ESCAPE_FACTOR = 6;
const ENVELOPE_ALLOWANCE_BYTES = 64 * 1024;

function jsonBytesOver(value: { body?: string }, limitBytes: number): number | undefined {
  if (Buffer.byteLength(value.body ?? '') * MAX_ESCAPE_FACTOR + ENVELOPE_ALLOWANCE_BYTES < limitBytes) return undefined;
  const bytes = Buffer.byteLength(JSON.stringify(value));
  return bytes > limitBytes ? bytes : undefined;
}

/**
 * The api invoked as Lambda invokes it: refused before it runs when the event is over Lambda's request
 * payload, cut at its timeout, and failed when its answer is over Lambda's response payload; each said
 * loudly, naming the limit, since on AWS each is a failure only CloudWatch would show.
 */
async function invokeApi(
  api: ApiHandler,
  event: APIGatewayProxyEventV2,
  context: Context,
  timeoutMs: number,
  report: InvocationReporter | undefined,
): Promise<APIGatewayProxyStructuredResultV2> {
  const requestId = event.requestContext.requestId;
  const eventBytes = jsonBytesOver(event, LAMBDA_SYNC_REQUEST_MAX_BYTES);
  if (eventBytes !== undefined) {
    log('error', "the api's event is over Lambda's synchronous request payload limit", { requestId, eventBytes, limitBytes: LAMBDA_SYNC_REQUEST_MAX_BYTES });
    return gatewayAnswer('request_too_large');
  }
  const result = await withinTimeout('api', () => api(event, context), timeoutMs, { requestId, ...(report ? { report } : {}) });
  if (result === TIMED_OUT) {
    log('error', 'the api did not answer within its Lambda timeout', { requestId, timeoutMs });
    return gatewayAnswer('function_failed');
  }
  const resultBytes = jsonBytesOver(result, LAMBDA_SYNC_RESPONSE_MAX_BYTES);
  if (resultBytes !== undefined) {
    log('error', "the api's answer is over Lambda's synchronous response payload limit", { requestId, resultBytes, limitBytes: LAMBDA_SYNC_RESPONSE_MAX_BYTES });
    return gatewayAnswer('function_failed');
  }
  return result;
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
  /** @default API_TIMEOUT_S, the api function's Lambda timeout */
  apiTimeoutMs?: number;
  /** @default KEY_AUTHORIZER_CACHE_TTL_S, as the stack sets it */
  authorizerCacheTtlMs?: number;
  /** @default Date.now */
  nowMs?: () => number;
  /** Hears of each api and authorizer invocation's end, for the runtime's report lines. */
  report?: InvocationReporter;
}): ApiHandler {
  const timeoutMs = deps.authorizerTimeoutMs ?? AUTHORIZER_TIMEOUT_MS;
  const apiTimeoutMs = deps.apiTimeoutMs ?? API_TIMEOUT_S * 1000;
  const invocation = deps.report ? { report: deps.report } : {};
  const cache = createAnswerCache(deps.authorizerCacheTtlMs ?? KEY_AUTHORIZER_CACHE_TTL_S * 1000, deps.nowMs ?? Date.now);
  return async (event, context) => {
    const { method, path } = event.requestContext.http;
    if (method === 'GET' && PUBLIC_PATHS.has(path)) return invokeApi(deps.api, event, context, apiTimeoutMs, deps.report);
    const identitySource = identitySourceOf(event);
    if (identitySource === undefined) return gatewayAnswer('unauthorized');
    let result = cache.get(identitySource);
    try {
      if (!result) {
        const answer = await withinTimeout('authorizer', () => deps.authorizer(toAuthorizerEvent(event, identitySource)), timeoutMs, invocation);
        if (answer === TIMED_OUT) throw new Error(`the authorizer did not answer within ${timeoutMs} ms`);
        result = answer;
        cache.keep(identitySource, result);
      }
    } catch (error) {
      log('error', 'authorizer failed', { requestId: event.requestContext.requestId, error });
      return gatewayAnswer('authorizer_failed');
    }
    if (!result.isAuthorized) return gatewayAnswer('forbidden');
    const requestContext = { ...event.requestContext, authorizer: { lambda: result.context } };
    return invokeApi(deps.api, { ...event, requestContext } as APIGatewayProxyEventV2, context, apiTimeoutMs, deps.report);
  };
}
