import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { javaEnvironment, readDiskSync } from '../../../../../infra/local/aws/dynamodb-local.js';
import { ConfigError } from '../../../../../lib/domain/errors.js';

/** A stand-in for libeatmydata: only its presence is read. */
function installedLibrary(): string {
  const library = join(mkdtempSync(join(tmpdir(), 'eatmydata-')), 'libeatmydata.so');
  writeFileSync(library, '');
  return library;
}

describe('DYNAMODB_LOCAL_SYNC', () => {
  test('full flushes every write, whether or not libeatmydata is installed', () => {
    expect(readDiskSync({ DYNAMODB_LOCAL_SYNC: 'full' }, [installedLibrary()])).toBe('full');
    expect(readDiskSync({ DYNAMODB_LOCAL_SYNC: 'full' }, [])).toBe('full');
  });

  test('unset or empty skips the flushes where libeatmydata is installed', () => {
    expect(readDiskSync({}, ['/nowhere/libeatmydata.so', installedLibrary()])).toBe('off');
    expect(readDiskSync({ DYNAMODB_LOCAL_SYNC: '' }, [installedLibrary()])).toBe('off');
  });

  test('unset or empty flushes every write where libeatmydata is missing', () => {
    expect(readDiskSync({}, ['/nowhere/libeatmydata.so'])).toBe('full');
    expect(readDiskSync({ DYNAMODB_LOCAL_SYNC: '' }, [])).toBe('full');
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
