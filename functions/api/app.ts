/** The api function, built from its dependencies so Lambda and the local runtime serve the same code. */
import middy from '@middy/core';
import httpRouterHandler from '@middy/http-router';
import type { Context } from 'aws-lambda';
import { NotFoundError } from '../../lib/domain/errors.js';
import type { HttpEvent, HttpResponse } from '../shared/http.js';
import { log } from '../shared/log.js';
import { DASHBOARD_PATHS } from '../shared/public-paths.js';
import { ADMIN, PUBLIC, authorize, typeScope, type Access } from './access.js';
import { dashboardRoutes } from './dashboard.js';
import { errorResponse } from './http-errors.js';
import { createRoutes } from './routes/index.js';
import type { ApiDeps, Route } from './routes/route.js';

type Method = 'GET' | 'PUT' | 'POST' | 'PATCH' | 'DELETE';

/**
 * The api function trusts the authorizer's context: API Gateway sets it and
 * the function is invoked only by the API. It still fails closed when the
 * context is missing, and checks the scope each route needs in this one table.
 */
export function createApiHandler(deps: ApiDeps) {
  const routes = createRoutes(deps);
  const route = (method: Method, path: string, access: Access, handler: Route) => ({
    method,
    path,
    handler: (event: HttpEvent) => handler(event, authorize(event, access, deps.ctx.nowMs())),
  });
  const router = httpRouterHandler({
    routes: [
      route('GET', '/health', PUBLIC, routes.health),
      // The dashboard's page asks for a key itself; it holds no data of its own.
      route('GET', DASHBOARD_PATHS.page, PUBLIC, dashboardRoutes.page),
      route('GET', DASHBOARD_PATHS.script, PUBLIC, dashboardRoutes.script),
      route('GET', DASHBOARD_PATHS.styles, PUBLIC, dashboardRoutes.styles),
      route('GET', '/v1/job-types', { kind: 'any_type', action: 'read' }, routes.listJobTypes),
      route('GET', '/v1/job-types/{name}', typeScope('read', 'name'), routes.getJobType),
      route('PUT', '/v1/job-types/{name}', ADMIN, routes.putJobType),
      route('POST', '/v1/job-types/{name}/pause', ADMIN, routes.pauseJobType),
      route('POST', '/v1/job-types/{name}/resume', ADMIN, routes.resumeJobType),
      route('GET', '/v1/stats', { kind: 'any_type', action: 'read' }, routes.stats),
      route('GET', '/v1/metrics', { kind: 'any_type', action: 'read' }, routes.metrics),
      route('POST', '/v1/jobs/{type}', typeScope('enqueue'), routes.enqueueWithServerId),
      route('GET', '/v1/jobs/{type}', typeScope('read'), routes.listJobs),
      // Before the status callback's `/v1/jobs/{type}/{id}`: dynamic routes match in this order.
      route('POST', '/v1/jobs/{type}/batch', typeScope('enqueue'), routes.enqueueBatch),
      route('PUT', '/v1/jobs/{type}/{id}', typeScope('enqueue'), routes.enqueueWithId),
      route('GET', '/v1/jobs/{type}/{id}', typeScope('read'), routes.getJob),
      route('POST', '/v1/jobs/{type}/{id}', { kind: 'callback' }, routes.callback),
      route('DELETE', '/v1/jobs/{type}/{id}', typeScope('enqueue'), routes.cancel),
      route('PATCH', '/v1/jobs/{type}/{id}', typeScope('enqueue'), routes.changeJob),
      route('POST', '/v1/jobs/{type}/{id}/heartbeat', { kind: 'callback' }, routes.heartbeat),
      route('POST', '/v1/jobs/{type}/{id}/replay', typeScope('enqueue'), routes.replay),
      // The job's type is known only once the key is looked up: the route checks callback:<type> itself.
      route('POST', '/v1/callbacks/{correlation_key}', { kind: 'any_type', action: 'callback' }, routes.callbackByCorrelationKey),
      // The type is in the body: the route checks enqueue:<type> itself.
      route('POST', '/jobber/queue', { kind: 'any_type', action: 'enqueue' }, routes.jobberQueue),
      route('POST', '/v1/keys', ADMIN, routes.createKey),
      route('GET', '/v1/keys', ADMIN, routes.listKeys),
      route('DELETE', '/v1/keys/{id}', ADMIN, routes.revokeKey),
    ],
    notFoundResponse: ({ method, path }: { method: string; path: string }) => {
      throw new NotFoundError(`no route ${method} ${path}`);
    },
  }) as unknown as (event: HttpEvent, context: Context) => Promise<HttpResponse>;

  return middy<HttpEvent, HttpResponse>()
    .onError((request) => {
      const requestId = request.event.requestContext?.requestId;
      const { response, internal } = errorResponse(request.error, requestId);
      if (internal) log('error', 'request failed', { requestId, error: request.error });
      request.response = response;
    })
    .handler(router);
}
