/** Scopes and presented keys: what a key may do, and what counts as a key at all. */
import { describe, expect, test } from 'vitest';
import { apiKeyInputSchema } from '../../../../lib/wire/api-keys.js';
import { parsePresentedKey, parseScope, scopeAllows } from '../../../../lib/domain/api-key.js';

describe('parseScope', () => {
  test.each(['admin', 'enqueue:emails', 'read:*', 'callback:send.email-v2', 'enqueue:A_1'])('accepts %s', (scope) => {
    expect(parseScope(scope)).toBe(scope);
  });

  test.each([
    ['an unknown action', 'write:emails'],
    ['an action without a type', 'enqueue'],
    ['an empty type', 'read:'],
    ['a type with a slash', 'read:a/b'],
    ['a partial wildcard', 'read:email*'],
    ['admin with a type', 'admin:emails'],
    ['an upper-case action', 'READ:emails'],
    ['surrounding space', ' admin'],
    ['a type over 64 characters', `read:${'a'.repeat(65)}`],
  ])('refuses %s', (_, scope) => {
    expect(parseScope(scope)).toBeUndefined();
  });
});

describe('scopeAllows', () => {
  test('admin allows every action on every type', () => {
    expect(scopeAllows(['admin'], 'enqueue', 'emails')).toBe(true);
    expect(scopeAllows(['admin'], 'callback', 'anything')).toBe(true);
  });

  test('a typed scope allows its action on its type only', () => {
    expect(scopeAllows(['enqueue:emails'], 'enqueue', 'emails')).toBe(true);
    expect(scopeAllows(['enqueue:emails'], 'enqueue', 'invoices')).toBe(false);
    expect(scopeAllows(['enqueue:emails'], 'read', 'emails')).toBe(false);
  });

  test('a wildcard allows its action on every type and no other action', () => {
    expect(scopeAllows(['read:*'], 'read', 'invoices')).toBe(true);
    expect(scopeAllows(['read:*'], 'enqueue', 'invoices')).toBe(false);
  });

  test('a type named like a prefix of another grants nothing on the longer one', () => {
    expect(scopeAllows(['read:email'], 'read', 'emails')).toBe(false);
  });

  test('no scopes allow nothing', () => {
    expect(scopeAllows([], 'read', 'emails')).toBe(false);
  });
});

describe('parsePresentedKey', () => {
  const secret = 'A'.repeat(21) + '_-' + 'z'.repeat(20);

  test('splits djq_<id>_<secret> into id and secret, even when the secret holds underscores', () => {
    expect(parsePresentedKey(`djq_0123456789abcdef_${secret}`)).toEqual({ id: '0123456789abcdef', secret });
  });

  test.each([
    ['another prefix', `abc_0123456789abcdef_${secret}`],
    ['an id with upper-case hex', `djq_0123456789ABCDEF_${secret}`],
    ['a short id', `djq_0123456789abcde_${secret}`],
    ['a short secret', `djq_0123456789abcdef_${secret.slice(1)}`],
    ['a long secret', `djq_0123456789abcdef_${secret}x`],
    ['a secret outside base64url', `djq_0123456789abcdef_${secret.slice(1)}+`],
    ['trailing space', `djq_0123456789abcdef_${secret} `],
    ['an empty string', ''],
  ])('refuses %s', (_, text) => {
    expect(parsePresentedKey(text)).toBeUndefined();
  });
});

describe('the key creation body', () => {
  test('names each scope that is not one', () => {
    const result = apiKeyInputSchema.safeParse({ scopes: ['admin', 'write:x'] });
    expect(result.success).toBe(false);
    expect(result.error?.issues.map((issue) => issue.path.join('.'))).toEqual(['scopes.1']);
  });

  test('needs at least one scope', () => {
    expect(apiKeyInputSchema.safeParse({ scopes: [] }).success).toBe(false);
  });

  test('refuses a name with control characters', () => {
    expect(apiKeyInputSchema.safeParse({ scopes: ['admin'], name: 'a\nb' }).success).toBe(false);
  });

  test('refuses an expiry without an offset', () => {
    expect(apiKeyInputSchema.safeParse({ scopes: ['admin'], expires_at: '2030-01-01T00:00:00' }).success).toBe(false);
  });
});
