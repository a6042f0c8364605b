/**
 * The functions' AWS clients other than DynamoDB's are bounded too: a wake or a worker invoke sent to a Lambda
 * endpoint that never answers gives up within ASYNC_DELIVERY_CALL_LIMITS, so no writer that waits on one (a claim
 * renewal) is held past it. The SDK's default would wait as long as the socket lives.
 */
import { createServer } from 'node:net';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { ASYNC_DELIVERY_CALL_LIMITS, maxDynamoCallMs } from '../../../../lib/domain/limits.js';

let endpoint: string;
const server = createServer((socket) => socket.resume());

beforeAll(async () => {
  server.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  endpoint = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  // The SDK reads a service's endpoint from the environment; the client is made at first use, after this.
  Object.assign(process.env, { AWS_ENDPOINT_URL_LAMBDA: endpoint, AWS_REGION: 'us-east-1', AWS_ACCESS_KEY_ID: 'test', AWS_SECRET_ACCESS_KEY: 'test' });
});

afterAll(() => {
  server.close();
  delete process.env.AWS_ENDPOINT_URL_LAMBDA;
});

test('a wake to a Lambda endpoint that never answers fails within the async delivery bound, each try cut at its request timeout', async () => {
  const { wakerFromEnvironment } = await import('../../../../functions/shared/environment.js');
  const waker = wakerFromEnvironment({ POLLER_FUNCTION_NAME: 'poller', SWEEPER_FUNCTION_NAME: 'sweeper' });
  const startedMs = Date.now();
  const outcome = await waker.wake({ role: 'sweeper' }).catch((error: unknown) => error);
  const elapsedMs = Date.now() - startedMs;
  expect(outcome).toMatchObject({ name: 'TimeoutError' });
  expect(elapsedMs).toBeGreaterThanOrEqual(ASYNC_DELIVERY_CALL_LIMITS.maxAttempts * ASYNC_DELIVERY_CALL_LIMITS.requestHandler.requestTimeout);
  expect(elapsedMs).toBeLessThan(maxDynamoCallMs(ASYNC_DELIVERY_CALL_LIMITS));
});
