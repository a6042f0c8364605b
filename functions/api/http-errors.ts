/** The one place the api function turns errors into responses. */
import { ConflictError, ForbiddenError, NotFoundError, PayloadTooLargeError, UnauthorizedError, UnsupportedMediaTypeError, type FieldIssue } from '../../lib/domain/errors.js';
import { ValidationError } from '../../lib/domain/errors.js';
import { errorBody, json, type HttpResponse } from '../shared/http.js';

interface Mapped {
  status: number;
  code: string;
  message: string;
  details?: FieldIssue[];
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
  return undefined;
}

/** A domain error's status and error body; anything else is a 500 whose body says nothing of the cause. */
export function errorResult(
  error: unknown,
  requestId: string | undefined,
): { status: number; body: Record<string, unknown>; internal: boolean } {
  const mapped = mapError(error);
  if (!mapped) return { status: 500, body: errorBody('internal', 'internal error', requestId), internal: true };
  return { status: mapped.status, body: errorBody(mapped.code, mapped.message, requestId, mapped.details), internal: false };
}

/** Maps a domain error to its response (see errorResult). */
export function errorResponse(error: unknown, requestId: string | undefined): { response: HttpResponse; internal: boolean } {
  const { status, body, internal } = errorResult(error, requestId);
  return { response: json(status, body), internal };
}
