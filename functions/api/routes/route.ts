/** What the route modules share: a route's signature, the api's dependencies, and the path parameters routes name. */
import { mayRead } from '../access.js';
import type { AlarmStatus } from '../../../lib/domain/alarms.js';
import type { DeployedCost } from '../../../lib/domain/deployed-cost.js';
import type { QueueContext } from '../../../lib/queue/context.js';
import type { CustomRetryPolicies } from '../../../lib/domain/retry.js';
import { JOB_ID_PATTERN } from '../../../lib/domain/job.js';
import { JOB_TYPE_NAME_PATTERN, type JobType } from '../../../lib/domain/job-type.js';
import { listJobTypes } from '../../../lib/queue/catalog/job-types.js';
import type { JobTypeCache } from '../../../lib/queue/catalog/job-type-cache.js';
import type { TargetAddressPolicy } from '../../../lib/targets/addresses.js';
import type { HttpEvent, HttpResponse } from '../../shared/http.js';
import type { Principal } from '../../shared/principal.js';
import { pathParam } from '../http.js';

/**
 * The worker's code as far as the api needs it: the handlers a job type may target, only by name (the keys
 * of `handlers`, so the worker's own registry serves too), and the custom retry policies, which a status
 * callback's failure goes through.
 */
export interface WorkerCatalog {
  handlers: Readonly<Record<string, unknown>>;
  retryPolicies: CustomRetryPolicies;
}

export interface ApiDeps {
  ctx: QueueContext;
  /** So a job type can only name handlers and retry policies that exist. */
  registry: WorkerCatalog;
  /**
   * The addresses the worker's http targets may reach, so a URL it would refuse is refused when defined.
   * @default LOCAL_TARGET_ADDRESSES
   */
  targetAddressPolicy?: TargetAddressPolicy;
  /**
   * The stack's alarms' states, where the server evaluates them itself (the local runtime); `GET /v1/stats`
   * shows them. Deployed the api does not read CloudWatch, and they are left out.
   */
  alarms?: () => readonly AlarmStatus[];
  /** What the traffic so far would have cost deployed, where the server meters itself (the local runtime); `GET /v1/stats` shows it. */
  deployedCost?: () => DeployedCost;
}

/**
 * What routes share within one api process: the job types as read within JOB_TYPES_REFRESH_MS, so an
 * enqueue or a callback does not read its type every time (pollers act on types as stale as that already).
 */
export interface RouteDeps extends ApiDeps {
  jobTypes: JobTypeCache;
}

/** A route gets the caller the api authorised (undefined on public routes). */
export type Route = (event: HttpEvent, principal: Principal | undefined) => Promise<HttpResponse>;

export const typeName = (event: HttpEvent, param = 'type'): string => pathParam(event, param, JOB_TYPE_NAME_PATTERN);
export const jobId = (event: HttpEvent): string => pathParam(event, 'id', JOB_ID_PATTERN);

/** The job types the caller may read, for the routes that answer about every type at once. */
export async function readableJobTypes(ctx: QueueContext, principal: Principal | undefined): Promise<JobType[]> {
  return (await listJobTypes(ctx)).filter((jobType) => mayRead(principal, jobType.name));
}
