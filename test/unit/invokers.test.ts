import { InvokeCommand, LambdaClient } from '@aws-sdk/client-lambda';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, expect, test } from 'vitest';
import { createLambdaInvoker } from '../../lib/aws/lambda.js';
import type { WorkerBatch } from '../../lib/queue/batcher.js';

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
