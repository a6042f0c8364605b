/**
 * Who a request comes from, as the authorizer hands it to the api function in
 * its context (`requestContext.authorizer.lambda`). API Gateway's simple
 * responses carry flat values best, so scopes travel as one space-separated string.
 */
import { z } from 'zod';
import { parseScope, type Scope } from '../../lib/domain/api-key.js';
import { JOB_ID_PATTERN } from '../../lib/domain/job.js';
import { JOB_TYPE_NAME_PATTERN } from '../../lib/domain/job-type.js';

export type Principal =
  /** A key from the table, or API_TOKEN (id `API_TOKEN`, scope admin). */
  | { kind: 'key'; keyId: string; scopes: Scope[]; expiresAtMs?: number }
  /** A per-job, per-attempt callback token: good only for that job's callback and heartbeat routes. */
  | { kind: 'callback_token'; type: string; id: string; attempt: number };

export type AuthorizerContext = Record<string, string | number>;

export function principalToContext(principal: Principal): AuthorizerContext {
  if (principal.kind === 'callback_token') {
    return { principal: 'callback_token', job_type: principal.type, job_id: principal.id, attempt: principal.attempt };
  }
  return {
    principal: 'key',
    key_id: principal.keyId,
    scopes: principal.scopes.join(' '),
    ...(principal.expiresAtMs !== undefined ? { expires_at_ms: principal.expiresAtMs } : {}),
  };
}

const scopesText = z.string().transform((text, ctx) => {
  const scopes = text.split(' ').map(parseScope);
  if (scopes.some((scope) => scope === undefined)) {
    ctx.addIssue({ code: 'custom', message: 'not a scope list' });
    return z.NEVER;
  }
  return scopes as Scope[];
});

const contextSchema = z.discriminatedUnion('principal', [
  z.object({
    principal: z.literal('key'),
    key_id: z.string().min(1),
    scopes: scopesText,
    expires_at_ms: z.coerce.number().int().optional(),
  }),
  z.object({
    principal: z.literal('callback_token'),
    job_type: z.string().regex(JOB_TYPE_NAME_PATTERN),
    job_id: z.string().regex(JOB_ID_PATTERN),
    attempt: z.coerce.number().int().min(1),
  }),
]);

/** The principal in an authorizer context; anything malformed is no principal at all, so the api fails closed. */
export function principalFromContext(context: unknown): Principal | undefined {
  const parsed = contextSchema.safeParse(context);
  if (!parsed.success) return undefined;
  const value = parsed.data;
  if (value.principal === 'callback_token') {
    return { kind: 'callback_token', type: value.job_type, id: value.job_id, attempt: value.attempt };
  }
  return {
    kind: 'key',
    keyId: value.key_id,
    scopes: value.scopes,
    ...(value.expires_at_ms !== undefined ? { expiresAtMs: value.expires_at_ms } : {}),
  };
}

const CALLBACK_ROUTE = /^\/v1\/jobs\/([^/]+)\/([^/]+?)(?:\/heartbeat)?\/?$/;

/**
 * The job a status callback (`POST /v1/jobs/{type}/{id}`) or heartbeat
 * (`POST .../heartbeat`) names, when the request is one; the only routes a callback token opens.
 */
export function callbackRouteOf(method: string, path: string): { type: string; id: string } | undefined {
  if (method !== 'POST') return undefined;
  const match = CALLBACK_ROUTE.exec(path);
  if (!match) return undefined;
  let type: string;
  let id: string;
  try {
    type = decodeURIComponent(match[1]!);
    id = decodeURIComponent(match[2]!);
  } catch {
    return undefined;
  }
  return JOB_TYPE_NAME_PATTERN.test(type) && JOB_ID_PATTERN.test(id) ? { type, id } : undefined;
}
