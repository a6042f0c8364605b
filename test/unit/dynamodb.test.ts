/**
 * How long one DynamoDB call may take. The cursor's safety margin and the
 * request paths' timeouts are checked against `maxDynamoCallMs`, so the bound
 * is measured here against the SDK as installed: its timeouts and its backoff.
 */
import { createServer } from 'node:net';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterEach, expect, test, vi } from 'vitest';
import { createDynamoClients, maxDynamoCallMs, SDK_THROTTLING_BACKOFF_BASE_MS, type DynamoCallLimits, type DynamoClients } from '../../lib/dynamodb.js';
import { faultError, refuseCalls } from '../support/faults.js';

const QUICK: DynamoCallLimits = { maxAttempts: 3, requestHandler: { connectionTimeout: 200, requestTimeout: 300, throwOnRequestTimeout: true } };
/** Timers fire a little late on a busy machine. */
const SLACK_MS = 500;

afterEach(() => {
  vi.restoreAllMocks();
});

async function timedGet(endpoint: string, limits: DynamoCallLimits, prepare: (clients: DynamoClients) => void = () => undefined) {
  const clients = createDynamoClients({ endpoint, callLimits: limits });
  prepare(clients);
  const startedMs = Date.now();
  const outcome = await clients.db.send(new GetCommand({ TableName: 't', Key: { pk: 'x', sk: 'y' } })).catch((error: unknown) => error);
  clients.base.destroy();
  return { outcome, elapsedMs: Date.now() - startedMs };
}

test('a try that gets no answer ends at its requestTimeout, so a call to a silent server ends within its bound', async () => {
  // Accepts connections and reads requests, never answers.
  const server = createServer((socket) => socket.resume()).listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  try {
    const { port } = server.address() as { port: number };
    const { outcome, elapsedMs } = await timedGet(`http://127.0.0.1:${port}`, QUICK);
    expect(outcome).toMatchObject({ name: 'TimeoutError' });
    expect(elapsedMs).toBeGreaterThanOrEqual(QUICK.maxAttempts * QUICK.requestHandler.requestTimeout);
    expect(elapsedMs).toBeLessThan(maxDynamoCallMs(QUICK));
  } finally {
    server.close();
  }
});

test("throttled every time, a call waits at most the SDK's throttling backoff between tries, doubling, and ends within its bound", async () => {
  // The longest backoff the SDK can draw.
  vi.spyOn(Math, 'random').mockReturnValue(0.9999);
  const { outcome, elapsedMs } = await timedGet('http://127.0.0.1:9', QUICK, ({ base }) =>
    refuseCalls(base, () => true, () => faultError('ThrottlingException')),
  );
  expect(outcome).toMatchObject({ name: 'ThrottlingException' });
  const longestBackoffMs = SDK_THROTTLING_BACKOFF_BASE_MS * (1 + 2);
  expect(elapsedMs).toBeGreaterThanOrEqual(0.99 * longestBackoffMs);
  expect(elapsedMs).toBeLessThan(longestBackoffMs + SLACK_MS);
  expect(elapsedMs).toBeLessThan(maxDynamoCallMs(QUICK));
});
