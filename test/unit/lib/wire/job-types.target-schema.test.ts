import { expect, test } from 'vitest';
import { jobTypeFromInput } from '../../../support/job-types.js';
import { fieldsRefused } from '../../../support/validation.js';
import { jobTypeInputSchema, jobTypeToApi } from '../../../../lib/wire/job-types.js';
import { parseWith } from '../../../../lib/wire/parse.js';
import { T0 } from '../../../support/jobs.js';

const fieldsOf = (target: unknown): string[] => fieldsRefused(() => parseWith(jobTypeInputSchema, { target }));

const roundTrip = (target: Record<string, unknown>) =>
  jobTypeToApi(jobTypeFromInput('t', parseWith(jobTypeInputSchema, { target }), { createdAtMs: T0, updatedAtMs: T0 })).target;

test('an http target needs an http or https URL; defaults fill the deadline and the link-local opt-in', () => {
  expect(fieldsOf({ kind: 'http', url: 'ftp://example.com/x' })).toEqual(['target.url']);
  expect(fieldsOf({ kind: 'http', url: 'not a url' })).toEqual(['target.url']);
  expect(fieldsOf({ kind: 'http', url: 'https://example.com', request_timeout_s: 0 })).toEqual(['target.request_timeout_s']);
  expect(roundTrip({ kind: 'http', url: 'https://example.com/hook' })).toEqual({
    kind: 'http',
    url: 'https://example.com/hook',
    request_timeout_s: 30,
    allow_link_local: false,
  });
});

test('a lambda target names a function or its ARN', () => {
  expect(fieldsOf({ kind: 'lambda', function: 'has spaces' })).toEqual(['target.function']);
  const arn = 'arn:aws:lambda:eu-west-1:123456789012:function:send-email:live';
  expect(roundTrip({ kind: 'lambda', function: arn })).toEqual({ kind: 'lambda', function: arn });
});

test('an eventbridge target needs a bus and a detail type; the source defaults to the queue', () => {
  expect(fieldsOf({ kind: 'eventbridge', bus: 'orders' })).toEqual(['target.detail_type']);
  expect(roundTrip({ kind: 'eventbridge', bus: 'orders', detail_type: 'order.reminder' })).toEqual({
    kind: 'eventbridge',
    bus: 'orders',
    detail_type: 'order.reminder',
    source: 'delayed-job-queue',
  });
});

test('unknown target kinds and unknown target fields are refused, naming the field', () => {
  expect(fieldsOf({ kind: 'sqs', queue: 'q' })).toEqual(['target.kind']);
  expect(fieldsOf({ kind: 'http', url: 'https://example.com', secret: 'mine' })).toEqual(['target.secret']);
});
