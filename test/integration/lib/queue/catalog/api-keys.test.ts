/** The key store on DynamoDB Local: secrets shown once and kept only as hashes, revocation, expiry, last use. */
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import { createApiKey, LAST_USED_RESOLUTION_MS, listApiKeys, revokeApiKey, verifyApiKey } from '../../../../../lib/queue/catalog/api-keys.js';
import { NotFoundError } from '../../../../../lib/domain/errors.js';
import { ValidationError } from '../../../../../lib/domain/errors.js';
import { putJobType } from '../../../../../lib/queue/catalog/job-types.js';
import { apiKeyKey } from '../../../../../lib/store/keys.js';
import { parseJobTypeDefinition } from '../../../../../lib/wire/job-types.js';
import { itemsWithPk, tableItems } from '../../../../support/api.js';
import { createTestQueue, type TestQueue } from '../../../../support/queue.js';

let queue: TestQueue;
beforeEach(async () => {
  queue = await createTestQueue();
});
afterEach(async () => {
  await queue.drop();
});

const storedKey = async (id: string) => (await itemsWithPk(queue, apiKeyKey(id).pk))[0]!;

describe('creating a key', () => {
  test('returns a presented key that verifies, with its scopes', async () => {
    const { key, presented } = await createApiKey(queue.ctx, { scopes: ['enqueue:emails', 'read:*'] });
    expect(presented).toMatch(new RegExp(`^djq_${key.id}_[A-Za-z0-9_-]{43}$`));
    const verification = await verifyApiKey(queue.ctx, presented);
    expect(verification).toMatchObject({ ok: true, key: { id: key.id, scopes: ['enqueue:emails', 'read:*'] } });
  });

  test('stores the SHA-256 of the secret and never the secret', async () => {
    const { key, presented } = await createApiKey(queue.ctx, { scopes: ['admin'] });
    const secret = presented.slice(`djq_${key.id}_`.length);
    const item = await storedKey(key.id);
    expect(item.secretHash).toMatch(/^[0-9a-f]{64}$/);
    expect(JSON.stringify(await tableItems(queue))).not.toContain(secret);
  });

  test('two keys never share an id or a secret', async () => {
    const first = await createApiKey(queue.ctx, { scopes: ['admin'] });
    const second = await createApiKey(queue.ctx, { scopes: ['admin'] });
    expect(first.key.id).not.toBe(second.key.id);
    expect(first.presented).not.toBe(second.presented);
  });

  test('an expiry in the past is refused, naming expires_at', async () => {
    const past = queue.clock.nowMs() - 1000;
    await expect(createApiKey(queue.ctx, { scopes: ['admin'], expiresAtMs: past })).rejects.toThrow(ValidationError);
    expect(await tableItems(queue)).toEqual([]);
  });
});

describe('verifying a key', () => {
  test('a wrong secret for an existing id is refused as wrong_secret', async () => {
    const { key } = await createApiKey(queue.ctx, { scopes: ['admin'] });
    const forged = `djq_${key.id}_${'A'.repeat(43)}`;
    expect(await verifyApiKey(queue.ctx, forged)).toEqual({ ok: false, reason: 'wrong_secret', keyId: key.id });
  });

  test('an id that does not exist is refused as unknown', async () => {
    expect(await verifyApiKey(queue.ctx, `djq_0000000000000000_${'A'.repeat(43)}`)).toMatchObject({ ok: false, reason: 'unknown' });
  });

  test('text that is not a key is refused as malformed without reading the table', async () => {
    expect(await verifyApiKey(queue.ctx, 'hunter2')).toEqual({ ok: false, reason: 'malformed' });
  });

  test('a key is refused from its expiry on', async () => {
    const expiresAtMs = queue.clock.nowMs() + 60_000;
    const { presented } = await createApiKey(queue.ctx, { scopes: ['admin'], expiresAtMs });
    queue.clock.advance(59_999);
    expect((await verifyApiKey(queue.ctx, presented)).ok).toBe(true);
    queue.clock.advance(1);
    expect(await verifyApiKey(queue.ctx, presented)).toMatchObject({ ok: false, reason: 'expired' });
  });
});

describe('last use', () => {
  test('is recorded on first use', async () => {
    const { key, presented } = await createApiKey(queue.ctx, { scopes: ['admin'] });
    queue.clock.advance(5_000);
    await verifyApiKey(queue.ctx, presented);
    expect((await storedKey(key.id)).lastUsedAtMs).toBe(queue.clock.nowMs());
  });

  test('is written at most once per resolution interval, however often the key is used', async () => {
    const { key, presented } = await createApiKey(queue.ctx, { scopes: ['admin'] });
    await verifyApiKey(queue.ctx, presented);
    const firstUseMs = queue.clock.nowMs();
    queue.clock.advance(LAST_USED_RESOLUTION_MS - 1);
    await verifyApiKey(queue.ctx, presented);
    expect((await storedKey(key.id)).lastUsedAtMs).toBe(firstUseMs);
    queue.clock.advance(1);
    await verifyApiKey(queue.ctx, presented);
    expect((await storedKey(key.id)).lastUsedAtMs).toBe(firstUseMs + LAST_USED_RESOLUTION_MS);
  });
});

describe('revoking a key', () => {
  test('makes it refused as revoked', async () => {
    const { key, presented } = await createApiKey(queue.ctx, { scopes: ['admin'] });
    await revokeApiKey(queue.ctx, key.id);
    expect(await verifyApiKey(queue.ctx, presented)).toMatchObject({ ok: false, reason: 'revoked' });
  });

  test('again keeps the first revocation time', async () => {
    const { key } = await createApiKey(queue.ctx, { scopes: ['admin'] });
    const first = await revokeApiKey(queue.ctx, key.id);
    queue.clock.advance(10_000);
    expect((await revokeApiKey(queue.ctx, key.id)).revokedAtMs).toBe(first.revokedAtMs);
  });

  test('sets a TTL so DynamoDB removes it after the retention period', async () => {
    const { key } = await createApiKey(queue.ctx, { scopes: ['admin'] });
    await revokeApiKey(queue.ctx, key.id);
    const expected = Math.floor(queue.clock.nowMs() / 1000) + queue.ctx.settings.retentionDays * 86_400;
    expect((await storedKey(key.id)).purgeAtS).toBe(expected);
  });

  test('an unknown id is NotFoundError and creates nothing', async () => {
    await expect(revokeApiKey(queue.ctx, '0000000000000000')).rejects.toThrow(NotFoundError);
    expect(await tableItems(queue)).toEqual([]);
  });
});

describe('listing keys', () => {
  test('returns every key oldest first, revoked ones marked, and no secret or hash', async () => {
    const first = await createApiKey(queue.ctx, { scopes: ['admin'], name: 'ops' });
    queue.clock.advance(1000);
    const second = await createApiKey(queue.ctx, { scopes: ['read:*'] });
    await revokeApiKey(queue.ctx, second.key.id);
    const keys = await listApiKeys(queue.ctx);
    expect(keys.map((key) => key.id)).toEqual([first.key.id, second.key.id]);
    expect(keys[0]).toEqual({ id: first.key.id, name: 'ops', scopes: ['admin'], createdAtMs: first.key.createdAtMs });
    expect(keys[1]?.revokedAtMs).toBe(queue.clock.nowMs());
    expect(JSON.stringify(keys)).not.toMatch(/secretHash|djq_/);
  });

  test('lists nothing but keys: job types in the same index stay out', async () => {
    await createApiKey(queue.ctx, { scopes: ['admin'] });
    await putJobType(queue.ctx, 'emails', parseJobTypeDefinition({ target: { kind: 'handler', name: 'echo' } }));
    expect(await listApiKeys(queue.ctx)).toHaveLength(1);
  });
});
