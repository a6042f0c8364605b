/**
 * The layout holds: lib/queue keeps its code in folders named for a role, no source file grows past what one
 * sitting reads, and the benchmarks stand on the code and the local runtime, never on the tests.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');

function filesUnder(folder: string, ending = '.ts'): string[] {
  return readdirSync(join(ROOT, folder), { recursive: true, encoding: 'utf8' })
    .filter((path) => path.endsWith(ending) && statSync(join(ROOT, folder, path)).isFile())
    .map((path) => join(folder, path));
}

const lineCount = (path: string): number => readFileSync(join(ROOT, path), 'utf8').split('\n').length;

/** Relative import specifiers of a file, from `from '...'` and `import('...')`. */
function relativeImports(path: string): string[] {
  const text = readFileSync(join(ROOT, path), 'utf8');
  return [...text.matchAll(/(?:from\s+|import\s*\(\s*)'(\.{1,2}\/[^']+)'/g)].map((match) => match[1] ?? '');
}

describe('lib/queue', () => {
  test('holds at most 3 files at its top level; the rest live in role folders', () => {
    const topLevel = readdirSync(join(ROOT, 'lib/queue'), { withFileTypes: true }).filter((entry) => entry.isFile());
    expect(topLevel.map((entry) => entry.name).length).toBeLessThanOrEqual(3);
  });

  test('has no role folder of more than 12 files', () => {
    const folders = readdirSync(join(ROOT, 'lib/queue'), { withFileTypes: true }).filter((entry) => entry.isDirectory());
    const crowded = folders.map((folder) => ({ folder: folder.name, files: filesUnder(join('lib/queue', folder.name)).length })).filter(({ files }) => files > 12);
    expect(crowded).toEqual([]);
  });
});

test('no source file in lib/, functions/ or infra/ is over 400 lines', () => {
  const sources = ['lib', 'functions', 'infra'].flatMap((folder) => filesUnder(folder)).filter((path) => !path.endsWith('.generated.ts'));
  const long = sources.map((path) => ({ path, lines: lineCount(path) })).filter(({ lines }) => lines > 400);
  expect(long).toEqual([]);
});

test('the unit and integration tests mirror the source: each names a file of the repository, before any aspect', () => {
  const tests = ['test/unit', 'test/integration'].flatMap((folder) => filesUnder(folder, '.test.ts').map((path) => ({ folder, path })));
  const unplaced = tests.filter(({ folder, path }) => {
    // The name up to its first dot: `poll.claim-ahead.test.ts` tests poll.ts.
    const [source] = path.slice(folder.length + 1).split(/\.(?=[^/]*$)/);
    return !['', '.ts', '.tsx', '.mjs'].some((ending) => existsSync(join(ROOT, `${source}${ending}`)) && statSync(join(ROOT, `${source}${ending}`)).isFile());
  });
  expect(unplaced.map(({ path }) => path)).toEqual(['test/unit/docs.test.ts', 'test/unit/layout.test.ts']);
});

test('bench/ imports nothing from test/', () => {
  const fromTests = filesUnder('bench').flatMap((path) => relativeImports(path).filter((specifier) => /(^|\/)test\//.test(specifier)).map((specifier) => `${path}: ${specifier}`));
  expect(fromTests).toEqual([]);
});
