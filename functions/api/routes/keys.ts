/** `/v1/keys`: create, list and revoke API keys. */
import { apiKeyInputSchema, apiKeyToApi, newApiKeyOf } from '../../../lib/wire/api-keys.js';
import { createApiKey, listApiKeys, revokeApiKey } from '../../../lib/queue/catalog/api-keys.js';
import { KEY_ID_PATTERN } from '../../../lib/domain/api-key.js';
import { parseWith } from '../../../lib/wire/parse.js';
import { json } from '../../shared/http.js';
import { parseJsonBody, pathParam } from '../http.js';
import type { ApiDeps, Route } from './route.js';

export function keyRoutes({ ctx }: ApiDeps) {
  return {
    createKey: async (event) => {
      const { key, presented } = await createApiKey(ctx, newApiKeyOf(parseWith(apiKeyInputSchema, parseJsonBody(event))));
      return json(201, { ...apiKeyToApi(key), key: presented });
    },
    listKeys: async () => json(200, { keys: (await listApiKeys(ctx)).map(apiKeyToApi) }),
    revokeKey: async (event) => json(200, apiKeyToApi(await revokeApiKey(ctx, pathParam(event, 'id', KEY_ID_PATTERN)))),
  } satisfies Record<string, Route>;
}
