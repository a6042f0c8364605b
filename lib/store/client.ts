/** Building the DynamoDB clients; callers create them once and pass them in. */
import { DynamoDBClient, type DynamoDBClientConfig } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

/** What bounds one DynamoDB call: how often the SDK tries it, and how long each try may take. */
export interface DynamoCallLimits {
  maxAttempts: number;
  requestHandler: {
    connectionTimeout: number;
    requestTimeout: number;
    /** Without it the SDK only logs a warning when requestTimeout passes, and the call goes on waiting. */
    throwOnRequestTimeout: true;
  };
}

/**
 * Writes must survive brief throttling and dropped connections, so the SDK
 * retries with backoff; but a write must also never be in flight longer than
 * the cursor's safety margin (60 s by default), or it could land in a bucket a
 * cursor has already passed. These bounds keep one call at most 50 s:
 * 5 tries of at most 2 s to connect and 5 s to answer, plus the SDK's backoff
 * between them (at most 1 + 2 + 4 + 8 s for throttling).
 */
export const DYNAMODB_CALL_LIMITS: DynamoCallLimits = {
  maxAttempts: 5,
  requestHandler: { connectionTimeout: 2_000, requestTimeout: 5_000, throwOnRequestTimeout: true },
};

/**
 * The api and the authorizer must answer within their Lambda timeouts
 * (lib/function-timeouts.ts), and a request makes a few calls one after
 * another: 2 tries of at most 0.5 s to connect and 1 s to answer, with one
 * backoff (at most 1 s), keep a call at most 4 s, so the authorizer's two calls
 * fit its 10 s and five of the api's fit its 29 s. A write from a request is
 * then in flight for far less than the cursor's safety margin too.
 */
export const REQUEST_PATH_DYNAMODB_CALL_LIMITS: DynamoCallLimits = {
  maxAttempts: 2,
  requestHandler: { connectionTimeout: 500, requestTimeout: 1_000, throwOnRequestTimeout: true },
};

/**
 * The SDK's longest wait before retry `n` (from 0): its standard strategy waits a random share of
 * min(base × 2^n, 20 s), the base being 1 s after throttling and far less after other errors.
 */
export const SDK_THROTTLING_BACKOFF_BASE_MS = 1_000;
const SDK_MAX_BACKOFF_MS = 20_000;

/** The longest one call may take under `limits`, every try and every backoff between them included. */
export function maxDynamoCallMs({ maxAttempts, requestHandler }: DynamoCallLimits): number {
  let backoffMs = 0;
  for (let retry = 0; retry < maxAttempts - 1; retry++) backoffMs += Math.min(SDK_THROTTLING_BACKOFF_BASE_MS * 2 ** retry, SDK_MAX_BACKOFF_MS);
  return maxAttempts * (requestHandler.connectionTimeout + requestHandler.requestTimeout) + backoffMs;
}

/** The longest one DynamoDB call may take, retries included; the cursor's safety margin must exceed it. */
export const MAX_DYNAMODB_CALL_MS = maxDynamoCallMs(DYNAMODB_CALL_LIMITS);

export interface DynamoClients {
  base: DynamoDBClient;
  db: DynamoDBDocumentClient;
}

/**
 * `endpoint` may point at DynamoDB Local, which takes any credentials, so fixed
 * ones are supplied for a loopback endpoint; the default chain is used everywhere else.
 */
export interface DynamoClientOptions {
  endpoint?: string;
  region?: string;
  /** @default DYNAMODB_CALL_LIMITS */
  callLimits?: DynamoCallLimits;
}

export function createDynamoClients(options: DynamoClientOptions = {}): DynamoClients {
  const config: DynamoDBClientConfig = {
    region: options.region ?? process.env.AWS_REGION ?? 'us-east-1',
    ...(options.callLimits ?? DYNAMODB_CALL_LIMITS),
  };
  if (options.endpoint) {
    config.endpoint = options.endpoint;
    const { hostname } = new URL(options.endpoint);
    if (hostname === 'localhost' || hostname === '127.0.0.1' || hostname === '[::1]') {
      config.credentials = { accessKeyId: 'local', secretAccessKey: 'local' };
    }
  }
  const base = new DynamoDBClient(config);
  const db = DynamoDBDocumentClient.from(base, { marshallOptions: { removeUndefinedValues: true } });
  return { base, db };
}
