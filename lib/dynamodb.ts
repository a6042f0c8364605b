/** Building the DynamoDB clients; callers create them once and pass them in. */
import { DynamoDBClient, type DynamoDBClientConfig } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

/**
 * Writes must survive brief throttling and dropped connections, so the SDK
 * retries with backoff; but a write must also never be in flight longer than
 * the cursor's safety margin (60 s by default), or it could land in a bucket a
 * cursor has already passed. These bounds keep one call under about 40 s:
 * 5 tries of at most 2 s to connect and 5 s to answer, plus the SDK's backoff
 * between them (at most 0.5 + 1 + 2 + 4 s for throttling).
 */
export const DYNAMODB_CALL_LIMITS = {
  maxAttempts: 5,
  requestHandler: { connectionTimeout: 2_000, requestTimeout: 5_000 },
} as const;

/** The longest one DynamoDB call may take, retries included; the cursor's safety margin must exceed it. */
export const MAX_DYNAMODB_CALL_MS = 5 * (2_000 + 5_000) + 7_500;

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
}

export function createDynamoClients(options: DynamoClientOptions = {}): DynamoClients {
  const config: DynamoDBClientConfig = {
    region: options.region ?? process.env.AWS_REGION ?? 'us-east-1',
    ...DYNAMODB_CALL_LIMITS,
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
