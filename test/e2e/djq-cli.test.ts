/** The `djq` bin's answers to what it cannot run: each says what is wrong and exits 2, before starting anything. */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, test } from 'vitest';

const dir = mkdtempSync(join(tmpdir(), 'djq-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function djq(args: string[]): Promise<{ code: number; stderr: string }> {
  return new Promise((resolve) => {
    execFile('node', ['bin/djq.js', ...args], { env: { ...process.env, DATA_DIR: join(dir, 'data') } }, (error, _stdout, stderr) =>
      resolve({ code: typeof error?.code === 'number' ? error.code : 0, stderr }),
    );
  });
}

test('a command other than dev prints the usage', async () => {
  const { code, stderr } = await djq(['deploy']);
  expect(code).toBe(2);
  expect(stderr).toContain('usage: djq dev [--handlers <module>]');
});

test('a handler module that is not there is named', async () => {
  const { code, stderr } = await djq(['dev', '--handlers', './no-such-module.ts']);
  expect(code).toBe(2);
  expect(stderr).toMatch(/djq: --handlers: no file .*no-such-module\.ts/);
});

test('a module that exports no handlers is refused, saying what it must export', async () => {
  const module = join(dir, 'not-handlers.ts');
  writeFileSync(module, 'export const greet = () => "hello";\n');
  const { code, stderr } = await djq(['dev', '--handlers', module]);
  expect(code).toBe(2);
  expect(stderr).toContain('djq: the handler module must export handlers');
});
