/** The api function, built from its dependencies so Lambda and the local runtime serve the same code. */
import { timingSafeEqual, createHash } from 'node:crypto';
import middy from '@middy/core';
import httpRouterHandler from '@middy/http-router';
import type { Context } from 'aws-lambda';
import { NotFoundError, UnauthorizedError } from '../../lib/errors.js';
import { log } from '../shared/log.js';
import { authenticateByCallbackToken } from './callback-auth.js';
import { bearerToken, errorResponse, type HttpEvent, type HttpResponse } from './http.js';
import { createRoutes, type ApiDeps, type Route } from './routes.js';

const digest = (value: string): Buffer => createHash('sha256').update(value).digest();

/** Constant-time comparison of digests, so the token cannot be guessed byte by byte from response times. */
function tokenMatches(presented: string | undefined, expected: string): boolean {
  return presented !== undefined && timingSafeEqual(digest(presented), digest(expected));
}

const PUBLIC_PATHS = new Set(['/health']);

export function createApiHandler(deps: ApiDeps) {
  const routes = createRoutes(deps);
  const route = (method: 'GET' | 'PUT' | 'POST' | 'DELETE', path: string, handler: Route) => ({ method, path, handler });
  const router = httpRouterHandler({
    routes: [
      route('GET', '/health', routes.health),
      route('GET', '/v1/job-types', routes.listJobTypes),
      route('GET', '/v1/job-types/{name}', routes.getJobType),
      route('PUT', '/v1/job-types/{name}', routes.putJobType),
      route('POST', '/v1/jobs/{type}', routes.enqueueWithServerId),
      route('PUT', '/v1/jobs/{type}/{id}', routes.enqueueWithId),
      route('GET', '/v1/jobs/{type}/{id}', routes.getJob),
      route('POST', '/v1/jobs/{type}/{id}', routes.callback),
      route('DELETE', '/v1/jobs/{type}/{id}', routes.cancel),
      route('POST', '/v1/jobs/{type}/{id}/heartbeat', routes.heartbeat),
      route('POST', '/v1/jobs/{type}/{id}/replay', routes.replay),
    ],
    notFoundResponse: ({ method, path }: { method: string; path: string }) => {
      throw new NotFoundError(`no route ${method} ${path}`);
    },
  }) as unknown as (event: HttpEvent, context: Context) => Promise<HttpResponse>;

  return middy<HttpEvent, HttpResponse>()
    .before((request) => {
      if (PUBLIC_PATHS.has(request.event.requestContext.http.path)) return;
      if (authenticateByCallbackToken(request.event, deps.callbackTokenSecret)) return;
      if (!tokenMatches(bearerToken(request.event), deps.adminToken)) {
        throw new UnauthorizedError('a valid "Authorization: Bearer <token>" header is required');
      }
    })
    .onError((request) => {
      const requestId = request.event.requestContext?.requestId;
      const { response, internal } = errorResponse(request.error, requestId);
      if (internal) log('error', 'request failed', { requestId, error: request.error });
      request.response = response;
    })
    .handler(router);
}
