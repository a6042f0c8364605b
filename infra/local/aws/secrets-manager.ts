/**
 * Secrets Manager, done locally for the callback-token secret: a client whose GetSecretValue is answered in process
 * with the value the runtime keeps under DATA_DIR, so the functions read it as deployed (lib/aws/secrets.ts: on
 * first use, again after its cache period, through their roles) and the meter counts the calls a deploy would pay for.
 * The secret was never rotated here: it has no AWSPREVIOUS version.
 */
import { ResourceNotFoundException, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';

export function localSecretsManagerClient(region: string, secret: { arn: string; value: string }): SecretsManagerClient {
  const client = new SecretsManagerClient({ region, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
  client.middlewareStack.add(
    (_next, context) => async (args) => {
      const input = args.input as { SecretId?: string; VersionStage?: string };
      if (context.commandName !== 'GetSecretValueCommand') throw new Error(`the local Secrets Manager answers GetSecretValue only, not ${context.commandName}`);
      if (input.SecretId !== secret.arn || (input.VersionStage ?? 'AWSCURRENT') !== 'AWSCURRENT') {
        throw new ResourceNotFoundException({ message: `Secrets Manager can't find the specified secret value for staging label: ${input.VersionStage}`, $metadata: {} });
      }
      return { output: { ARN: secret.arn, SecretString: secret.value, VersionStages: ['AWSCURRENT'], $metadata: {} }, response: {} } as never;
    },
    { step: 'initialize', priority: 'low', name: 'localSecretsManager' },
  );
  return client;
}
