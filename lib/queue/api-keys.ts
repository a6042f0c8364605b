/**
 * API keys: random secrets with scopes, stored only as a hash under `KEY#<id>`
 * and listed through the due index's `KEYS` partition (never a scan).
 *
 * A presented key is `djq_<id>_<secret>`: the id finds the item, the secret is
 * checked against its SHA-256 in constant time. The secret carries 256 random
 * bits, so a fast hash is as safe as a slow one here: nothing can be guessed.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { z } from 'zod';
import type { QueueContext } from './context.js';
import { NotFoundError } from '../domain/errors.js';
import { ValidationError } from '../domain/errors.js';
import { API_KEYS_PARTITION, apiKeyKey } from '../store/keys.js';
import { listIndexedItems } from '../store/listing.js';
import { JOB_TYPE_NAME_PATTERN } from '../domain/model.js';

export const SCOPE_ACTIONS = ['enqueue', 'read', 'callback'] as const;
export type ScopeAction = (typeof SCOPE_ACTIONS)[number];
/** `admin` covers job types, keys and every job; the others cover one job type, or every type with `*`. */
export type Scope = 'admin' | `${ScopeAction}:${string}`;

const TYPED_SCOPE_PATTERN = new RegExp(`^(?:${SCOPE_ACTIONS.join('|')}):(?:\\*|${JOB_TYPE_NAME_PATTERN.source.slice(1, -1)})$`);

export function parseScope(text: string): Scope | undefined {
  return text === 'admin' || TYPED_SCOPE_PATTERN.test(text) ? (text as Scope) : undefined;
}

/** Whether `scopes` let a caller `action` jobs of `type`: admin, `<action>:*` or `<action>:<type>`. */
export function scopeAllows(scopes: readonly string[], action: ScopeAction, type: string): boolean {
  return scopes.includes('admin') || scopes.includes(`${action}:*`) || scopes.includes(`${action}:${type}`);
}

export const KEY_ID_PATTERN = /^[0-9a-f]{16}$/;
const PRESENTED_KEY_PATTERN = /^djq_([0-9a-f]{16})_([A-Za-z0-9_-]{43})$/;

/** Splits a presented key into its lookup id and its secret; anything else is not a key. */
export function parsePresentedKey(text: string): { id: string; secret: string } | undefined {
  const match = PRESENTED_KEY_PATTERN.exec(text);
  return match ? { id: match[1]!, secret: match[2]! } : undefined;
}

const secretHash = (secret: string): Buffer => createHash('sha256').update(secret).digest();

export interface ApiKey {
  id: string;
  name: string | null;
  scopes: Scope[];
  createdAtMs: number;
  expiresAtMs?: number;
  revokedAtMs?: number;
  lastUsedAtMs?: number;
}

/** Last-used times are kept to this resolution, so a busy key costs one write a minute, not one per request. */
export const LAST_USED_RESOLUTION_MS = 60_000;

const STORED_KEY_ATTRIBUTES = ['id', 'name', 'scopes', 'createdAtMs', 'expiresAtMs', 'revokedAtMs', 'lastUsedAtMs'] as const;

/** Copies only the key's public attributes, so the hash never leaves this module. */
function itemToApiKey(item: Record<string, unknown>): ApiKey {
  const present = STORED_KEY_ATTRIBUTES.filter((name) => item[name] !== undefined);
  return Object.fromEntries(present.map((name) => [name, item[name]])) as unknown as ApiKey;
}

const isoWithOffset = z.iso.datetime({ offset: true, message: 'must be an ISO 8601 date-time with an offset' });

export const apiKeyInputSchema = z.strictObject({
  scopes: z
    .array(
      z.string().refine((text) => parseScope(text) !== undefined, {
        message: 'must be admin, or enqueue:, read: or callback: followed by a job type name or *',
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

/** Keys may live this long at most when they expire at all. */
const MAX_KEY_LIFETIME_MS = 10 * 366 * 24 * 3600 * 1000;

/** Creates a key; the returned `presented` key is the only time its secret exists outside the caller. */
export async function createApiKey(ctx: QueueContext, input: ApiKeyInput): Promise<{ key: ApiKey; presented: string }> {
  const nowMs = ctx.nowMs();
  const expiresAtMs = input.expires_at === undefined ? undefined : Date.parse(input.expires_at);
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
  await ctx.db.send(
    new PutCommand({
      TableName: ctx.settings.tableName,
      Item: { ...apiKeyKey(id), gsi1pk: API_KEYS_PARTITION, gsi1sk: id, ...key, secretHash: secretHash(secret).toString('hex') },
      ConditionExpression: 'attribute_not_exists(pk)',
    }),
  );
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
  const { Item } = await ctx.db.send(
    new GetCommand({ TableName: ctx.settings.tableName, Key: apiKeyKey(parsed.id), ConsistentRead: true }),
  );
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
    await touchLastUsed(ctx, keyId, nowMs);
    key.lastUsedAtMs = nowMs;
  }
  return { ok: true, key };
}

/** Conditional, so concurrent requests of one key write once; the loser's write is simply not needed. */
async function touchLastUsed(ctx: QueueContext, id: string, nowMs: number): Promise<void> {
  try {
    await ctx.db.send(
      new UpdateCommand({
        TableName: ctx.settings.tableName,
        Key: apiKeyKey(id),
        UpdateExpression: 'SET lastUsedAtMs = :now',
        ConditionExpression: 'attribute_exists(pk) AND (attribute_not_exists(lastUsedAtMs) OR lastUsedAtMs <= :stale)',
        ExpressionAttributeValues: { ':now': nowMs, ':stale': nowMs - LAST_USED_RESOLUTION_MS },
      }),
    );
  } catch (error) {
    if (!(error instanceof ConditionalCheckFailedException)) throw error;
  }
}

/** Revokes a key at once (the authorizer's cache may admit it for up to its TTL); revoking again changes nothing. */
export async function revokeApiKey(ctx: QueueContext, id: string): Promise<ApiKey> {
  const nowMs = ctx.nowMs();
  try {
    const { Attributes } = await ctx.db.send(
      new UpdateCommand({
        TableName: ctx.settings.tableName,
        Key: apiKeyKey(id),
        UpdateExpression: 'SET revokedAtMs = if_not_exists(revokedAtMs, :now), purgeAtS = if_not_exists(purgeAtS, :purgeAtS)',
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeValues: {
          ':now': nowMs,
          ':purgeAtS': Math.floor(nowMs / 1000) + ctx.settings.retentionDays * 86_400,
        },
        ReturnValues: 'ALL_NEW',
      }),
    );
    return itemToApiKey(Attributes ?? {});
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException) throw new NotFoundError(`key "${id}" does not exist`);
    throw error;
  }
}

/** Every key, revoked ones included until DynamoDB TTL removes them, oldest first. */
export async function listApiKeys(ctx: QueueContext): Promise<ApiKey[]> {
  const keys = (await listIndexedItems(ctx, API_KEYS_PARTITION, apiKeyKey)).map(itemToApiKey);
  return keys.sort((a, b) => a.createdAtMs - b.createdAtMs || a.id.localeCompare(b.id));
}

const iso = (epochMs: number | undefined): string | null => (epochMs === undefined ? null : new Date(epochMs).toISOString());

/** A key as the API shows it: never its secret or hash. */
export function apiKeyToApi(key: ApiKey): Record<string, unknown> {
  return {
    id: key.id,
    name: key.name,
    scopes: key.scopes,
    created_at: iso(key.createdAtMs),
    expires_at: iso(key.expiresAtMs),
    last_used_at: iso(key.lastUsedAtMs),
    revoked_at: iso(key.revokedAtMs),
  };
}
