/**
 * Secrets read where they are kept, at run time, rather than baked into a
 * function's configuration, where they would be readable by anyone who may
 * read that configuration and would change only when the function is
 * redeployed. A rotation then reaches every function within the cache period,
 * and a function verifying what another signed accepts the previous version
 * too, so nothing signed just before a rotation is refused.
 *
 * Deployed, the secret is a SecureString parameter of Parameter Store's standard tier: free, where a Secrets
 * Manager secret is billed by the month. Each `put-parameter --overwrite` is a new version; the one before it is
 * the previous value.
 */
import { randomBytes } from 'node:crypto';
import { GetParameterCommand, ParameterAlreadyExists, ParameterNotFound, ParameterVersionNotFound, PutParameterCommand, type SSMClient } from '@aws-sdk/client-ssm';

export interface SecretVersions {
  /** Sign with this. */
  current: string;
  /** Also accept this: the value before the last rotation, if the secret was ever rotated. */
  previous?: string;
}

export interface SecretSource {
  versions(): Promise<SecretVersions>;
}

/** A secret that never changes while the process runs: the local runtime's, kept in a file. */
export function fixedSecret(value: string): SecretSource {
  const versions = { current: value };
  return { versions: async () => versions };
}

/** How long a function uses what it read before it reads the secret again. */
export const SECRET_CACHE_MS = 5 * 60_000;

/** A new secret's value: 256 random bits. */
export const newSecretValue = (): string => randomBytes(32).toString('base64url');

/** The parameter does not exist yet and this reader may not create it: nothing was ever signed with it. */
export class SecretNotCreatedError extends Error {
  override readonly name = 'SecretNotCreatedError';
}

export interface ParameterSecretOptions {
  /**
   * Creates the parameter with a new random value when it does not exist yet, as its first signer does (the
   * stack cannot: CloudFormation makes no SecureString parameter). Without, a missing parameter is
   * SecretNotCreatedError, and is read again at the next call.
   */
  createIfMissing?: boolean;
  /** @default Date.now */
  nowMs?: () => number;
}

/**
 * The SecureString parameter `name` in Parameter Store, decrypted (the AWS managed key aws/ssm lets every principal
 * of the account that may read the parameter decrypt it), read on first use (a cold start) and again once
 * `SECRET_CACHE_MS` has passed: its latest version, and the one before it while the latest is unchanged. If a
 * refresh fails, the value already read keeps serving: a passing outage must not refuse every callback.
 */
export function parameterStoreSecret(client: SSMClient, name: string, options: ParameterSecretOptions = {}): SecretSource {
  const nowMs = options.nowMs ?? Date.now;
  let cached: { versions: SecretVersions; version: number; readAtMs: number } | undefined;
  let reading: Promise<SecretVersions> | undefined;

  const get = async (selector: string): Promise<{ value: string; version: number }> => {
    const { Parameter } = await client.send(new GetParameterCommand({ Name: selector, WithDecryption: true }));
    if (!Parameter?.Value || Parameter.Version === undefined) throw new Error(`parameter ${name} has no value`);
    return { value: Parameter.Value, version: Parameter.Version };
  };

  const latest = async (): Promise<{ value: string; version: number }> => {
    try {
      return await get(name);
    } catch (error) {
      if (!(error instanceof ParameterNotFound)) throw error;
      if (!options.createIfMissing) throw new SecretNotCreatedError(`parameter ${name} does not exist yet`);
    }
    try {
      await client.send(new PutParameterCommand({ Name: name, Value: newSecretValue(), Type: 'SecureString', Tier: 'Standard', Overwrite: false }));
    } catch (error) {
      // Another function's first use created it first: read theirs.
      if (!(error instanceof ParameterAlreadyExists)) throw error;
    }
    return get(name);
  };

  const previousOf = async (version: number): Promise<string | undefined> => {
    if (version <= 1) return undefined;
    if (cached && cached.version === version) return cached.versions.previous;
    try {
      return (await get(`${name}:${version - 1}`)).value;
    } catch (error) {
      // Parameter Store keeps the latest 100 versions.
      if (error instanceof ParameterVersionNotFound) return undefined;
      throw error;
    }
  };

  const read = async (): Promise<SecretVersions> => {
    const { value: current, version } = await latest();
    const previous = await previousOf(version);
    const versions = previous ? { current, previous } : { current };
    cached = { versions, version, readAtMs: nowMs() };
    return versions;
  };

  return {
    async versions() {
      if (cached && nowMs() - cached.readAtMs < SECRET_CACHE_MS) return cached.versions;
      reading ??= read().finally(() => (reading = undefined));
      if (!cached) return reading;
      const stale = cached.versions;
      return reading.catch(() => stale);
    },
  };
}
