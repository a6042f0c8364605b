/** Building the DynamoDB clients; callers create them once and pass them in. */
import { DynamoDBClient, type DynamoDBClientConfig } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

export interface DynamoClients {
  base: DynamoDBClient;
  db: DynamoDBDocumentClient;
}

/**
 * `endpoint` points at DynamoDB Local; it takes any credentials, so fixed ones
 * are supplied there and the default chain is used everywhere else.
 */
export function createDynamoClients(options: { endpoint?: string; region?: string } = {}): DynamoClients {
  const config: DynamoDBClientConfig = {
    region: options.region ?? process.env.AWS_REGION ?? 'us-east-1',
    // Outcome writes must survive brief throttling and connection drops; the SDK backs off between attempts.
    maxAttempts: 6,
  };
  if (options.endpoint) {
    config.endpoint = options.endpoint;
    config.credentials = { accessKeyId: 'local', secretAccessKey: 'local' };
  }
  const base = new DynamoDBClient(config);
  const db = DynamoDBDocumentClient.from(base, { marshallOptions: { removeUndefinedValues: true } });
  return { base, db };
}
