/**
 * Domain errors, one per failure a caller can act on. Each keeps its `name` and
 * the `cause` it was given; the api maps them to HTTP statuses in one place
 * (`mapError` in functions/, beside the JSON error body).
 */

/** What every error of the queue shares, so a caller can tell the queue's refusals from a dependency's failure. */
export class QueueError extends Error {}

export interface FieldIssue {
  /** Dotted path of the offending field, e.g. `retry.delay_s` or `body`. */
  field: string;
  message: string;
}

export class ValidationError extends QueueError {
  override readonly name = 'ValidationError';
  constructor(
    readonly details: FieldIssue[],
    options?: ErrorOptions,
  ) {
    super(details.map((d) => `${d.field}: ${d.message}`).join('; '), options);
  }
}

export class NotFoundError extends QueueError {
  override readonly name = 'NotFoundError';
}

/** The request conflicts with the current state: a different body for an existing id, a stale attempt, a job that already started. */
export class ConflictError extends QueueError {
  override readonly name = 'ConflictError';
  constructor(
    message: string,
    /** The fields whose values conflict, when the conflict is about one (a correlation key in use). */
    readonly details: FieldIssue[] = [],
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

export class PayloadTooLargeError extends QueueError {
  override readonly name = 'PayloadTooLargeError';
  constructor(
    readonly field: string,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

export class UnsupportedMediaTypeError extends QueueError {
  override readonly name = 'UnsupportedMediaTypeError';
}

export class UnauthorizedError extends QueueError {
  override readonly name = 'UnauthorizedError';
}

/** The caller is known but its key's scopes do not cover the route or job type. */
export class ForbiddenError extends QueueError {
  override readonly name = 'ForbiddenError';
}

/** The attempt no longer holds its claim: the sweeper or another attempt took the job over. */
export class ClaimLostError extends QueueError {
  override readonly name = 'ClaimLostError';
}

/** Thrown by settings parsing at cold start; names the environment variable. */
export class ConfigError extends QueueError {
  override readonly name = 'ConfigError';
}

/**
 * Thrown by a job handler to fail the attempt without any retry, whatever
 * attempts remain (BullMQ's UnrecoverableError).
 */
export class NonRetryableError extends QueueError {
  override readonly name: string = 'NonRetryableError';
}

/** Thrown by a job handler to ask for the next attempt after a specific delay. */
export class RetryAfterError extends QueueError {
  override readonly name: string = 'RetryAfterError';
  constructor(
    message: string,
    readonly retryAfterMs: number,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}
