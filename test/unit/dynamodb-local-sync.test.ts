import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { javaEnvironment, readDiskSync } from '../../infra/local/dynamodb-local.js';
import { ConfigError } from '../../lib/domain/errors.js';

describe('DYNAMODB_LOCAL_SYNC', () => {
  test('unset, empty or full flushes every write', () => {
    expect(readDiskSync({})).toBe('full');
    expect(readDiskSync({ DYNAMODB_LOCAL_SYNC: '' })).toBe('full');
    expect(readDiskSync({ DYNAMODB_LOCAL_SYNC: 'full' })).toBe('full');
  });

  test('off skips the flushes', () => {
    expect(readDiskSync({ DYNAMODB_LOCAL_SYNC: 'off' })).toBe('off');
  });

  test('any other value is a ConfigError naming the setting', () => {
    expect(() => readDiskSync({ DYNAMODB_LOCAL_SYNC: 'none' })).toThrow(ConfigError);
    expect(() => readDiskSync({ DYNAMODB_LOCAL_SYNC: 'none' })).toThrow(/DYNAMODB_LOCAL_SYNC must be full or off, got "none"/);
  });
});

describe("DynamoDB Local's environment", () => {
  test('full leaves the environment as it is', () => {
    expect(javaEnvironment('full', [])).toBe(process.env);
  });

  test('off preloads the first libeatmydata found', () => {
    const library = join(mkdtempSync(join(tmpdir(), 'eatmydata-')), 'libeatmydata.so');
    writeFileSync(library, '');
    const env = javaEnvironment('off', ['/nowhere/libeatmydata.so', library]);
    expect(env.LD_PRELOAD?.split(' ')[0]).toBe(library);
  });

  test('off without libeatmydata is a ConfigError saying where it looked and how to install it', () => {
    expect(() => javaEnvironment('off', ['/nowhere/libeatmydata.so'])).toThrow(ConfigError);
    expect(() => javaEnvironment('off', ['/nowhere/libeatmydata.so'])).toThrow(/none of \/nowhere\/libeatmydata.so .*apt install eatmydata/);
  });
});
