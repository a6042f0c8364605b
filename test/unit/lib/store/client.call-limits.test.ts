/**
 * How long one DynamoDB call may take. The cursor's safety margin and the
 * request paths' timeouts are checked against `maxDynamoCallMs`, so the bound
 * is measured here against the SDK as installed: its timeouts and its backoff.
 */
import { createServer } from 'node:net';
import { GetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { afterEach, describe, expect, test, vi } from 'vitest';
import { queueFromEnvironment } from '../../../../functions/shared/environment.js';
import { MIN_CURSOR_SAFETY_MARGIN_MS } from '../../../../lib/queue/settings.js';
import { createDynamoClients } from '../../../../lib/store/client.js';
import { MAX_DYNAMODB_CALL_MS, maxDynamoCallMs, REQUEST_PATH_DYNAMODB_CALL_LIMITS, SDK_THROTTLING_BACKOFF_BASE_MS, type DynamoCallLimits } from '../../../../lib/domain/limits.js';
import { API_TIMEOUT_S, AUTHORIZER_TIMEOUT_S } from '../../../../lib/domain/limits.js';
import { faultError, refuseCalls } from '../../../support/faults.js';

const QUICK: DynamoCallLimits = { maxAttempts: 3, requestHandler: { connectionTimeout: 200, requestTimeout: 300, throwOnRequestTimeout: true } };

afterEach(() => {
  vi.restoreAllMocks();
});

/** A server that accepts connections and reads requests, and never answers. */
async function withSilentServer(use: (endpoint: string) => Promise<void>): Promise<void> {
  const server = createServer((socket) => socket.resume()).listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  try {
    await use(`http://127.0.0.1:${(server.address() as { port: number }).port}`);
  } finally {
    server.close();
  }
}

async function timedGet(db: DynamoDBDocumentClient): Promise<{ outcome: unknown; elapsedMs: number }> {
  const startedMs = Date.now();
  const outcome = await db.send(new GetCommand({ TableName: 't', Key: { pk: 'x', sk: 'y' } })).catch((error: unknown) => error);
  db.destroy();
  return { outcome, elapsedMs: Date.now() - startedMs };
}

test('a try that gets no answer ends at its requestTimeout, so a call to a silent server ends within its bound', async () => {
  await withSilentServer(async (endpoint) => {
    const { outcome, elapsedMs } = await timedGet(createDynamoClients({ endpoint, callLimits: QUICK }).db);
    expect(outcome).toMatchObject({ name: 'TimeoutError' });
    expect(elapsedMs).toBeGreaterThanOrEqual(QUICK.maxAttempts * QUICK.requestHandler.requestTimeout);
    expect(elapsedMs).toBeLessThan(maxDynamoCallMs(QUICK));
  });
});

test("throttled every time, a call waits at most the SDK's throttling backoff between tries, doubling, and ends within its bound", async () => {
  // The longest backoff the SDK can draw, on a fake clock: the waits are read off it, not timed.
  vi.spyOn(Math, 'random').mockReturnValue(0.9999);
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
  try {
    const clients = createDynamoClients({ endpoint: 'http://127.0.0.1:9', callLimits: QUICK });
    refuseCalls(clients.base, () => true, () => faultError('ThrottlingException'));
    const call = timedGet(clients.db);
    await vi.runAllTimersAsync();
    const { outcome, elapsedMs } = await call;
    expect(outcome).toMatchObject({ name: 'ThrottlingException' });
    const longestBackoffMs = SDK_THROTTLING_BACKOFF_BASE_MS * (1 + 2);
    expect(elapsedMs).toBeGreaterThanOrEqual(0.99 * longestBackoffMs);
    expect(elapsedMs).toBeLessThanOrEqual(longestBackoffMs);
    expect(elapsedMs).toBeLessThan(maxDynamoCallMs(QUICK));
  } finally {
    vi.useRealTimers();
  }
});

describe('request paths (api, authorizer)', () => {
  const requestCallMs = maxDynamoCallMs(REQUEST_PATH_DYNAMODB_CALL_LIMITS);

  test('the authorizer can read a key and record its use, every retry and backoff included, within its timeout', () => {
    expect(2 * requestCallMs).toBeLessThan(AUTHORIZER_TIMEOUT_S * 1000);
  });

  test('the api can make five calls one after another, every retry and backoff included, within its timeout', () => {
    expect(5 * requestCallMs).toBeLessThan(API_TIMEOUT_S * 1000);
  });

  test("a request's call is bounded more tightly than a background function's, which the cursor safety margin exceeds", () => {
    expect(requestCallMs).toBeLessThan(MAX_DYNAMODB_CALL_MS);
    expect(MAX_DYNAMODB_CALL_MS).toBeLessThan(MIN_CURSOR_SAFETY_MARGIN_MS);
  });

  test('a request-path queue from the environment gives up on a silent DynamoDB within the budget', async () => {
    await withSilentServer(async (endpoint) => {
      const { db } = queueFromEnvironment({ TABLE_NAME: 't', DYNAMODB_ENDPOINT: endpoint }, { callLimits: REQUEST_PATH_DYNAMODB_CALL_LIMITS });
      const { outcome, elapsedMs } = await timedGet(db);
      expect(outcome).toMatchObject({ name: 'TimeoutError' });
      expect(elapsedMs).toBeLessThan(requestCallMs);
    });
  });
});
