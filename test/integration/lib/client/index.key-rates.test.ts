/** The typed client defines per-key rates and reads them back; a bad one is an InvalidRequestError naming the field. */
import { afterEach, beforeEach, expect, test, vi, type MockInstance } from 'vitest';
import { createClient, InvalidRequestError, type QueueClient } from '../../../../lib/client/index.js';
import { serveTestApi, type HttpTestApi } from '../../../support/http-api.js';
import { createTestQueue, type TestQueue } from '../../../support/queue.js';

let queue: TestQueue;
let server: HttpTestApi;
let client: QueueClient;
let consoleError: MockInstance<typeof console.error>;

beforeEach(async () => {
  // The api logs refusals; the tests read nothing from them.
  consoleError = vi.spyOn(console, 'error').mockImplementation(() => undefined);
  queue = await createTestQueue();
  server = await serveTestApi(queue);
  client = createClient({ url: server.url, token: server.adminToken, sleep: async () => undefined });
});
afterEach(async () => {
  consoleError.mockRestore();
  await server.close();
  await queue.drop();
});

test('defineType sends a key\'s rate_per_s, and getType answers it', async () => {
  const throttle = { key_field: 'customer', limits: { '*': { rate_per_s: 10 }, acme: { limit: 20, rate_per_s: 50 } } };
  await client.defineType('webhooks', { target: { kind: 'handler', name: 'echo' }, throttle });
  expect((await client.getType('webhooks')).throttle).toEqual(throttle);
});

test('a rate of 0 is an InvalidRequestError naming throttle.limits.acme.rate_per_s', async () => {
  const defining = client.defineType('webhooks', { target: { kind: 'handler', name: 'echo' }, throttle: { limits: { acme: { rate_per_s: 0 } } } });
  await expect(defining).rejects.toBeInstanceOf(InvalidRequestError);
  await expect(defining).rejects.toMatchObject({ details: [expect.objectContaining({ field: 'throttle.limits.acme.rate_per_s' })] });
});
