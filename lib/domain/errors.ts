/**
 * Domain errors, one per failure a caller can act on. Each keeps `name` and `cause`;
 * `functions/api/http-errors.ts` maps them to HTTP in one place.
 */

export interface FieldIssue {
  /** Dotted path of the offending field, e.g. `retry.delay_s` or `body`. */
  field: string;
  message: string;
}

export class ValidationError extends Error {
  override readonly name = 'ValidationError';
  constructor(
    readonly details: FieldIssue[],
    options?: ErrorOptions,
  ) {
    super(details.map((d) => `${d.field}: ${d.message}`).join('; '), options);
  }
}

export class NotFoundError extends Error {
  override readonly name = 'NotFoundError';
}

/** The request conflicts with the current state: a different body for an existing id, a stale attempt, a job that already started. */
export class ConflictError extends Error {
  override readonly name = 'ConflictError';
  constructor(
    message: string,
    /** The fields whose values conflict, when the conflict is about one (a correlation key in use). */
    readonly details: FieldIssue[] = [],
  ) {
    super(message);
  }
}

export class PayloadTooLargeError extends Error {
  override readonly name = 'PayloadTooLargeError';
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
  }
}

export class UnsupportedMediaTypeError extends Error {
  override readonly name = 'UnsupportedMediaTypeError';
}

export class UnauthorizedError extends Error {
  override readonly name = 'UnauthorizedError';
}

/** The caller is known but its key's scopes do not cover the route or job type. */
export class ForbiddenError extends Error {
  override readonly name = 'ForbiddenError';
}

/** The attempt no longer holds its claim: the sweeper or another attempt took the job over. */
export class ClaimLostError extends Error {
  override readonly name = 'ClaimLostError';
}

/** Thrown by settings parsing at cold start; names the environment variable. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

/**
 * Thrown by a job handler to fail the attempt without any retry, whatever
 * attempts remain (BullMQ's UnrecoverableError).
 */
export class NonRetryableError extends Error {
  override readonly name: string = 'NonRetryableError';
}

/** Thrown by a job handler to ask for the next attempt after a specific delay. */
export class RetryAfterError extends Error {
  override readonly name: string = 'RetryAfterError';
  constructor(
    message: string,
    readonly retryAfterMs: number,
  ) {
    super(message);
  }
}
