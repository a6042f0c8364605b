/**
 * The lint rules that keep names from requests, data and stored items off objects' prototypes
 * (lint/own-names.mjs, on in .oxlintrc.json): they flag the lookups issue 28 found, and leave alone
 * the ways of reading a name that are safe.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';

const ROOT = new URL('../..', import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), 'own-names-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The own-names rules that flag `code` (one statement, with every name it uses declared as `any`). */
function flaggedBy(code: string): string[] {
  const file = join(dir, `probe-${Math.random().toString(36).slice(2)}.ts`);
  writeFileSync(file, `declare const limits: any, registry: any, policy: any, target: any, deps: any, batch: any, job: any, value: any, name: any, throttleKey: any, items: any, index: any, map: any, ownEntry: any;\nexport const probe = ${code};\n`);
  const config = join(dir, 'oxlintrc.json');
  writeFileSync(config, JSON.stringify({ jsPlugins: [join(ROOT, 'lint/own-names.mjs')], rules: { 'own-names/no-name-in': 'error', 'own-names/no-lookup-by-name': 'error' } }));
  let output: string;
  try {
    output = execFileSync(join(ROOT, 'node_modules/.bin/oxlint'), ['-c', config, '--format', 'json', file], { encoding: 'utf8' });
  } catch (error) {
    output = (error as { stdout: string }).stdout;
  }
  const { diagnostics } = JSON.parse(output) as { diagnostics: { code: string }[] };
  return diagnostics.map((diagnostic) => diagnostic.code).filter((code) => code.startsWith('own-names('));
}

describe('flagged: the lookups issue 28 found', () => {
  test.each([
    ['a throttle limit by key', 'limits?.[throttleKey]', 'own-names(no-lookup-by-name)'],
    ['a retry policy checked with in', 'policy.name in registry.retryPolicies', 'own-names(no-name-in)'],
    ['a retry policy by name', 'registry.retryPolicies[policy.name]', 'own-names(no-lookup-by-name)'],
    ['a handler by name', 'deps.handlers[target.name]', 'own-names(no-lookup-by-name)'],
    ['a batch\'s job type by the job\'s type', 'batch.jobTypes[job.type]', 'own-names(no-lookup-by-name)'],
    ['a field of data by name', '(value as Record<string, unknown>)[name]', 'own-names(no-lookup-by-name)'],
  ])('%s: %s', (_what, code, rule) => {
    expect(flaggedBy(code)).toEqual([rule]);
  });
});

describe('not flagged: reads that cannot reach a prototype', () => {
  test.each([
    ['ownEntry', 'ownEntry(limits, throttleKey)'],
    ['Object.hasOwn', 'Object.hasOwn(registry.retryPolicies, policy.name)'],
    ['a Map', 'map.get(name)'],
    ['a literal name with in, as a union\'s discriminant', "'limit' in value"],
    ['an array by index', 'items[index]'],
  ])('%s: %s', (_what, code) => {
    expect(flaggedBy(code)).toEqual([]);
  });
});
