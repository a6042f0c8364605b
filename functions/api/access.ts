/**
 * Authorisation in the api function: the authorizer has said who the caller is
 * (its context); this decides, per route, whether that caller may act.
 */
import { scopeAllows, type ScopeAction } from '../../lib/domain/api-key.js';
import { ConflictError, ForbiddenError, UnauthorizedError } from '../../lib/domain/errors.js';
import { JOB_ID_PATTERN } from '../../lib/domain/job.js';
import { JOB_TYPE_NAME_PATTERN } from '../../lib/domain/job-type.js';
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
 * for: any other attempt is stale for that token, a conflict (DESIGN §4.3) that changes nothing.
 */
export function assertCallbackAttempt(principal: Principal | undefined, attempt: number): void {
  if (principal?.kind === 'callback_token' && principal.attempt !== attempt) {
    throw new ConflictError(`the callback token was issued for attempt ${principal.attempt}, not attempt ${attempt}`);
  }
}
