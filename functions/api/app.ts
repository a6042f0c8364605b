/** The api function, built from its dependencies so Lambda and the local runtime serve the same code. */
import middy from '@middy/core';
import httpRouterHandler from '@middy/http-router';
import type { Context } from 'aws-lambda';
import { NotFoundError } from '../../lib/domain/errors.js';
import type { HttpEvent, HttpResponse } from '../shared/http.js';
import { log } from '../shared/log.js';
import { DASHBOARD_PATHS } from '../shared/public-paths.js';
import { PUBLIC, authorize, type Access } from './access.js';
import { dashboardRoutes } from './dashboard.js';
import { errorResponse } from './http-errors.js';
import { OPERATIONS, type Method } from './operations.js';
import { createRoutes } from './routes/index.js';
import type { ApiDeps, Route } from './routes/route.js';

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
      // The dashboard's page asks for a key itself; it holds no data of its own.
      route('GET', DASHBOARD_PATHS.page, PUBLIC, dashboardRoutes.page),
      route('GET', DASHBOARD_PATHS.script, PUBLIC, dashboardRoutes.script),
      route('GET', DASHBOARD_PATHS.styles, PUBLIC, dashboardRoutes.styles),
      ...OPERATIONS.map((operation) => route(operation.method, operation.path, operation.access, routes[operation.route])),
    ],
    notFoundResponse: ({ method, path }: { method: string; path: string }) => {
      throw new NotFoundError(`no route ${method} ${path}`);
    },
  }) as unknown as (event: HttpEvent, context: Context) => Promise<HttpResponse>;

  return middy<HttpEvent, HttpResponse>()
    .onError((request) => {
      const requestId = request.event.requestContext?.requestId;
      const { response, internal, unavailable } = errorResponse(request.error, requestId);
      if (internal) log('error', 'request failed', { requestId, error: request.error });
      // Expected under overload and answered with Retry-After; logged without its stack, so a burst does not flood the log.
      else if (unavailable) log('warn', 'request refused: DynamoDB unavailable', { requestId, error: String(request.error) });
      request.response = response;
    })
    .handler(router);
}
