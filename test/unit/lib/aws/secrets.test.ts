import { GetSecretValueCommand, ResourceNotFoundException, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, test } from 'vitest';
import { SECRET_CACHE_MS, secretsManagerSecret } from '../../../../lib/aws/secrets.js';

const secretsManager = mockClient(SecretsManagerClient);
const SECRET_ARN = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:callback-AbCdEf';
const notFound = () => new ResourceNotFoundException({ message: "can't find the specified secret version", $metadata: {} });

let nowMs = 0;
const source = () => secretsManagerSecret(new SecretsManagerClient({}), SECRET_ARN, () => nowMs);

function holds(current: string, previous?: string): void {
  secretsManager.on(GetSecretValueCommand, { SecretId: SECRET_ARN, VersionStage: 'AWSCURRENT' }).resolves({ SecretString: current });
  const previousStage = secretsManager.on(GetSecretValueCommand, { SecretId: SECRET_ARN, VersionStage: 'AWSPREVIOUS' });
  if (previous === undefined) previousStage.rejects(notFound());
  else previousStage.resolves({ SecretString: previous });
}

beforeEach(() => {
  secretsManager.reset();
  nowMs = 0;
});

describe('a secret read from Secrets Manager', () => {
  test('gives the current version to sign with, and the previous one to accept as well', async () => {
    holds('new', 'old');
    expect(await source().versions()).toEqual({ current: 'new', previous: 'old' });
  });

  test('of a secret never rotated has no previous version', async () => {
    holds('only');
    expect(await source().versions()).toEqual({ current: 'only' });
  });

  test('is read once for the cache period, however many ask at once', async () => {
    holds('v1');
    const secret = source();
    await Promise.all([secret.versions(), secret.versions(), secret.versions()]);
    nowMs += SECRET_CACHE_MS - 1;
    await secret.versions();
    expect(secretsManager.commandCalls(GetSecretValueCommand)).toHaveLength(2);
  });

  test('picks up a rotation once the cache period is over', async () => {
    holds('v1');
    const secret = source();
    await secret.versions();
    holds('v2', 'v1');
    nowMs += SECRET_CACHE_MS;
    expect(await secret.versions()).toEqual({ current: 'v2', previous: 'v1' });
  });

  test('keeps serving what it read when a later read fails', async () => {
    holds('v1');
    const secret = source();
    await secret.versions();
    secretsManager.reset();
    secretsManager.on(GetSecretValueCommand).rejects(new Error('Secrets Manager is unreachable'));
    nowMs += SECRET_CACHE_MS;
    expect(await secret.versions()).toEqual({ current: 'v1' });
  });

  test('fails when the first read fails: there is nothing to sign or verify with yet', async () => {
    secretsManager.on(GetSecretValueCommand).rejects(new Error('AccessDeniedException'));
    await expect(source().versions()).rejects.toThrow('AccessDeniedException');
  });
});
