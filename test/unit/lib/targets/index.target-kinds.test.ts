import { EventBridgeClient, PutEventsCommand } from '@aws-sdk/client-eventbridge';
import { jobTypeFromInput } from '../../../support/job-types.js';
import { InvokeCommand, LambdaClient, type InvokeCommandOutput } from '@aws-sdk/client-lambda';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, test } from 'vitest';
import { jobTypeInputSchema } from '../../../../lib/wire/job-types.js';
import { parseWith } from '../../../../lib/wire/parse.js';
import type { JobType } from '../../../../lib/domain/job-type.js';
import { runEventBridgeTarget } from '../../../../lib/targets/eventbridge.js';
import { outcomeOfAnswer, retryAfterMs } from '../../../../lib/targets/http.js';
import { prepareTarget } from '../../../../lib/targets/index.js';
import { fixedSecret } from '../../../../lib/aws/secrets.js';
import { runLambdaTarget } from '../../../../lib/targets/lambda.js';
import type { TargetRun } from '../../../../lib/targets/target.js';
import { runningJob, T0 } from '../../../support/jobs.js';

const lambda = mockClient(LambdaClient);
const eventBridge = mockClient(EventBridgeClient);

beforeEach(() => {
  lambda.reset();
  eventBridge.reset();
});

function jobTypeWith(target: Record<string, unknown>): JobType {
  return jobTypeFromInput('emails', parseWith(jobTypeInputSchema, { target }), { createdAtMs: T0, updatedAtMs: T0 });
}

function runOf(jobType: JobType, signal = new AbortController().signal): TargetRun {
  return { job: runningJob({ attempt: 2, data: { to: 'ada' } }), jobType, signal, heartbeat: async () => undefined, progress: async () => undefined, nowMs: () => T0 };
}

// The SDK wraps payloads in a Uint8Array subclass; the target reads only the bytes.
const payload = (value: unknown) => Buffer.from(JSON.stringify(value)) as unknown as InvokeCommandOutput['Payload'];
const noSleep = async (): Promise<void> => undefined;
const TRACEPARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

describe('lambda target', () => {
  const target = { functionName: 'send-email' };
  const run = runOf(jobTypeWith({ kind: 'lambda', function: 'send-email' }));

  test('invokes the function synchronously with the job, and keeps what it returns as the result', async () => {
    lambda.on(InvokeCommand).resolves({ StatusCode: 200, Payload: payload({ sent: true }) });
    expect(await runLambdaTarget(run, target, new LambdaClient({}))).toEqual({ kind: 'succeeded', result: { sent: true } });
    const input = lambda.commandCalls(InvokeCommand)[0]?.args[0].input;
    expect(input?.FunctionName).toBe('send-email');
    expect(input?.InvocationType).toBe('RequestResponse');
    expect(JSON.parse(Buffer.from(input?.Payload as Uint8Array).toString('utf8'))).toEqual({ id: 'job_1', type: 'emails', attempt: 2, data: { to: 'ada' } });
  });

  test('the payload carries the attempt’s traceparent when the job is traced', async () => {
    lambda.on(InvokeCommand).resolves({ StatusCode: 200, Payload: payload(null) });
    await runLambdaTarget({ ...run, traceparent: TRACEPARENT }, target, new LambdaClient({}));
    const input = lambda.commandCalls(InvokeCommand)[0]?.args[0].input;
    expect(JSON.parse(Buffer.from(input?.Payload as Uint8Array).toString('utf8'))).toMatchObject({ id: 'job_1', traceparent: TRACEPARENT });
  });

  test('a function error fails the attempt with the error type and message the function reported', async () => {
    lambda.on(InvokeCommand).resolves({
      StatusCode: 200,
      FunctionError: 'Unhandled',
      Payload: payload({ errorType: 'MailboxFullError', errorMessage: 'mailbox full', trace: ['at send (index.js:3)'] }),
    });
    expect(await runLambdaTarget(run, target, new LambdaClient({}))).toEqual({
      kind: 'failed',
      failure: { error: { class: 'MailboxFullError', message: 'mailbox full', trace: 'at send (index.js:3)' }, retryable: true },
    });
  });

  test('a function error without a payload still fails, named by Lambda\'s error kind', async () => {
    lambda.on(InvokeCommand).resolves({ StatusCode: 200, FunctionError: 'Unhandled' });
    const outcome = await runLambdaTarget(run, target, new LambdaClient({}));
    expect(outcome).toMatchObject({ kind: 'failed', failure: { error: { class: 'Unhandled' }, retryable: true } });
  });

  test('a throttled invoke is a retryable failure', async () => {
    lambda.on(InvokeCommand).rejects(Object.assign(new Error('Rate exceeded'), { name: 'TooManyRequestsException' }));
    expect(await runLambdaTarget(run, target, new LambdaClient({}))).toMatchObject({
      kind: 'failed',
      failure: { error: { class: 'TooManyRequestsException' }, retryable: true },
    });
  });

  test('a function that does not exist fails without retry', async () => {
    lambda.on(InvokeCommand).rejects(Object.assign(new Error('Function not found'), { name: 'ResourceNotFoundException' }));
    expect(await runLambdaTarget(run, target, new LambdaClient({}))).toMatchObject({
      kind: 'failed',
      failure: { error: { class: 'ResourceNotFoundException' }, retryable: false },
    });
  });
});

describe('eventbridge target', () => {
  const target = { bus: 'orders', detailType: 'order.reminder', source: 'shop' };
  const run = runOf(jobTypeWith({ kind: 'eventbridge', bus: 'orders', detail_type: 'order.reminder', source: 'shop' }));

  test('puts the job on the bus as the event detail, stamped with the due time', async () => {
    eventBridge.on(PutEventsCommand).resolves({ FailedEntryCount: 0, Entries: [{ EventId: 'ev-1' }] });
    expect(await runEventBridgeTarget(run, target, new EventBridgeClient({}))).toEqual({ kind: 'succeeded', result: { event_id: 'ev-1' } });
    const [entry] = eventBridge.commandCalls(PutEventsCommand)[0]?.args[0].input.Entries ?? [];
    expect(entry).toMatchObject({ EventBusName: 'orders', Source: 'shop', DetailType: 'order.reminder', Time: new Date(T0) });
    expect(JSON.parse(entry?.Detail ?? '')).toEqual({ id: 'job_1', type: 'emails', attempt: 2, data: { to: 'ada' } });
  });

  test('the event detail carries the attempt’s traceparent when the job is traced', async () => {
    eventBridge.on(PutEventsCommand).resolves({ FailedEntryCount: 0, Entries: [{ EventId: 'ev-1' }] });
    await runEventBridgeTarget({ ...run, traceparent: TRACEPARENT }, target, new EventBridgeClient({}));
    const [entry] = eventBridge.commandCalls(PutEventsCommand)[0]?.args[0].input.Entries ?? [];
    expect(JSON.parse(entry?.Detail ?? '')).toMatchObject({ id: 'job_1', traceparent: TRACEPARENT });
  });

  test('a refused entry is sent again, and the attempt succeeds once it is accepted', async () => {
    eventBridge
      .on(PutEventsCommand)
      .resolvesOnce({ FailedEntryCount: 1, Entries: [{ ErrorCode: 'ThrottlingException', ErrorMessage: 'slow down' }] })
      .resolvesOnce({ FailedEntryCount: 0, Entries: [{ EventId: 'ev-2' }] });
    expect(await runEventBridgeTarget(run, target, new EventBridgeClient({}), { sleep: noSleep })).toEqual({ kind: 'succeeded', result: { event_id: 'ev-2' } });
    expect(eventBridge.commandCalls(PutEventsCommand)).toHaveLength(2);
  });

  test('an entry refused on every call fails the attempt, retryably, with the refusal', async () => {
    eventBridge.on(PutEventsCommand).resolves({ FailedEntryCount: 1, Entries: [{ ErrorCode: 'InternalFailure', ErrorMessage: 'try again' }] });
    expect(await runEventBridgeTarget(run, target, new EventBridgeClient({}), { sleep: noSleep, maxCalls: 3 })).toEqual({
      kind: 'failed',
      failure: { error: { class: 'InternalFailure', message: 'try again' }, retryable: true },
    });
    expect(eventBridge.commandCalls(PutEventsCommand)).toHaveLength(3);
  });
});

describe('target configuration', () => {
  const noSecrets = { get: async () => undefined };

  test("a handler named after an object's own methods is unknown, not Object.prototype's", async () => {
    for (const name of ['toString', 'constructor', 'hasOwnProperty']) {
      expect(await prepareTarget(jobTypeWith({ kind: 'handler', name }), { handlers: {}, signingSecrets: noSecrets })).toMatchObject({
        failure: { error: { class: 'UnknownHandlerError' }, retryable: false },
      });
    }
  });

  test('a kind whose client the worker lacks fails without retry, naming what is missing', async () => {
    const prepared = await prepareTarget(jobTypeWith({ kind: 'lambda', function: 'f' }), { handlers: {}, signingSecrets: noSecrets });
    expect(prepared).toMatchObject({ failure: { error: { class: 'TargetNotConfiguredError' }, retryable: false } });
    expect(await prepareTarget(jobTypeWith({ kind: 'http', url: 'https://example.com' }), { handlers: {}, signingSecrets: noSecrets })).toMatchObject({
      failure: { error: { message: expect.stringContaining('PUBLIC_API_URL and CALLBACK_TOKEN_PARAMETER') } },
    });
  });

  test('an http target whose type has no signing secret where it is kept fails without retry, like a missing client', async () => {
    const http = { apiBaseUrl: 'https://queue.example.com', callbackTokenSecret: fixedSecret('cbs') };
    const prepared = await prepareTarget(jobTypeWith({ kind: 'http', url: 'https://example.com' }), { handlers: {}, http, signingSecrets: noSecrets });
    expect(prepared).toEqual({
      failure: { error: { class: 'TargetNotConfiguredError', message: 'job type "emails" has no signing secret' }, retryable: false },
    });
  });
});

describe('http answers', () => {
  const answer = (status: number, body = '', headers: Record<string, string> = {}) =>
    outcomeOfAnswer({ status, body, headers, truncated: false }, 'https://example.com/hook', T0);

  test('2xx succeeds, keeping `result` from a JSON body and nothing from any other body', () => {
    expect(answer(200, '{"result": {"id": 7}, "other": 1}')).toEqual({ kind: 'succeeded', result: { id: 7 } });
    expect(answer(204)).toEqual({ kind: 'succeeded' });
    expect(answer(200, 'ok')).toEqual({ kind: 'succeeded' });
    expect(answer(201, '[1,2]')).toEqual({ kind: 'succeeded' });
  });

  test('202 waits for the callback', () => {
    expect(answer(202, '{"result": 1}')).toEqual({ kind: 'awaiting_callback' });
  });

  test('4xx is final except 408 and 429; 5xx is retried; every failure carries the status for retry_on', () => {
    expect(answer(404)).toMatchObject({ kind: 'failed', failure: { retryable: false, httpStatus: 404 } });
    expect(answer(408)).toMatchObject({ kind: 'failed', failure: { retryable: true, httpStatus: 408 } });
    expect(answer(429)).toMatchObject({ kind: 'failed', failure: { retryable: true, httpStatus: 429 } });
    expect(answer(503)).toMatchObject({ kind: 'failed', failure: { retryable: true, httpStatus: 503 } });
  });

  test('a redirect is not followed and not retried', () => {
    expect(answer(302, '', { location: 'http://169.254.169.254/' })).toMatchObject({ kind: 'failed', failure: { retryable: false, httpStatus: 302 } });
  });

  test('Retry-After is read in seconds or as an HTTP date, and ignored when unreadable', () => {
    expect(retryAfterMs('120', T0)).toBe(120_000);
    expect(retryAfterMs(new Date(T0 + 30_000).toUTCString(), T0)).toBe(30_000);
    expect(retryAfterMs('soon', T0)).toBeUndefined();
    expect(retryAfterMs(undefined, T0)).toBeUndefined();
    expect(answer(503, '', { 'retry-after': '9' })).toMatchObject({ failure: { retryAfterMs: 9_000 } });
  });
});
