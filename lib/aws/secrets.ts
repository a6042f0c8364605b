/**
 * Secrets read where they are kept, at run time, rather than baked into a
 * function's configuration, where they would be readable by anyone who may
 * read that configuration and would change only when the function is
 * redeployed. A rotation then reaches every function within the cache period,
 * and a function verifying what another signed accepts the previous version
 * too, so nothing signed just before a rotation is refused.
 */
import { GetSecretValueCommand, ResourceNotFoundException, type SecretsManagerClient } from '@aws-sdk/client-secrets-manager';

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

/**
 * The secret `secretId` in Secrets Manager, read on first use (a cold start)
 * and again once `SECRET_CACHE_MS` has passed. If a refresh fails, the value
 * already read keeps serving: a passing outage must not refuse every callback.
 */
export function secretsManagerSecret(client: SecretsManagerClient, secretId: string, nowMs: () => number = Date.now): SecretSource {
  let cached: { versions: SecretVersions; readAtMs: number } | undefined;
  let reading: Promise<SecretVersions> | undefined;

  const readStage = async (stage: 'AWSCURRENT' | 'AWSPREVIOUS'): Promise<string | undefined> => {
    try {
      const { SecretString } = await client.send(new GetSecretValueCommand({ SecretId: secretId, VersionStage: stage }));
      return SecretString;
    } catch (error) {
      // A secret never rotated has no previous version.
      if (stage === 'AWSPREVIOUS' && error instanceof ResourceNotFoundException) return undefined;
      throw error;
    }
  };

  const read = async (): Promise<SecretVersions> => {
    const [current, previous] = await Promise.all([readStage('AWSCURRENT'), readStage('AWSPREVIOUS')]);
    if (!current) throw new Error(`secret ${secretId} has no string value`);
    const versions = previous ? { current, previous } : { current };
    cached = { versions, readAtMs: nowMs() };
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
