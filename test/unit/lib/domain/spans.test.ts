/**
 * Spans of a job's trace (lib/domain/spans.ts), recorded by an in-memory OpenTelemetry SDK: children of the span
 * a traceparent names, in error when the step failed; without a traceparent or an SDK, the step just runs.
 */
import { SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { inSpan, recordSpan } from '../../../../lib/domain/spans.js';

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT_SPAN_ID = '00f067aa0ba902b7';
const TRACEPARENT = `00-${TRACE_ID}-${PARENT_SPAN_ID}-01`;
const OPTIONS = { kind: SpanKind.CONSUMER, attributes: { 'djq.job.id': 'j-1' } };

describe('with an SDK registered', () => {
  const exporter = new InMemorySpanExporter();
  beforeAll(() => {
    trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
  });
  afterAll(() => trace.disable());
  afterEach(() => exporter.reset());
  const only = () => {
    const spans = exporter.getFinishedSpans();
    expect(spans).toHaveLength(1);
    return spans[0]!;
  };

  test('a step in a trace is a child span of the one its traceparent names, of the kind and attributes asked for', async () => {
    await inSpan('djq run', TRACEPARENT, OPTIONS, async () => 'ok');
    const span = only();
    expect(span).toMatchObject({ name: 'djq run', kind: SpanKind.CONSUMER, attributes: { 'djq.job.id': 'j-1' } });
    expect(span.spanContext().traceId).toBe(TRACE_ID);
    expect(span.parentSpanContext).toMatchObject({ spanId: PARENT_SPAN_ID, isRemote: true, traceFlags: 1 });
  });

  test("the step is given its own span's traceparent, and its result is returned", async () => {
    let given: string | undefined;
    const result = await inSpan('djq run', TRACEPARENT, OPTIONS, async (recorded) => {
      given = recorded;
      return 42;
    });
    expect(result).toBe(42);
    expect(given).toBe(`00-${TRACE_ID}-${only().spanContext().spanId}-01`);
  });

  test('a step whose result says it failed ends its span in error; one that succeeded leaves it unset', async () => {
    await inSpan('djq run', TRACEPARENT, { ...OPTIONS, failed: (result: string) => result === 'bad' }, async () => 'bad');
    expect(only().status.code).toBe(SpanStatusCode.ERROR);
    exporter.reset();
    await inSpan('djq run', TRACEPARENT, { ...OPTIONS, failed: (result: string) => result === 'bad' }, async () => 'good');
    expect(only().status.code).toBe(SpanStatusCode.UNSET);
  });

  test('a step that throws ends its span in error, with the exception recorded, and the error goes on', async () => {
    await expect(inSpan('djq run', TRACEPARENT, OPTIONS, () => Promise.reject(new Error('card declined')))).rejects.toThrow('card declined');
    const span = only();
    expect(span.status.code).toBe(SpanStatusCode.ERROR);
    expect(span.events[0]?.attributes).toMatchObject({ 'exception.message': 'card declined' });
  });

  test('a thrown value that is not an Error is recorded as its text', async () => {
    await expect(inSpan('djq run', TRACEPARENT, OPTIONS, () => Promise.reject('just text'))).rejects.toBe('just text');
    expect(only().events[0]?.attributes).toMatchObject({ 'exception.message': 'just text' });
  });

  test('a step without a traceparent, or with a malformed one, runs without a span and is given none', async () => {
    const given: (string | undefined)[] = [];
    await inSpan('djq run', undefined, OPTIONS, async (recorded) => given.push(recorded));
    await inSpan('djq run', 'not-a-traceparent', OPTIONS, async (recorded) => given.push(recorded));
    expect(given).toEqual([undefined, undefined]);
    expect(exporter.getFinishedSpans()).toEqual([]);
  });

  test('a step already done is recorded from when it began, as a child of the traceparent', () => {
    const startedAt = new Date(Date.UTC(2026, 10, 29, 7, 0, 0));
    recordSpan('djq claim', TRACEPARENT, { kind: SpanKind.INTERNAL, attributes: { 'djq.job.id': 'j-1' }, startedAt });
    const span = only();
    expect(span).toMatchObject({ name: 'djq claim', kind: SpanKind.INTERNAL, attributes: { 'djq.job.id': 'j-1' } });
    expect(span.startTime).toEqual([Math.floor(startedAt.getTime() / 1000), 0]);
    expect(span.parentSpanContext?.spanId).toBe(PARENT_SPAN_ID);
  });

  test('a step already done records nothing without a traceparent, or with a malformed one', () => {
    recordSpan('djq claim', undefined, { ...OPTIONS, startedAt: new Date(0) });
    recordSpan('djq claim', 'not-a-traceparent', { ...OPTIONS, startedAt: new Date(0) });
    expect(exporter.getFinishedSpans()).toEqual([]);
  });
});

describe('without an SDK', () => {
  test('a step in a trace runs, and is given no traceparent of its own', async () => {
    let given: string | undefined = 'unset';
    expect(await inSpan('djq run', TRACEPARENT, OPTIONS, async (recorded) => ((given = recorded), 'ok'))).toBe('ok');
    expect(given).toBeUndefined();
  });
});
