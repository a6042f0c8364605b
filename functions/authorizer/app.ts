/**
 * The HTTP API REQUEST authorizer (simple responses), built from its
 * dependencies so API Gateway and the local runtime run the same rules.
 *
 * It authenticates only: a valid key is admitted with its scopes in the
 * context, and the api function decides per route. It must not decide per
 * route, because API Gateway caches its answer by the Authorization header
 * alone, for every route that header is then sent to.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { APIGatewayRequestAuthorizerEventV2, APIGatewaySimpleAuthorizerWithContextResult } from 'aws-lambda';
import { verifyApiKey } from '../../lib/queue/catalog/api-keys.js';
import { verifyCallbackToken } from '../../lib/domain/callback-tokens.js';
import { SecretNotCreatedError, type SecretSource } from '../../lib/aws/secrets.js';
import type { QueueContext } from '../../lib/queue/context.js';
import { bearerToken } from '../shared/http.js';
import { log } from '../shared/log.js';
import {
  callbackRouteOf,
  principalToContext,
  type AuthorizerContext,
  type Principal,
} from '../shared/principal.js';

export type AuthorizerEvent = APIGatewayRequestAuthorizerEventV2;
export type AuthorizerResult = APIGatewaySimpleAuthorizerWithContextResult<AuthorizerContext>;
export type Authorizer = (event: AuthorizerEvent) => Promise<AuthorizerResult>;

export interface AuthorizerDeps {
  ctx: QueueContext;
  /** API_TOKEN: an admin credential accepted as given, never stored in the table (docs/concepts/design.md#local-runtime). */
  staticAdminToken?: string;
  /**
   * Verifies the per-job, per-attempt tokens of callback URLs (lib/domain/callback-tokens.ts), which admit a status
   * callback or heartbeat that carries no Authorization header. Without it, only keys are accepted.
   */
  callbackTokenSecret?: SecretSource;
}

export const STATIC_ADMIN_KEY_ID = 'API_TOKEN';

const digest = (value: string): Buffer => createHash('sha256').update(value).digest();

/** Constant-time comparison of digests, so the token cannot be guessed byte by byte from response times. */
function tokenMatches(presented: string, expected: string): boolean {
  return timingSafeEqual(digest(presented), digest(expected));
}

const DENY: AuthorizerResult = { isAuthorized: false, context: {} };

export function createAuthorizer(deps: AuthorizerDeps): Authorizer {
  const admit = (principal: Principal): AuthorizerResult => ({ isAuthorized: true, context: principalToContext(principal) });

  return async (event) => {
    const requestId = event.requestContext?.requestId;
    const presented = bearerToken(event);
    if (presented !== undefined) {
      if (deps.staticAdminToken && tokenMatches(presented, deps.staticAdminToken)) {
        return admit({ kind: 'key', keyId: STATIC_ADMIN_KEY_ID, scopes: ['admin'] });
      }
      const verification = await verifyApiKey(deps.ctx, presented);
      if (!verification.ok) {
        log('info', 'key refused', { requestId, reason: verification.reason, keyId: verification.keyId });
        return DENY;
      }
      const { key } = verification;
      return admit({ kind: 'key', keyId: key.id, scopes: key.scopes, ...(key.expiresAtMs !== undefined ? { expiresAtMs: key.expiresAtMs } : {}) });
    }

    const token = event.queryStringParameters?.token;
    const job = callbackRouteOf(event.requestContext?.http?.method ?? '', event.requestContext?.http?.path ?? event.rawPath ?? '');
    if (deps.callbackTokenSecret && token && job) {
      // A token signed just before a rotation is still good: the worker that signed it read the secret then.
      const versions = await deps.callbackTokenSecret.versions().catch((error: unknown) => {
        // No worker has signed a token yet, so none can verify.
        if (error instanceof SecretNotCreatedError) return undefined;
        throw error;
      });
      if (versions === undefined) {
        log('info', 'callback token refused: no token was signed yet', { requestId, type: job.type, id: job.id });
        return DENY;
      }
      const { current, previous } = versions;
      const attempt = verifyCallbackToken(current, token, job) ?? (previous === undefined ? undefined : verifyCallbackToken(previous, token, job));
      if (attempt !== undefined) return admit({ kind: 'callback_token', ...job, attempt });
      log('info', 'callback token refused', { requestId, type: job.type, id: job.id });
    }
    return DENY;
  };
}
