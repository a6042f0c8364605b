/**
 * API keys: random secrets with scopes, stored only as a hash under `KEY#<id>`
 * (see domain/api-key.ts for what a presented key is and why a fast hash is safe).
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { parsePresentedKey, type ApiKey, type NewApiKey, type Scope } from '../../domain/api-key.js';
import { NotFoundError, ValidationError } from '../../domain/errors.js';
import { putApiKeyParams, revokeApiKeyParams, touchApiKeyParams } from '../../store/catalog.js';
import { API_KEYS_PARTITION, apiKeyKey, purgeAtS } from '../../store/keys.js';
import { listIndexedItems } from '../../store/listing.js';
import { getItem, putItem, updateItem, type Item } from '../../store/send.js';
import type { QueueContext } from '../context.js';
import { ownEntry } from '../../domain/own.js';

const secretHash = (secret: string): Buffer => createHash('sha256').update(secret).digest();
/** Last-used times are kept to this resolution, so a busy key costs one write a minute, not one per request. */
export const LAST_USED_RESOLUTION_MS = 60_000;

const STORED_KEY_ATTRIBUTES = ['id', 'name', 'scopes', 'createdAtMs', 'expiresAtMs', 'revokedAtMs', 'lastUsedAtMs'] as const;

/** Copies only the key's public attributes, so the hash never leaves this module. */
function itemToApiKey(item: Item): ApiKey {
  const present = STORED_KEY_ATTRIBUTES.flatMap((name) => {
    const value = ownEntry(item, name);
    return value === undefined ? [] : [[name, value] as const];
  });
  return Object.fromEntries(present) as unknown as ApiKey;
}

/** Keys may live this long at most when they expire at all. */
const MAX_KEY_LIFETIME_MS = 10 * 366 * 24 * 3600 * 1000;

/** Creates a key; the returned `presented` key is the only time its secret exists outside the caller. */
export async function createApiKey(ctx: QueueContext, input: NewApiKey): Promise<{ key: ApiKey; presented: string }> {
  const nowMs = ctx.nowMs();
  const { expiresAtMs } = input;
  if (expiresAtMs !== undefined && (expiresAtMs <= nowMs || expiresAtMs > nowMs + MAX_KEY_LIFETIME_MS)) {
    throw new ValidationError([{ field: 'expires_at', message: 'must be in the future and within 10 years' }]);
  }
  const id = randomBytes(8).toString('hex');
  const secret = randomBytes(32).toString('base64url');
  const key: ApiKey = {
    id,
    name: input.name ?? null,
    scopes: [...new Set(input.scopes)] as Scope[],
    createdAtMs: nowMs,
    ...(expiresAtMs !== undefined ? { expiresAtMs } : {}),
  };
  await putItem(ctx, putApiKeyParams(id, { ...key }, secretHash(secret).toString('hex')));
  return { key, presented: `djq_${id}_${secret}` };
}

export type KeyRefusal = 'malformed' | 'unknown' | 'wrong_secret' | 'revoked' | 'expired';

export type KeyVerification = { ok: true; key: ApiKey } | { ok: false; reason: KeyRefusal; keyId?: string };

/**
 * Checks a presented key: it must exist, match its hash, be neither revoked nor
 * expired. Records when it was last used, at most once per LAST_USED_RESOLUTION_MS.
 */
export async function verifyApiKey(ctx: QueueContext, presented: string): Promise<KeyVerification> {
  const parsed = parsePresentedKey(presented);
  if (!parsed) return { ok: false, reason: 'malformed' };
  const Item = await getItem(ctx, apiKeyKey(parsed.id), { consistentRead: true });
  const keyId = parsed.id;
  if (!Item || typeof Item.secretHash !== 'string') return { ok: false, reason: 'unknown', keyId };
  const stored = Buffer.from(Item.secretHash, 'hex');
  const presentedHash = secretHash(parsed.secret);
  if (stored.length !== presentedHash.length || !timingSafeEqual(stored, presentedHash)) {
    return { ok: false, reason: 'wrong_secret', keyId };
  }
  const key = itemToApiKey(Item);
  const nowMs = ctx.nowMs();
  if (key.revokedAtMs !== undefined) return { ok: false, reason: 'revoked', keyId };
  if (key.expiresAtMs !== undefined && key.expiresAtMs <= nowMs) return { ok: false, reason: 'expired', keyId };
  if (key.lastUsedAtMs === undefined || nowMs - key.lastUsedAtMs >= LAST_USED_RESOLUTION_MS) {
    // Conditional, so concurrent requests of one key write once; the loser's write is simply not needed.
    await updateItem(ctx, touchApiKeyParams(keyId, nowMs, nowMs - LAST_USED_RESOLUTION_MS));
    key.lastUsedAtMs = nowMs;
  }
  return { ok: true, key };
}

/** Revokes a key at once (the authorizer's cache may admit it for up to its TTL); revoking again changes nothing. */
export async function revokeApiKey(ctx: QueueContext, id: string): Promise<ApiKey> {
  const nowMs = ctx.nowMs();
  const result = await updateItem(ctx, revokeApiKeyParams(id, nowMs, purgeAtS(nowMs, ctx.settings.retentionDays)));
  if (!result.ok) throw new NotFoundError(`key "${id}" does not exist`);
  return itemToApiKey(result.item ?? {});
}

/** Every key, revoked ones included until DynamoDB TTL removes them, oldest first. */
export async function listApiKeys(ctx: QueueContext): Promise<ApiKey[]> {
  const keys = (await listIndexedItems(ctx, API_KEYS_PARTITION, apiKeyKey)).map(itemToApiKey);
  return keys.sort((a, b) => a.createdAtMs - b.createdAtMs || a.id.localeCompare(b.id));
}
