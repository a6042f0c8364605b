/** API keys on the wire: the body that creates one and the key as the API shows it. */
import { z } from 'zod';
import { parseScope, SCOPE_ACTIONS, type ApiKey, type NewApiKey } from '../domain/api-key.js';
import { instantSchema } from './fields.js';
import { isoOrNull } from './parse.js';

const isoWithOffset = z.iso.datetime({ offset: true, message: 'must be an ISO 8601 date-time with an offset' });

export const apiKeyInputSchema = z.strictObject({
  scopes: z
    .array(
      z.string().refine((text) => parseScope(text) !== undefined, {
        message: `must be admin, or ${SCOPE_ACTIONS.map((action) => `${action}:`).join(', ')} followed by a job type name or *`,
      }),
    )
    .min(1)
    .max(50),
  name: z
    .string()
    .min(1)
    .max(100)
    .regex(/^[^\p{Cc}]*$/u, 'must not contain control characters')
    .optional(),
  expires_at: isoWithOffset.optional(),
});

export type ApiKeyInput = z.output<typeof apiKeyInputSchema>;

/** The domain's request for a key from the body the API accepted. */
export function newApiKeyOf(input: ApiKeyInput): NewApiKey {
  return {
    scopes: input.scopes,
    ...(input.name !== undefined ? { name: input.name } : {}),
    ...(input.expires_at !== undefined ? { expiresAtMs: Date.parse(input.expires_at) } : {}),
  };
}

export const apiKeySchema = z
  .strictObject({
    id: z.string(),
    name: z.string().nullable(),
    scopes: z.array(z.string()),
    created_at: instantSchema,
    expires_at: instantSchema.nullable(),
    last_used_at: instantSchema.nullable(),
    revoked_at: instantSchema.nullable(),
  })
  .meta({ id: 'ApiKey' });

/** `POST /v1/keys`: the key with its secret, shown in this answer only. */
export const createdApiKeySchema = apiKeySchema.extend({ key: z.string() }).meta({ id: 'CreatedApiKey' });

export const apiKeyListSchema = z.strictObject({ keys: z.array(apiKeySchema) });

/** A key as the API shows it: never its secret or hash. */
export function apiKeyToApi(key: ApiKey): Record<string, unknown> {
  return {
    id: key.id,
    name: key.name,
    scopes: key.scopes,
    created_at: isoOrNull(key.createdAtMs),
    expires_at: isoOrNull(key.expiresAtMs),
    last_used_at: isoOrNull(key.lastUsedAtMs),
    revoked_at: isoOrNull(key.revokedAtMs),
  };
}
