/**
 * Authorisation in the api function: the authorizer has said who the caller is
 * (its context); this decides, per route, whether that caller may act.
 */
import { SCOPE_ACTIONS, scopeAllows, type ScopeAction } from '../../lib/domain/api-key.js';
import { ConflictError, ForbiddenError, UnauthorizedError } from '../../lib/domain/errors.js';
import { JOB_ID_PATTERN, type Job } from '../../lib/domain/job.js';
import { JOB_TYPE_NAME_PATTERN } from '../../lib/domain/job-type.js';
import { jobToApi } from '../../lib/wire/jobs.js';
import { principalFromContext, type Principal } from '../shared/principal.js';
import type { HttpEvent } from '../shared/http.js';
import { pathParam } from './http.js';

export type Access =
  | { kind: 'public' }
  | { kind: 'admin' }
  /** Any `<action>:` scope; the route itself narrows what it returns to the caller's types. */
  | { kind: 'any_type'; action: ScopeAction }
  /** `<action>:<type>` for the job type named by path parameter `param`. */
  | { kind: 'type'; action: ScopeAction; param: 'type' | 'name' }
  /** `callback:<type>`, or the route's own job's callback token. */
  | { kind: 'callback' };

export const PUBLIC: Access = { kind: 'public' };
export const ADMIN: Access = { kind: 'admin' };
export const typeScope = (action: ScopeAction, param: 'type' | 'name' = 'type'): Access => ({ kind: 'type', action, param });

const UNAUTHENTICATED = 'a valid "Authorization: Bearer <key>" header is required';

/**
 * The caller, or an error: 401 without a principal (a route the authorizer was
 * not attached to fails closed) or with an expired key, 403 when its scopes do not cover the route.
 */
export function authorize(event: HttpEvent, access: Access, nowMs: number): Principal | undefined {
  if (access.kind === 'public') return undefined;
  const authorizer = (event.requestContext as { authorizer?: { lambda?: unknown } }).authorizer;
  const principal = principalFromContext(authorizer?.lambda);
  if (!principal) throw new UnauthorizedError(UNAUTHENTICATED);

  if (principal.kind === 'callback_token') {
    const matchesJob =
      access.kind === 'callback' &&
      pathParam(event, 'type', JOB_TYPE_NAME_PATTERN) === principal.type &&
      pathParam(event, 'id', JOB_ID_PATTERN) === principal.id;
    if (!matchesJob) throw new ForbiddenError("a callback token only opens its own job's callback and heartbeat");
    return principal;
  }

  // API Gateway may cache an admitted key for up to its TTL; its expiry still holds to the millisecond.
  if (principal.expiresAtMs !== undefined && principal.expiresAtMs <= nowMs) throw new UnauthorizedError('the key has expired');
  const { scopes } = principal;
  switch (access.kind) {
    case 'admin':
      if (!scopes.includes('admin')) throw new ForbiddenError('this route needs scope admin');
      break;
    case 'any_type':
      if (!scopes.some((scope) => scope === 'admin' || scope.startsWith(`${access.action}:`))) {
        throw new ForbiddenError(`this route needs a ${access.action}: scope`);
      }
      break;
    case 'type':
    case 'callback': {
      const action = access.kind === 'callback' ? 'callback' : access.action;
      const type = pathParam(event, access.kind === 'callback' ? 'type' : access.param, JOB_TYPE_NAME_PATTERN);
      if (!scopeAllows(scopes, action, type)) throw new ForbiddenError(`this route needs scope ${action}:${type}`);
      break;
    }
  }
  return principal;
}

/**
 * A callback or heartbeat admitted by a callback token may only report the attempt the token was issued
 * for: any other attempt is stale for that token, a conflict (invariant 3, docs/concepts/design.md#invariants) that changes nothing.
 */
export function assertCallbackAttempt(principal: Principal | undefined, attempt: number): void {
  if (principal?.kind === 'callback_token' && principal.attempt !== attempt) {
    throw new ConflictError(`the callback token was issued for attempt ${principal.attempt}, not attempt ${attempt}`);
  }
}

/**
 * Whether the caller holds any scope on `type`, so the type is no secret to it: a route that finds a resource
 * of a type the caller holds no scope on answers exactly as if there were none (404), and names no type.
 */
export function holdsScopeOn(principal: Principal | undefined, type: string): boolean {
  return SCOPE_ACTIONS.some((action) => keyAllows(principal, action, type));
}

/** Whether the caller is a key whose scopes let it `action` on `type` (a callback token never is). */
export function keyAllows(principal: Principal | undefined, action: ScopeAction, type: string): boolean {
  return principal?.kind === 'key' && scopeAllows(principal.scopes, action, type);
}

/** Whether the caller may read what `type`'s jobs and schedules hold: a key with `read:<type>` (or `read:*`, or admin), never a callback token. */
export function mayRead(principal: Principal | undefined, type: string): boolean {
  return keyAllows(principal, 'read', type);
}

/**
 * A job as the caller may see it. Routes that act on a job without reading it (enqueue-only keys cancel,
 * change and replay, callback keys and tokens report) answer in the job's shape, but a caller that may not
 * read the type gets none of what the job holds or what its runs said: its data, result, progress, attempts,
 * changes, and the keys derived from its data or naming other callers are withheld (null or empty).
 */
export function jobAnswer(job: Job, principal: Principal | undefined): Record<string, unknown> {
  const whole = jobToApi(job);
  if (mayRead(principal, job.type)) return whole;
  return {
    ...whole,
    data: null,
    result: null,
    progress: null,
    history: [],
    history_dropped: 0,
    changes: [],
    changes_dropped: 0,
    throttle_key: null,
    correlation_key: null,
    tags: [],
    dedup: null,
    debounce: null,
    cancelled_by: null,
  };
}
