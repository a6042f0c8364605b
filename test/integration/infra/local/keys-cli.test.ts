/** `npm run keys`: the first admin key of a deployment, made straight in its table. */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, inject, test, vi } from 'vitest';
import { verifyApiKey } from '../../../../lib/queue/catalog/api-keys.js';
import { main, runKeysCommand, UsageError } from '../../../../infra/local/keys-cli.js';
import { createTestQueue, type TestQueue } from '../../../support/queue.js';

let queue: TestQueue;
beforeEach(async () => {
  queue = await createTestQueue();
});
afterEach(async () => {
  await queue.drop();
  vi.restoreAllMocks();
});

describe('runKeysCommand', () => {
  test('create --scope admin prints a key that verifies as admin', async () => {
    const printed = JSON.parse(await runKeysCommand(queue.ctx, ['create', '--scope', 'admin', '--name', 'first admin']));
    expect(printed).toMatchObject({ scopes: ['admin'], name: 'first admin', key: expect.stringMatching(/^djq_/) });
    expect(await verifyApiKey(queue.ctx, printed.key)).toMatchObject({ ok: true, key: { scopes: ['admin'] } });
  });

  test('create takes several scopes and an expiry', async () => {
    const expiresAt = new Date(queue.clock.nowMs() + 86_400_000).toISOString();
    const printed = JSON.parse(
      await runKeysCommand(queue.ctx, ['create', '--scope', 'enqueue:emails', '--scope', 'read:*', '--expires-at', expiresAt]),
    );
    expect(printed).toMatchObject({ scopes: ['enqueue:emails', 'read:*'], expires_at: expiresAt });
  });

  test('list shows the keys without their secrets, and revoke revokes one', async () => {
    const created = JSON.parse(await runKeysCommand(queue.ctx, ['create', '--scope', 'admin']));
    const listed = await runKeysCommand(queue.ctx, ['list']);
    expect(JSON.parse(listed).keys.map((key: { id: string }) => key.id)).toEqual([created.id]);
    expect(listed).not.toContain(created.key);
    expect(JSON.parse(await runKeysCommand(queue.ctx, ['revoke', created.id])).revoked_at).toEqual(expect.any(String));
    expect((await verifyApiKey(queue.ctx, created.key)).ok).toBe(false);
  });

  test.each([
    ['no command', []],
    ['an unknown command', ['delete']],
    ['revoke without an id', ['revoke']],
    ['revoke with a malformed id', ['revoke', '../x']],
    ['list with arguments', ['list', 'all']],
  ])('%s is a usage error', async (_, args) => {
    await expect(runKeysCommand(queue.ctx, args)).rejects.toThrow(UsageError);
  });
});

describe('main', () => {
  test('an unknown scope exits 2 naming it and creates nothing', async () => {
    const errors = vi.spyOn(console, 'error').mockImplementation(() => undefined);
    const env = { TABLE_NAME: queue.tableName, DYNAMODB_ENDPOINT: inject('dynamoEndpoint') };
    expect(await main(['create', '--scope', 'root'], env)).toBe(2);
    expect(errors.mock.calls.flat().join('\n')).toContain('scopes.0');
    expect(JSON.parse(await runKeysCommand(queue.ctx, ['list'])).keys).toEqual([]);
  });

  test('an unknown option exits 2 with the usage', async () => {
    const errors = vi.spyOn(console, 'error').mockImplementation(() => undefined);
    const env = { TABLE_NAME: queue.tableName, DYNAMODB_ENDPOINT: inject('dynamoEndpoint') };
    expect(await main(['create', '--scopes', 'admin'], env)).toBe(2);
    expect(errors.mock.calls.flat().join('\n')).toContain('usage: npm run keys');
  });

  test('a table that does not exist exits 1 naming it', async () => {
    const errors = vi.spyOn(console, 'error').mockImplementation(() => undefined);
    const env = { TABLE_NAME: 'no-such-table', DYNAMODB_ENDPOINT: inject('dynamoEndpoint') };
    expect(await main(['list'], env)).toBe(1);
    expect(errors.mock.calls.flat().join('\n')).toContain('table "no-such-table" does not exist');
  });
});

test('npm run keys -- create --scope admin works as docs/operations/keys-and-scopes.md says', async () => {
  const { stdout } = await promisify(execFile)('npm', ['run', '--silent', 'keys', '--', 'create', '--scope', 'admin'], {
    env: { ...process.env, TABLE_NAME: queue.tableName, DYNAMODB_ENDPOINT: inject('dynamoEndpoint') },
  });
  const printed = JSON.parse(stdout);
  expect(await verifyApiKey(queue.ctx, printed.key)).toMatchObject({ ok: true, key: { scopes: ['admin'] } });
});
