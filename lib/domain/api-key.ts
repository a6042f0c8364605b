/**
 * API keys: random secrets with scopes, stored only as a hash under `KEY#<id>`
 * and listed through the due index's `KEYS` partition (never a scan).
 *
 * A presented key is `djq_<id>_<secret>`: the id finds the item, the secret is
 * checked against its SHA-256 in constant time. The secret carries 256 random
 * bits, so a fast hash is as safe as a slow one here: nothing can be guessed.
 */
import { JOB_TYPE_NAME_PATTERN } from './job-type.js';

export const SCOPE_ACTIONS = ['enqueue', 'read', 'callback', 'schedule'] as const;
export type ScopeAction = (typeof SCOPE_ACTIONS)[number];
/**
 * `admin` covers job types, keys and every job; the others cover one job type, or every type with `*`:
 * `schedule:<type>` manages the schedules that make jobs of that type.
 */
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

/** What a new key is asked for: its scopes, a name to tell it by, and when it stops working, if ever. */
export interface NewApiKey {
  scopes: readonly string[];
  name?: string | undefined;
  expiresAtMs?: number | undefined;
}

export interface ApiKey {
  id: string;
  name: string | null;
  scopes: Scope[];
  createdAtMs: number;
  expiresAtMs?: number;
  revokedAtMs?: number;
  lastUsedAtMs?: number;
}

