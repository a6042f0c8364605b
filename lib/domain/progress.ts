/**
 * What a running attempt says of itself between its start and its end: how far it got, in a few words, and
 * any small JSON. The latest report is kept on the job; each replaces the one before.
 */
import { ValidationError } from './errors.js';
import { assertJsonSize } from './json-size.js';

/** A report as the worker, a handler or a heartbeat gives it. */
export interface ProgressReport {
  /** 0 to 100. */
  percent?: number;
  message?: string;
  data?: unknown;
}

/** The report as the job keeps it: with the attempt that made it, and when. */
export interface JobProgress extends ProgressReport {
  attempt: number;
  atMs: number;
}

/** A report rides on every heartbeat's write of the job item, so it stays small beside data and result. */
export const MAX_PROGRESS_BYTES = 8 * 1024;
export const MAX_PROGRESS_MESSAGE_CHARS = 1_000;

/**
 * A report the API's schema has not checked (a handler's): a ValidationError naming `progress.percent` or
 * `progress.message` out of bounds, a PayloadTooLargeError naming `progress` over MAX_PROGRESS_BYTES.
 */
export function assertProgressFits(report: ProgressReport): void {
  const { percent, message } = report;
  if (percent !== undefined && !(Number.isFinite(percent) && percent >= 0 && percent <= 100)) {
    throw new ValidationError([{ field: 'progress.percent', message: 'must be a number from 0 to 100' }]);
  }
  if (message !== undefined && (typeof message !== 'string' || message.length > MAX_PROGRESS_MESSAGE_CHARS)) {
    throw new ValidationError([{ field: 'progress.message', message: `must be a string of at most ${MAX_PROGRESS_MESSAGE_CHARS} characters` }]);
  }
  assertJsonSize('progress', report, MAX_PROGRESS_BYTES);
}
