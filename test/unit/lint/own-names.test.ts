/**
 * The lint rules that keep names from requests, data and stored items off objects' prototypes
 * (lint/own-names.mjs, on in .oxlintrc.json): they flag the lookups that let a name reach an object's prototype, and leave alone
 * the ways of reading a name that are safe.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';

const ROOT = new URL('../../..', import.meta.url).pathname;

const FLAGGED: [what: string, code: string, rule: string][] = [
  ['a throttle limit by key', 'limits?.[throttleKey]', 'own-names(no-lookup-by-name)'],
  ['a retry policy checked with in', 'policy.name in registry.retryPolicies', 'own-names(no-name-in)'],
  ['a retry policy by name', 'registry.retryPolicies[policy.name]', 'own-names(no-lookup-by-name)'],
  ['a handler by name', 'deps.handlers[target.name]', 'own-names(no-lookup-by-name)'],
  ['a batch\'s job type by the job\'s type', 'batch.jobTypes[job.type]', 'own-names(no-lookup-by-name)'],
  ['a field of data by name', '(value as Record<string, unknown>)[name]', 'own-names(no-lookup-by-name)'],
];

const SAFE: [what: string, code: string][] = [
  ['ownEntry', 'ownEntry(limits, throttleKey)'],
  ['Object.hasOwn', 'Object.hasOwn(registry.retryPolicies, policy.name)'],
  ['a Map', 'map.get(name)'],
  ['a literal name with in, as a union\'s discriminant', "'limit' in value"],
  ['an array by index', 'items[index]'],
];

/** The own-names rules each probe's code is flagged by, by code: all probes in one run of oxlint. */
const flagged = new Map<string, string[]>();
let dir: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'own-names-'));
  const codes = [...FLAGGED.map(([, code]) => code), ...SAFE.map(([, code]) => code)];
  const fileOf = new Map(codes.map((code, at) => [`probe-${at}.ts`, code]));
  for (const [file, code] of fileOf) {
    writeFileSync(
      join(dir, file),
      `declare const limits: any, registry: any, policy: any, target: any, deps: any, batch: any, job: any, value: any, name: any, throttleKey: any, items: any, index: any, map: any, ownEntry: any;\nexport const probe = ${code};\n`,
    );
  }
  const config = join(dir, 'oxlintrc.json');
  writeFileSync(config, JSON.stringify({ jsPlugins: [join(ROOT, 'lint/own-names.mjs')], rules: { 'own-names/no-name-in': 'error', 'own-names/no-lookup-by-name': 'error' } }));
  let output: string;
  try {
    output = execFileSync(join(ROOT, 'node_modules/.bin/oxlint'), ['-c', config, '--format', 'json', dir], { encoding: 'utf8' });
  } catch (error) {
    output = (error as { stdout: string }).stdout;
  }
  const { diagnostics } = JSON.parse(output) as { diagnostics: { code: string; filename: string }[] };
  for (const code of codes) flagged.set(code, []);
  for (const diagnostic of diagnostics) {
    const code = fileOf.get(basename(diagnostic.filename));
    if (code !== undefined && diagnostic.code.startsWith('own-names(')) flagged.get(code)!.push(diagnostic.code);
  }
}, 60_000);

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('flagged: the lookups that let a name reach a prototype', () => {
  test.each(FLAGGED)('%s: %s', (_what, code, rule) => {
    expect(flagged.get(code)).toEqual([rule]);
  });
});

describe('not flagged: reads that cannot reach a prototype', () => {
  test.each(SAFE)('%s: %s', (_what, code) => {
    expect(flagged.get(code)).toEqual([]);
  });
});
