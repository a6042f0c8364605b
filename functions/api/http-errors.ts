/** The one place the api function turns errors into responses. */
import { ConflictError, ForbiddenError, NotFoundError, PayloadTooLargeError, UnauthorizedError, UnsupportedMediaTypeError, type FieldIssue } from '../../lib/domain/errors.js';
import { ValidationError } from '../../lib/domain/errors.js';
import { isStoreUnavailable } from '../../lib/store/unavailable.js';
import { errorBody, json, type HttpResponse } from '../shared/http.js';

/**
 * How long a request that met an overloaded or unreachable DynamoDB is told to wait: the SDK already retried
 * within the request's budget, so the next try should come after the throttle or the burst has passed.
 */
export const UNAVAILABLE_RETRY_AFTER_S = 1;

interface Mapped {
  status: number;
  code: string;
  message: string;
  details?: FieldIssue[];
  retryAfterS?: number;
}

function mapError(error: unknown): Mapped | undefined {
  if (error instanceof ValidationError) return { status: 400, code: 'invalid_request', message: 'the request is invalid', details: error.details };
  if (error instanceof UnauthorizedError) return { status: 401, code: 'unauthorized', message: error.message };
  if (error instanceof ForbiddenError) return { status: 403, code: 'forbidden', message: error.message };
  if (error instanceof NotFoundError) return { status: 404, code: 'not_found', message: error.message };
  if (error instanceof ConflictError) return { status: 409, code: 'conflict', message: error.message, details: error.details };
  if (error instanceof PayloadTooLargeError) {
    return { status: 413, code: 'payload_too_large', message: error.message, details: [{ field: error.field, message: error.message }] };
  }
  if (error instanceof UnsupportedMediaTypeError) return { status: 415, code: 'unsupported_media_type', message: error.message };
  if (isStoreUnavailable(error)) {
    return { status: 503, code: 'unavailable', message: 'the queue is overloaded or unreachable for now; try again after Retry-After', retryAfterS: UNAVAILABLE_RETRY_AFTER_S };
  }
  return undefined;
}

export interface ErrorResult {
  status: number;
  body: Record<string, unknown>;
  /** A fault of ours: logged with its cause, which the body never shows. */
  internal: boolean;
  /** Whether the request may have been carried out in part: the caller should send it again only if that is safe. */
  outcomeUnknown: boolean;
  retryAfterS?: number;
}

/**
 * A domain error's status and error body; a DynamoDB that is overloaded or unreachable for now is a 503 with
 * Retry-After; anything else is a 500 whose body says nothing of the cause.
 */
export function errorResult(error: unknown, requestId: string | undefined): ErrorResult {
  const mapped = mapError(error);
  if (!mapped) return { status: 500, body: errorBody('internal', 'internal error', requestId), internal: true, outcomeUnknown: true };
  return {
    status: mapped.status,
    body: errorBody(mapped.code, mapped.message, requestId, mapped.details),
    internal: false,
    outcomeUnknown: mapped.status === 503,
    ...(mapped.retryAfterS === undefined ? {} : { retryAfterS: mapped.retryAfterS }),
  };
}

/** Maps a domain error to its response (see errorResult). */
export function errorResponse(error: unknown, requestId: string | undefined): { response: HttpResponse; internal: boolean; unavailable: boolean } {
  const { status, body, internal, retryAfterS } = errorResult(error, requestId);
  const response = json(status, body);
  if (retryAfterS !== undefined) response.headers = { ...response.headers, 'retry-after': String(retryAfterS) };
  return { response, internal, unavailable: status === 503 };
}
