/**
 * Starts one in-memory DynamoDB Local for the whole run; each test file creates its own table in it. Reads the
 * stack's IAM policies once, so every test file checks its functions' calls against them.
 */
import type { TestProject } from 'vitest/node';
import { startDynamoDbLocal } from '../../infra/local/aws/dynamodb-local.js';
import { readStackPolicies, type StackPolicies } from '../../infra/local/aws/iam/stack-policies.js';

declare module 'vitest' {
  export interface ProvidedContext {
    dynamoEndpoint: string;
    stackPolicies: StackPolicies;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  project.provide('stackPolicies', readStackPolicies());
  const dynamo = await startDynamoDbLocal();
  project.provide('dynamoEndpoint', dynamo.endpoint);
  return () => dynamo.stop();
}
