/**
 * W3C trace context (https://www.w3.org/TR/trace-context/): a job keeps the
 * `traceparent` of the request that enqueued it, and each attempt runs as a
 * span of its own in that trace, so one trace leads from the producer to the
 * handler or downstream that ran the job.
 */
import { randomBytes } from 'node:crypto';
import { ValidationError } from './errors.js';

export interface TraceContext {
  /** 32 lowercase hex digits, not all zero. */
  traceId: string;
  /** 16 lowercase hex digits, not all zero: the span that is the parent of whatever follows. */
  spanId: string;
  /** 2 lowercase hex digits; bit 0 says the caller sampled the trace. */
  flags: string;
}

/** The version this queue writes; a later one received is read by its first four fields, as the spec asks. */
const VERSION = '00';
const TRACEPARENT_LENGTH = 55;
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;
const ALL_ZERO = /^0+$/;

/** The trace context a `traceparent` value names, or undefined when it is not one. */
export function parseTraceparent(value: string): TraceContext | undefined {
  // A later version may append fields after a '-'; version 00 has exactly four.
  const head = value.slice(0, TRACEPARENT_LENGTH);
  const match = TRACEPARENT.exec(head);
  if (!match) return undefined;
  const [, version, traceId, spanId, flags] = match as unknown as [string, string, string, string, string];
  if (version === 'ff' || ALL_ZERO.test(traceId) || ALL_ZERO.test(spanId)) return undefined;
  if (version === VERSION ? value.length !== TRACEPARENT_LENGTH : value.length > TRACEPARENT_LENGTH && value[TRACEPARENT_LENGTH] !== '-') return undefined;
  return { traceId, spanId, flags };
}

export function formatTraceparent(context: TraceContext): string {
  return `${VERSION}-${context.traceId}-${context.spanId}-${context.flags}`;
}

/**
 * The `traceparent` header of a request as a job keeps it (version 00), or undefined when there is none. One
 * that is not a trace context is refused rather than dropped: a producer that sends one means to trace.
 */
export function traceparentFromHeader(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const context = parseTraceparent(value.trim());
  if (!context) {
    throw new ValidationError([{ field: 'traceparent', message: 'must be a W3C trace context: 00-<32 hex trace id>-<16 hex span id>-<2 hex flags>, ids not all zero' }]);
  }
  return formatTraceparent(context);
}

const randomHex = (bytes: number): string => {
  for (;;) {
    const hex = randomBytes(bytes).toString('hex');
    if (!ALL_ZERO.test(hex)) return hex;
  }
};

/** A trace of its own, sampled: a schedule's fire starts one, as nothing upstream made its job. */
export function newTraceparent(): string {
  return formatTraceparent({ traceId: randomHex(16), spanId: randomHex(8), flags: '01' });
}

/** A span of the same trace whose parent is the one `traceparent` names: an attempt, or the request it sends on. */
export function childTraceparent(traceparent: string): string | undefined {
  const parent = parseTraceparent(traceparent);
  return parent ? formatTraceparent({ ...parent, spanId: randomHex(8) }) : undefined;
}
