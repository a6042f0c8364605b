import { expect, test } from 'vitest';
import { ValidationError } from '../../../../lib/domain/errors.js';
import { eventForUnstartedJob } from '../../../../lib/domain/lifecycle-events.js';
import { lifecycleEventDetail } from '../../../../lib/wire/lifecycle-events.js';
import { runningJob } from '../../../support/jobs.js';
import { childTraceparent, newTraceparent, parseTraceparent, traceparentFromHeader } from '../../../../lib/domain/trace-context.js';

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const SPAN_ID = '00f067aa0ba902b7';
const TRACEPARENT = `00-${TRACE_ID}-${SPAN_ID}-01`;

test('a version 00 traceparent names its trace, parent span and flags', () => {
  expect(parseTraceparent(TRACEPARENT)).toEqual({ traceId: TRACE_ID, spanId: SPAN_ID, flags: '01' });
});

test.each([
  ['upper-case hex', TRACEPARENT.toUpperCase()],
  ['an all-zero trace id', `00-${'0'.repeat(32)}-${SPAN_ID}-01`],
  ['an all-zero span id', `00-${TRACE_ID}-${'0'.repeat(16)}-01`],
  ['version ff', `ff-${TRACE_ID}-${SPAN_ID}-01`],
  ['version 00 with a field more', `${TRACEPARENT}-extra`],
  ['a short trace id', `00-${TRACE_ID.slice(1)}-${SPAN_ID}-01`],
  ['two headers joined by a comma', `${TRACEPARENT},${TRACEPARENT}`],
  ['nothing', ''],
])('%s is no traceparent', (_, value) => {
  expect(parseTraceparent(value)).toBeUndefined();
});

test('a later version is read by its first four fields, and kept as version 00', () => {
  expect(traceparentFromHeader(`01-${TRACE_ID}-${SPAN_ID}-01-what-comes-later`)).toBe(TRACEPARENT);
  expect(parseTraceparent(`01-${TRACE_ID}-${SPAN_ID}-01x`)).toBeUndefined();
});

test('a header that is not a trace context is a ValidationError naming traceparent', () => {
  const refused = (() => {
    try {
      traceparentFromHeader('00-not-a-trace');
    } catch (error) {
      return error;
    }
  })();
  expect(refused).toBeInstanceOf(ValidationError);
  expect((refused as ValidationError).details.map((issue) => issue.field)).toEqual(['traceparent']);
});

test('no header is no trace', () => {
  expect(traceparentFromHeader(undefined)).toBeUndefined();
});

test('a child span keeps the trace and its flags under a new span id', () => {
  const child = parseTraceparent(childTraceparent(TRACEPARENT)!);
  expect(child).toMatchObject({ traceId: TRACE_ID, flags: '01' });
  expect(child?.spanId).not.toBe(SPAN_ID);
});

test('a new trace is a valid, sampled traceparent of its own each time', () => {
  const first = parseTraceparent(newTraceparent());
  const second = parseTraceparent(newTraceparent());
  expect(first?.flags).toBe('01');
  expect(first?.traceId).not.toBe(second?.traceId);
});

test('a traced job’s lifecycle events carry its traceparent on the bus, and an untraced job’s none', () => {
  const job = runningJob({ traceparent: TRACEPARENT });
  expect(lifecycleEventDetail(eventForUnstartedJob({ ...job, status: 'cancelled' }, 'job.cancelled'))).toMatchObject({ traceparent: TRACEPARENT });
  expect(lifecycleEventDetail(eventForUnstartedJob({ ...runningJob(), status: 'cancelled' }, 'job.cancelled'))).not.toHaveProperty('traceparent');
});
