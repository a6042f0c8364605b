import { GetParameterCommand, ParameterAlreadyExists, ParameterNotFound, ParameterVersionNotFound, PutParameterCommand, SSMClient } from '@aws-sdk/client-ssm';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, test } from 'vitest';
import { parameterStoreSecret, SECRET_CACHE_MS, SecretNotCreatedError } from '../../../../lib/aws/secrets.js';

const ssm = mockClient(SSMClient);
const NAME = '/Jobs/Queue/callback-token-secret';
const notFound = () => new ParameterNotFound({ message: 'parameter not found', $metadata: {} });

let nowMs = 0;
const source = (createIfMissing = false) => parameterStoreSecret(new SSMClient({}), NAME, { createIfMissing, nowMs: () => nowMs });

/** The parameter's versions, oldest first; each read decrypted. */
function holds(...values: string[]): void {
  ssm.reset();
  ssm.on(GetParameterCommand, { Name: NAME, WithDecryption: true }).resolves({ Parameter: { Name: NAME, Value: values.at(-1)!, Version: values.length } });
  values.forEach((value, index) => {
    ssm.on(GetParameterCommand, { Name: `${NAME}:${index + 1}`, WithDecryption: true }).resolves({ Parameter: { Name: NAME, Value: value, Version: index + 1 } });
  });
}

beforeEach(() => {
  ssm.reset();
  nowMs = 0;
});

describe('a secret read from Parameter Store', () => {
  test('gives the latest version to sign with, and the one before it to accept as well', async () => {
    holds('old', 'new');
    expect(await source().versions()).toEqual({ current: 'new', previous: 'old' });
    expect(ssm.commandCalls(GetParameterCommand).every((call) => call.args[0].input.WithDecryption === true)).toBe(true);
  });

  test('of a parameter never rotated has no previous version', async () => {
    holds('only');
    expect(await source().versions()).toEqual({ current: 'only' });
    expect(ssm.commandCalls(GetParameterCommand)).toHaveLength(1);
  });

  test('whose previous version is gone has none', async () => {
    holds('v1', 'v2');
    ssm.on(GetParameterCommand, { Name: `${NAME}:1`, WithDecryption: true }).rejects(new ParameterVersionNotFound({ message: 'gone', $metadata: {} }));
    expect(await source().versions()).toEqual({ current: 'v2' });
  });

  test('is read once for the cache period, however many ask at once', async () => {
    holds('v1');
    const secret = source();
    await Promise.all([secret.versions(), secret.versions(), secret.versions()]);
    nowMs += SECRET_CACHE_MS - 1;
    await secret.versions();
    expect(ssm.commandCalls(GetParameterCommand)).toHaveLength(1);
  });

  test('picks up a rotation once the cache period is over, and reads the previous version only when the latest changed', async () => {
    holds('v1');
    const secret = source();
    await secret.versions();
    holds('v1', 'v2');
    nowMs += SECRET_CACHE_MS;
    expect(await secret.versions()).toEqual({ current: 'v2', previous: 'v1' });
    expect(ssm.commandCalls(GetParameterCommand)).toHaveLength(2);
    ssm.resetHistory();
    nowMs += SECRET_CACHE_MS;
    expect(await secret.versions()).toEqual({ current: 'v2', previous: 'v1' });
    expect(ssm.commandCalls(GetParameterCommand)).toHaveLength(1);
  });

  test('keeps serving what it read when a later read fails', async () => {
    holds('v1');
    const secret = source();
    await secret.versions();
    ssm.reset();
    ssm.on(GetParameterCommand).rejects(new Error('Parameter Store is unreachable'));
    nowMs += SECRET_CACHE_MS;
    expect(await secret.versions()).toEqual({ current: 'v1' });
  });

  test('fails when the first read fails: there is nothing to sign or verify with yet', async () => {
    ssm.on(GetParameterCommand).rejects(new Error('AccessDeniedException'));
    await expect(source().versions()).rejects.toThrow('AccessDeniedException');
  });
});

describe('a parameter not created yet', () => {
  test('is created by its signer, a SecureString of the standard tier with a random value, never overwriting', async () => {
    let created: string | undefined;
    ssm.on(GetParameterCommand).callsFake((input: { Name: string }) => {
      if (created === undefined || input.Name !== NAME) throw notFound();
      return { Parameter: { Name: NAME, Value: created, Version: 1 } };
    });
    ssm.on(PutParameterCommand).callsFake((input: { Value: string }) => {
      created = input.Value;
      return { Version: 1 };
    });
    const versions = await source(true).versions();
    const [put] = ssm.commandCalls(PutParameterCommand);
    expect(put?.args[0].input).toMatchObject({ Name: NAME, Type: 'SecureString', Tier: 'Standard', Overwrite: false });
    expect(versions).toEqual({ current: created });
    expect(created).toMatch(/^[\w-]{43}$/);
  });

  test('is read as another signer created it when that one came first', async () => {
    ssm.on(GetParameterCommand, { Name: NAME }).rejectsOnce(notFound()).resolves({ Parameter: { Name: NAME, Value: 'theirs', Version: 1 } });
    ssm.on(PutParameterCommand).rejects(new ParameterAlreadyExists({ message: 'exists', $metadata: {} }));
    expect(await source(true).versions()).toEqual({ current: 'theirs' });
  });

  test('is SecretNotCreatedError to a verifier, which creates nothing and asks again next time', async () => {
    ssm.on(GetParameterCommand).rejects(notFound());
    const secret = source();
    await expect(secret.versions()).rejects.toBeInstanceOf(SecretNotCreatedError);
    holds('v1');
    expect(await secret.versions()).toEqual({ current: 'v1' });
    expect(ssm.commandCalls(PutParameterCommand)).toHaveLength(0);
  });
});
