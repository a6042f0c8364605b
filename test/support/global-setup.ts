/** Starts one in-memory DynamoDB Local for the whole run; each test file creates its own table in it. */
import type { TestProject } from 'vitest/node';
import { startDynamoDbLocal } from '../../infra/local/dynamodb-local.js';

declare module 'vitest' {
  export interface ProvidedContext {
    dynamoEndpoint: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const dynamo = await startDynamoDbLocal();
  project.provide('dynamoEndpoint', dynamo.endpoint);
  return () => dynamo.stop();
}
