/**
 * Parameter Store, done locally for the callback-token parameter: a client whose GetParameter and PutParameter are
 * answered in process, so the functions read the key as deployed (lib/aws/secrets.ts: on first use, again after
 * its cache period, through their roles) and the meter counts their calls. The parameter holds the value the
 * runtime keeps under DATA_DIR, as version 1, as though the worker had created it on an earlier start: it was never
 * rotated here. A PutParameter is answered as AWS answers it, a new version when it may overwrite, else
 * ParameterAlreadyExists; nothing it writes outlives the process.
 */
import { ParameterAlreadyExists, ParameterNotFound, ParameterVersionNotFound, SSMClient } from '@aws-sdk/client-ssm';

export interface LocalParameterStore {
  /** A client of this one store, for one function (each is checked against its own role and metered as its own). */
  client(): SSMClient;
}

export function createLocalParameterStore(region: string, parameter: { name: string; value: string }): LocalParameterStore {
  const versions = new Map<string, string[]>([[parameter.name, [parameter.value]]]);
  return { client: () => localParameterStoreClient(region, versions) };
}

function localParameterStoreClient(region: string, versions: Map<string, string[]>): SSMClient {
  const client = new SSMClient({ region, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
  const answer = (output: Record<string, unknown>) => ({ output: { ...output, $metadata: {} }, response: {} }) as never;
  client.middlewareStack.add(
    (_next, context) => async (args) => {
      const input = args.input as { Name?: string; Value?: string; Overwrite?: boolean };
      const [, name = '', selector] = /^(.*?)(?::(\d+))?$/.exec(input.Name ?? '') ?? [];
      const held = versions.get(name);
      switch (context.commandName) {
        case 'GetParameterCommand': {
          if (!held) throw new ParameterNotFound({ message: `parameter ${name} not found`, $metadata: {} });
          const version = selector === undefined ? held.length : Number(selector);
          const value = held[version - 1];
          if (value === undefined) throw new ParameterVersionNotFound({ message: `version ${version} of ${name} not found`, $metadata: {} });
          return answer({ Parameter: { Name: name, Type: 'SecureString', Value: value, Version: version } });
        }
        case 'PutParameterCommand': {
          if (held && !input.Overwrite) throw new ParameterAlreadyExists({ message: `parameter ${name} already exists`, $metadata: {} });
          const next = [...(held ?? []), String(input.Value)];
          versions.set(name, next);
          return answer({ Version: next.length, Tier: 'Standard' });
        }
        default:
          throw new Error(`the local Parameter Store answers GetParameter and PutParameter only, not ${context.commandName}`);
      }
    },
    { step: 'initialize', priority: 'low', name: 'localParameterStore' },
  );
  return client;
}
