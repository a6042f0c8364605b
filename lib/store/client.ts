/** Building the DynamoDB clients; callers create them once and pass them in. */
import { DynamoDBClient, type DynamoDBClientConfig } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { DYNAMODB_CALL_LIMITS, type DynamoCallLimits } from '../domain/limits.js';

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
  const base = new DynamoDBClient(dynamoClientConfig(options));
  const db = DynamoDBDocumentClient.from(base, { marshallOptions: { removeUndefinedValues: true } });
  return { base, db };
}

/** A DynamoDB client's configuration for `options`, which the local runtime's stream reader shares. */
export function dynamoClientConfig(options: DynamoClientOptions = {}): DynamoDBClientConfig {
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
  return config;
}
