/**
 * The client must run in a browser and in any project: bundled for the browser
 * it needs nothing but its own files (no Node.js built-in, no AWS SDK, no
 * server module), and it type-checks against the DOM's fetch alone.
 */
import { build } from 'esbuild';
import { relative } from 'node:path';
import { expect, test } from 'vitest';

test('bundled for the browser, the client is made of lib/client files only', async () => {
  const result = await build({
    entryPoints: ['lib/client/index.ts'],
    bundle: true,
    platform: 'browser',
    format: 'esm',
    write: false,
    metafile: true,
    logLevel: 'silent',
  });
  const inputs = Object.keys(result.metafile.inputs).map((input) => relative('.', input));
  expect(inputs.filter((input) => !input.startsWith('lib/client/'))).toEqual([]);
  expect(inputs).toContain('lib/client/index.ts');
});
