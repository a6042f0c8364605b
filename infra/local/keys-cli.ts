/**
 * `npm run keys -- <command>`: manages API keys straight in a table, which is
 * how the first admin key of a deployment is made (every key route needs one).
 * The table is TABLE_NAME, reached through DYNAMODB_ENDPOINT when set, else
 * through AWS credentials from the environment.
 */
import { parseArgs } from 'node:util';
import { ResourceNotFoundException } from '@aws-sdk/client-dynamodb';
import { apiKeyInputSchema, apiKeyToApi, newApiKeyOf } from '../../lib/wire/api-keys.js';
import { createApiKey, listApiKeys, revokeApiKey } from '../../lib/queue/catalog/api-keys.js';
import { KEY_ID_PATTERN } from '../../lib/domain/api-key.js';
import { createQueueContext, type QueueContext } from '../../lib/queue/context.js';
import { readQueueSettings, type Env } from '../../lib/queue/settings.js';
import { createDynamoClients } from '../../lib/store/client.js';
import { ValidationError } from '../../lib/domain/errors.js';
import { parseWith } from '../../lib/wire/parse.js';

export const KEYS_USAGE = `usage: npm run keys -- <command>
  create --scope <scope> [--scope <scope>...] [--name <text>] [--expires-at <ISO 8601 with offset>]
  list
  revoke <key id>
scopes: admin, enqueue:<type|*>, read:<type|*>, callback:<type|*>
environment: TABLE_NAME (required), DYNAMODB_ENDPOINT (optional, e.g. DynamoDB Local)`;

export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** Runs one command and returns what it prints: JSON, so scripts can read the new key with jq. */
export async function runKeysCommand(ctx: QueueContext, args: string[]): Promise<string> {
  const [command, ...rest] = args;
  switch (command) {
    case 'create': {
      const { values, positionals } = parseArgs({
        args: rest,
        options: { scope: { type: 'string', multiple: true }, name: { type: 'string' }, 'expires-at': { type: 'string' } },
        strict: true,
        allowPositionals: true,
      });
      if (positionals.length > 0) throw new UsageError(`unexpected argument "${positionals[0]}"`);
      const input = parseWith(apiKeyInputSchema, {
        scopes: values.scope ?? [],
        ...(values.name !== undefined ? { name: values.name } : {}),
        ...(values['expires-at'] !== undefined ? { expires_at: values['expires-at'] } : {}),
      });
      const { key, presented } = await createApiKey(ctx, newApiKeyOf(input));
      return JSON.stringify({ ...apiKeyToApi(key), key: presented }, null, 2);
    }
    case 'list':
      if (rest.length > 0) throw new UsageError('list takes no arguments');
      return JSON.stringify({ keys: (await listApiKeys(ctx)).map(apiKeyToApi) }, null, 2);
    case 'revoke': {
      const id = rest[0];
      if (rest.length !== 1 || !id || !KEY_ID_PATTERN.test(id)) throw new UsageError('revoke takes one key id (16 hex digits)');
      return JSON.stringify(apiKeyToApi(await revokeApiKey(ctx, id)), null, 2);
    }
    default:
      throw new UsageError(command ? `unknown command "${command}"` : 'no command given');
  }
}

/** Validation and usage errors become one line naming what to fix; the process exits 2 for usage, 1 otherwise. */
export async function main(args: string[], env: Env): Promise<number> {
  let clients;
  try {
    const settings = readQueueSettings(env);
    clients = createDynamoClients(env.DYNAMODB_ENDPOINT ? { endpoint: env.DYNAMODB_ENDPOINT } : {});
    console.log(await runKeysCommand(createQueueContext(clients.db, settings), args));
    return 0;
  } catch (error) {
    if (error instanceof UsageError || (error instanceof TypeError && 'code' in error)) {
      console.error(`${error.message}\n\n${KEYS_USAGE}`);
      return 2;
    }
    if (error instanceof ValidationError) {
      console.error(error.details.map((detail) => `${detail.field}: ${detail.message}`).join('\n'));
      return 2;
    }
    if (error instanceof ResourceNotFoundException) {
      console.error(`table "${env.TABLE_NAME}" does not exist (TABLE_NAME, DYNAMODB_ENDPOINT)`);
      return 1;
    }
    console.error(error instanceof Error ? error.message : String(error));
    return 1;
  } finally {
    clients?.base.destroy();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  process.exitCode = await main(process.argv.slice(2), process.env);
}
