/**
 * Spans through `@opentelemetry/api`: no-ops until the application registers an SDK (a tracer provider), then
 * a job's enqueue, claim and run show as spans of the trace it was enqueued in. The ids pass through either way
 * (domain/trace-context.ts), so spans a handler or downstream records join the producer's trace regardless.
 */
import { context, SpanKind, SpanStatusCode, trace, type Attributes, type Context } from '@opentelemetry/api';
import { formatTraceparent, parseTraceparent } from './trace-context.js';

export { SpanKind };

const TRACER_NAME = 'delayed-job-queue';

/** The context whose current span is the remote one `traceparent` names. */
function remoteParent(traceparent: string): Context | undefined {
  const parent = parseTraceparent(traceparent);
  if (!parent) return undefined;
  const { traceId, spanId, flags } = parent;
  return trace.setSpanContext(context.active(), { traceId, spanId, traceFlags: Number.parseInt(flags, 16), isRemote: true });
}

export interface SpanOptions {
  kind: SpanKind;
  attributes: Attributes;
}

/**
 * Runs `fn` as span `name` in the trace `traceparent` names (without one, just runs it). `fn` gets the span's own
 * traceparent when an SDK records it, undefined when spans are no-ops; `failed` says from its result whether
 * the span ended in error (a thrown error always does).
 */
export async function inSpan<T>(
  name: string,
  traceparent: string | undefined,
  options: SpanOptions & { failed?: (result: T) => boolean },
  fn: (recorded: string | undefined) => Promise<T>,
): Promise<T> {
  const parent = traceparent === undefined ? undefined : remoteParent(traceparent);
  if (!parent) return fn(undefined);
  const span = trace.getTracer(TRACER_NAME).startSpan(name, { kind: options.kind, attributes: options.attributes }, parent);
  const own = span.spanContext();
  const recorded = span.isRecording() ? formatTraceparent({ traceId: own.traceId, spanId: own.spanId, flags: own.traceFlags.toString(16).padStart(2, '0') }) : undefined;
  try {
    const result = await context.with(trace.setSpan(parent, span), () => fn(recorded));
    if (options.failed?.(result)) span.setStatus({ code: SpanStatusCode.ERROR });
    return result;
  } catch (error) {
    span.recordException(error instanceof Error ? error : String(error));
    span.setStatus({ code: SpanStatusCode.ERROR });
    throw error;
  } finally {
    span.end();
  }
}

/** Records span `name`, begun at `startedAt` and ended now, in the trace `traceparent` names: a step already done. */
export function recordSpan(name: string, traceparent: string | undefined, options: SpanOptions & { startedAt: Date }): void {
  const parent = traceparent === undefined ? undefined : remoteParent(traceparent);
  if (!parent) return;
  trace.getTracer(TRACER_NAME).startSpan(name, { kind: options.kind, attributes: options.attributes, startTime: options.startedAt }, parent).end();
}
