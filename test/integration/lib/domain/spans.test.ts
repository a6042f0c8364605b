/**
 * With an OpenTelemetry SDK registered, a traced job's enqueue, claim and run are spans of its trace: the run a
 * child of the enqueue, the handler's traceparent the run's own span. Without one, the ids pass through alone
 * (test/integration/lib/domain/trace-context.propagation.test.ts).
 */
import { trace, SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { afterAll, afterEach, beforeAll, expect, test } from 'vitest';
import { parseTraceparent } from '../../../../lib/domain/trace-context.js';
import type { JobContext } from '../../../../lib/queue/attempt/run-batch.js';
import { defineType, enqueue, freshQueuePerTest, poll, RunningInvoker } from '../../../support/lib-fixtures.js';

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const PRODUCER_SPAN_ID = '00f067aa0ba902b7';
const TRACEPARENT = `00-${TRACE_ID}-${PRODUCER_SPAN_ID}-01`;

const exporter = new InMemorySpanExporter();
beforeAll(() => {
  trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
});
afterAll(() => trace.disable());
afterEach(() => exporter.reset());

const queue = freshQueuePerTest();
const spanNamed = (name: string) => exporter.getFinishedSpans().find((span) => span.name === name);

test('an enqueue in a trace is a producer span of it, and the job keeps the enqueue span as its parent', async () => {
  const { ctx } = queue();
  const spans = await defineType(ctx, 'spans');
  const { job } = await enqueue(ctx, spans, 's-1', { traceparent: TRACEPARENT });
  const enqueued = spanNamed('djq enqueue');
  expect(enqueued).toMatchObject({ kind: SpanKind.PRODUCER, attributes: { 'djq.job.type': 'spans', 'djq.job.id': 's-1' } });
  expect(enqueued?.parentSpanContext?.spanId).toBe(PRODUCER_SPAN_ID);
  expect(parseTraceparent(job.traceparent!)).toMatchObject({ traceId: TRACE_ID, spanId: enqueued?.spanContext().spanId });
});

test('the claim and the run are spans of the job’s trace, and the handler’s traceparent is the run span', async () => {
  const { ctx } = queue();
  const spans = await defineType(ctx, 'spans');
  await enqueue(ctx, spans, 's-1', { traceparent: TRACEPARENT });
  const seen: (string | undefined)[] = [];
  await poll(ctx, [spans], new RunningInvoker(ctx, { spans: (_data: unknown, context: JobContext) => seen.push(context.traceparent) }));

  const enqueued = spanNamed('djq enqueue')!;
  const claimed = spanNamed('djq claim');
  const ran = spanNamed('djq run');
  expect(claimed?.parentSpanContext?.spanId).toBe(enqueued.spanContext().spanId);
  expect(ran).toMatchObject({ kind: SpanKind.CONSUMER, attributes: { 'djq.job.id': 's-1', 'djq.attempt': 1 } });
  expect(ran?.parentSpanContext?.spanId).toBe(enqueued.spanContext().spanId);
  expect(ran?.spanContext().traceId).toBe(TRACE_ID);
  expect(parseTraceparent(seen[0]!)?.spanId).toBe(ran?.spanContext().spanId);
});

test('a failed attempt’s run span ends in error', async () => {
  const { ctx } = queue();
  const spans = await defineType(ctx, 'spans');
  await enqueue(ctx, spans, 's-1', { traceparent: TRACEPARENT });
  await poll(ctx, [spans], new RunningInvoker(ctx, { spans: () => { throw new Error('card declined'); } }));
  expect(spanNamed('djq run')?.status.code).toBe(SpanStatusCode.ERROR);
});

test('a job enqueued without a trace makes no span', async () => {
  const { ctx } = queue();
  const spans = await defineType(ctx, 'spans');
  await enqueue(ctx, spans, 's-1');
  await poll(ctx, [spans], new RunningInvoker(ctx, { spans: () => 'done' }));
  expect(exporter.getFinishedSpans()).toEqual([]);
});
