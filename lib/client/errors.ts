/**
 * The client's errors: one class per failure a caller acts on differently,
 * each carrying what the API said (its `code`, field-named `details` and
 * `request_id`) and the HTTP status. `kind` discriminates without instanceof.
 */
import type { FieldIssue } from './types.js';

export type ApiErrorKind =
  | 'invalid_request'
  | 'unauthorized'
  | 'forbidden'
  | 'not_found'
  | 'conflict'
  | 'payload_too_large'
  | 'unsupported_media_type'
  | 'rate_limited'
  | 'client_error'
  | 'server_error';

export interface ApiErrorInit {
  status: number;
  code: string;
  message: string;
  details: FieldIssue[];
  requestId: string | null;
  /** How many times the request was sent: more than 1 when it was retried. */
  tries: number;
}

/** The API answered with an error status. */
export class QueueApiError extends Error {
  override name = 'QueueApiError';
  readonly kind: ApiErrorKind = 'client_error';
  readonly status: number;
  /** The API's error code, e.g. `invalid_request`, `conflict`, `internal`. */
  readonly code: string;
  /** The fields at fault, each named by its dotted path (`retry.delay_s`, `jobs.3.priority`). */
  readonly details: FieldIssue[];
  /** The API's id for the request, for its logs. */
  readonly requestId: string | null;
  readonly tries: number;

  constructor(init: ApiErrorInit) {
    super(init.message);
    this.status = init.status;
    this.code = init.code;
    this.details = init.details;
    this.requestId = init.requestId;
    this.tries = init.tries;
  }

  /** The message about `field`, when the API named it. */
  detailFor(field: string): string | undefined {
    return this.details.find((issue) => issue.field === field)?.message;
  }
}

/**
 * A subclass of QueueApiError named `name` whose `kind` is `kind`. Marked free of side effects so a bundle
 * that imports only isRefusedKey (the dashboard's) leaves the error classes out.
 */
/* @__NO_SIDE_EFFECTS__ */
function apiErrorOfKind<K extends ApiErrorKind>(name: string, kind: K): new (init: ApiErrorInit) => QueueApiError & { readonly kind: K } {
  return class extends QueueApiError {
    override name = name;
    override readonly kind: K = kind;
  };
}

/** 400: the body or a parameter is invalid; `details` names each field. Nothing was changed. */
export class InvalidRequestError extends apiErrorOfKind('InvalidRequestError', 'invalid_request') {}
/**
 * The key itself was refused (no key, or one that is unknown, malformed, revoked or expired): API Gateway's
 * own 403 `{"message": "Forbidden"}`, or a 401. Sending it again will not help; a new key will.
 */
export class UnauthorizedError extends apiErrorOfKind('UnauthorizedError', 'unauthorized') {}
/** 403 with the API's error body (`code: forbidden`): the key is valid, but its scopes do not cover this route or job type. */
export class ForbiddenError extends apiErrorOfKind('ForbiddenError', 'forbidden') {}
/** 404: no such job type, job or route. */
export class NotFoundError extends apiErrorOfKind('NotFoundError', 'not_found') {}
/** 409: a different body under an existing id, a stale attempt, a job that already started. */
export class ConflictError extends apiErrorOfKind('ConflictError', 'conflict') {}
/** 413: the body or a field of it is over its limit; `details` names it. */
export class PayloadTooLargeError extends apiErrorOfKind('PayloadTooLargeError', 'payload_too_large') {}
/** 415: the body was not sent as JSON. */
export class UnsupportedMediaTypeError extends apiErrorOfKind('UnsupportedMediaTypeError', 'unsupported_media_type') {}
/** 429: API Gateway's throttle, still refusing after the client's retries; nothing was done. */
export class RateLimitedError extends apiErrorOfKind('RateLimitedError', 'rate_limited') {}
/** 5xx: the API or something behind it failed; the request may or may not have taken effect. */
export class ServerError extends apiErrorOfKind('ServerError', 'server_error') {}

/** The request got no answer: the network failed or the request timed out. It may or may not have taken effect. */
export class QueueNetworkError extends Error {
  override name = 'QueueNetworkError';
  readonly kind = 'network';
  constructor(
    message: string,
    readonly tries: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

const BY_STATUS: Record<number, new (init: ApiErrorInit) => QueueApiError> = {
  400: InvalidRequestError,
  403: ForbiddenError,
  404: NotFoundError,
  409: ConflictError,
  413: PayloadTooLargeError,
  415: UnsupportedMediaTypeError,
  429: RateLimitedError,
};

/**
 * Whether an answer says the key itself was refused. Behind API Gateway a request without a key is 401 and a
 * key the authorizer refuses is the gateway's 403 `{"message": "Forbidden"}`, while the API's own 403 (the
 * key's scopes) always carries an `error` object: the body tells the two 403s apart. The local runtime answers alike.
 */
export function isRefusedKey(status: number, body: unknown): boolean {
  if (status === 401) return true;
  if (status !== 403 || typeof body !== 'object' || body === null) return false;
  const { error, message } = body as { error?: unknown; message?: unknown };
  return error === undefined && message === 'Forbidden';
}

/**
 * The error for an answer with `status`, from its body when it is the API's error body; a gateway's own
 * answer (API Gateway's `{"message": "..."}`, an HTML page from a proxy) still gets a class and a code.
 */
export function apiErrorFrom(status: number, body: unknown, tries: number, requestIdHeader: string | null = null): QueueApiError {
  const error = typeof body === 'object' && body !== null ? (body as { error?: unknown; message?: unknown }).error : undefined;
  const wire = typeof error === 'object' && error !== null ? (error as Record<string, unknown>) : undefined;
  const fallbackMessage = typeof body === 'object' && body !== null && typeof (body as { message?: unknown }).message === 'string'
    ? String((body as { message: string }).message)
    : `the API answered ${status}`;
  const init: ApiErrorInit = {
    status,
    code: typeof wire?.code === 'string' ? wire.code : status >= 500 ? 'internal' : `http_${status}`,
    message: typeof wire?.message === 'string' ? wire.message : fallbackMessage,
    details: Array.isArray(wire?.details) ? (wire.details as FieldIssue[]) : [],
    requestId: typeof wire?.request_id === 'string' ? wire.request_id : requestIdHeader,
    tries,
  };
  const ErrorClass = status >= 500 ? ServerError : isRefusedKey(status, body) ? UnauthorizedError : (BY_STATUS[status] ?? QueueApiError);
  return new ErrorClass(init);
}
