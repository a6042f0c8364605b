/** The routes of docs/reference/operations.md (functions/api/operations.ts lists them), one module per resource: each parses, calls lib/, and maps the result. */
import { json } from '../../shared/http.js';
import { openApiDocument } from '../openapi.js';
import type { RouteName } from '../operations.js';
import { bulkRoutes } from './bulk.js';
import { callbackRoutes } from './callbacks.js';
import { jobTypeRoutes } from './job-types.js';
import { jobRoutes } from './jobs.js';
import { keyRoutes } from './keys.js';
import { createJobTypeCache } from '../../../lib/queue/catalog/job-type-cache.js';
import type { ApiDeps, Route } from './route.js';
import { scheduleRoutes } from './schedules.js';
import { statsRoutes } from './stats.js';

export function createRoutes(apiDeps: ApiDeps) {
  const deps = { ...apiDeps, jobTypes: createJobTypeCache(apiDeps.ctx) };
  // Built on the first request only: most api containers never serve it.
  let openApi: Record<string, unknown> | undefined;
  return {
    health: async () => json(200, { status: 'ok' }),
    openApi: async () => json(200, (openApi ??= openApiDocument())),
    ...jobTypeRoutes(deps),
    ...statsRoutes(deps),
    ...jobRoutes(deps),
    ...bulkRoutes(deps),
    ...callbackRoutes(deps),
    ...keyRoutes(deps),
    ...scheduleRoutes(deps),
  } satisfies Record<RouteName, Route>;
}
