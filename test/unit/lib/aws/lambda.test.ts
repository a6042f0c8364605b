import { InvokeCommand, LambdaClient } from '@aws-sdk/client-lambda';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, test } from 'vitest';
import { createLambdaInvoker, createLambdaWaker } from '../../../../lib/aws/lambda.js';
import { wakerFromEnvironment } from '../../../../functions/shared/environment.js';
import { ConfigError } from '../../../../lib/domain/errors.js';
import type { WorkerBatch } from '../../../../lib/domain/invocations.js';

const lambda = mockClient(LambdaClient);
const batch: WorkerBatch = { jobs: [], jobTypes: {} };

beforeEach(() => lambda.reset());

test('the worker is invoked asynchronously with the batch as its payload', async () => {
  lambda.on(InvokeCommand).resolves({ StatusCode: 202 });
  await createLambdaInvoker(new LambdaClient({}), 'worker-fn').invoke(batch);
  const input = lambda.commandCalls(InvokeCommand)[0]?.args[0].input;
  expect(input?.FunctionName).toBe('worker-fn');
  expect(input?.InvocationType).toBe('Event');
  expect(JSON.parse(Buffer.from(input?.Payload as Uint8Array).toString('utf8'))).toEqual(batch);
});

test('an invoke Lambda did not accept is an error, so the poller releases the claims', async () => {
  lambda.on(InvokeCommand).resolves({ StatusCode: 200, FunctionError: 'Unhandled' });
  await expect(createLambdaInvoker(new LambdaClient({}), 'worker-fn').invoke(batch)).rejects.toThrow(/not accepted/);
});

test('a throttled invoke rejects instead of being reported as dispatched', async () => {
  lambda.on(InvokeCommand).rejects(new Error('Rate exceeded'));
  await expect(createLambdaInvoker(new LambdaClient({}), 'worker-fn').invoke(batch)).rejects.toThrow('Rate exceeded');
});

describe('the deployed waker', () => {
  const targets = { pollerFunctionName: 'poller-fn', sweeperFunctionName: 'sweeper-fn' };
  const sentInput = () => lambda.commandCalls(InvokeCommand)[0]?.args[0].input;
  const payloadOf = (input: { Payload?: unknown } | undefined) => JSON.parse(Buffer.from(input?.Payload as Uint8Array).toString('utf8')) as unknown;

  test('a poller wake invokes the poller function asynchronously with its shards, marked as a wake', async () => {
    lambda.on(InvokeCommand).resolves({ StatusCode: 202 });
    await createLambdaWaker(new LambdaClient({}), targets).wake({ role: 'poller', shards: [1, 3] });
    expect(sentInput()).toMatchObject({ FunctionName: 'poller-fn', InvocationType: 'Event' });
    expect(payloadOf(sentInput())).toEqual({ wake: true, shards: [1, 3] });
  });

  test('a sweeper wake invokes the sweeper function asynchronously with a wake event and no shards', async () => {
    lambda.on(InvokeCommand).resolves({ StatusCode: 202 });
    await createLambdaWaker(new LambdaClient({}), targets).wake({ role: 'sweeper' });
    expect(sentInput()).toMatchObject({ FunctionName: 'sweeper-fn', InvocationType: 'Event' });
    expect(payloadOf(sentInput())).toEqual({ wake: true });
  });

  test('a wake Lambda answered other than 202 is an error naming what was to be woken', async () => {
    lambda.on(InvokeCommand).resolves({ StatusCode: 200 });
    await expect(createLambdaWaker(new LambdaClient({}), targets).wake({ role: 'sweeper' })).rejects.toThrow('sweeper wake not accepted: status 200');
  });

  test('a refused wake (throttled, denied) rejects with the SDK error', async () => {
    lambda.on(InvokeCommand).rejects(new Error('Rate exceeded'));
    await expect(createLambdaWaker(new LambdaClient({}), targets).wake({ role: 'poller', shards: [0] })).rejects.toThrow('Rate exceeded');
  });

  test("a function's waker wakes the functions the stack names in POLLER_FUNCTION_NAME and SWEEPER_FUNCTION_NAME", async () => {
    lambda.on(InvokeCommand).resolves({ StatusCode: 202 });
    const waker = wakerFromEnvironment({ POLLER_FUNCTION_NAME: 'Jobs-Poller-1A2B', SWEEPER_FUNCTION_NAME: 'Jobs-Sweeper-3C4D' });
    await waker.wake({ role: 'poller', shards: [0] });
    await waker.wake({ role: 'sweeper' });
    expect(lambda.commandCalls(InvokeCommand).map((call) => call.args[0].input.FunctionName)).toEqual(['Jobs-Poller-1A2B', 'Jobs-Sweeper-3C4D']);
  });

  test.each(['POLLER_FUNCTION_NAME', 'SWEEPER_FUNCTION_NAME'])("a function's waker refuses to start without %s, naming it", (name) => {
    const env = new Map([['POLLER_FUNCTION_NAME', 'p'], ['SWEEPER_FUNCTION_NAME', 's']]);
    env.delete(name);
    expect(() => wakerFromEnvironment(Object.fromEntries(env))).toThrow(new ConfigError(`${name} environment variable is not set`));
  });
});
