/** Building the DynamoDB clients; callers create them once and pass them in. */
import { DynamoDBClient, type DynamoDBClientConfig } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

export interface DynamoClients {
  base: DynamoDBClient;
  db: DynamoDBDocumentClient;
}

/**
 * `endpoint` may point at DynamoDB Local, which takes any credentials, so fixed
 * ones are supplied for a loopback endpoint; the default chain is used everywhere else.
 */
export function createDynamoClients(options: { endpoint?: string; region?: string } = {}): DynamoClients {
  const config: DynamoDBClientConfig = {
    region: options.region ?? process.env.AWS_REGION ?? 'us-east-1',
    // Outcome writes must survive brief throttling and connection drops; the SDK backs off between attempts.
    maxAttempts: 6,
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
