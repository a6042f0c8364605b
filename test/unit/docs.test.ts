/**
 * The README and docs/ are read on GitHub and in a clone: every relative link and #anchor must land on a file
 * and heading of this repository, the README stays a page a newcomer reads through, and nothing points at files
 * outside the repository.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { expect, test } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');
const README_MAX_LINES = 150;

function filesUnder(dir: string, keep: (name: string) => boolean): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'node_modules' ? [] : filesUnder(path, keep);
    return keep(entry.name) ? [path] : [];
  });
}

const markdownPages = ['README.md', ...filesUnder('docs', (name) => name.endsWith('.md')), ...filesUnder('bench', (name) => name.endsWith('.md'))];

/** The page's text outside fenced code blocks and inline code, where a link is a link. */
function prose(text: string): string[] {
  let inFence = false;
  return text.split('\n').map((line) => {
    if (line.startsWith('```')) {
      inFence = !inFence;
      return '';
    }
    return inFence ? '' : line.replaceAll(/`[^`]*`/g, (span) => (span.includes('](') ? '' : span));
  });
}

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
export function headingAnchors(text: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const line of prose(text)) {
    const heading = /^#{1,6} (.*)$/.exec(line);
    if (!heading) continue;
    const base = heading[1]!.trim().toLowerCase().replaceAll(/[^\p{L}\p{M}\p{N}\p{Pc}\- ]/gu, '').replaceAll(' ', '-');
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  return anchors;
}

function linksOf(text: string): string[] {
  return prose(text).flatMap((line) => [...line.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)].map((match) => match[1]!));
}

/** Why a relative link of `page` does not resolve, or undefined when it does. */
function brokenLink(page: string, link: string): string | undefined {
  if (/^[a-z]+:/i.test(link)) return undefined;
  const [pathPart, anchor] = link.split('#', 2) as [string, string | undefined];
  const target = pathPart === '' ? page : join(dirname(page), decodeURIComponent(pathPart));
  if (relative(ROOT, resolve(ROOT, target)).startsWith('..')) return 'leaves the repository';
  let stats;
  try {
    stats = statSync(join(ROOT, target));
  } catch {
    return `no file ${target}`;
  }
  if (anchor === undefined) return undefined;
  if (!stats.isFile() || !target.endsWith('.md')) return `#${anchor} on ${target}, which is not a Markdown page`;
  return headingAnchors(readFileSync(join(ROOT, target), 'utf8')).has(anchor) ? undefined : `no heading #${anchor} in ${target}`;
}

test('every relative link and anchor in the README, docs/ and bench/ resolves inside the repository', () => {
  const broken = markdownPages.flatMap((page) =>
    linksOf(readFileSync(join(ROOT, page), 'utf8')).flatMap((link) => {
      const why = brokenLink(page, link);
      return why === undefined ? [] : [`${page}: (${link}) ${why}`];
    }),
  );
  expect(broken).toEqual([]);
});

test('anchors follow GitHub: punctuation and code marks dropped, repeated headings numbered', () => {
  const anchors = headingAnchors('# Flushes on disk (`DYNAMODB_LOCAL_SYNC`)\n## `POST /jobber/queue`\n## Notes\n## Notes\n```\n# not a heading\n```\n');
  expect([...anchors]).toEqual(['flushes-on-disk-dynamodb_local_sync', 'post-jobberqueue', 'notes', 'notes-1']);
});

test('a link to a missing page, a missing heading or outside the repository is found', () => {
  expect(brokenLink('README.md', 'docs/no-such-page.md')).toBe('no file docs/no-such-page.md');
  expect(brokenLink('README.md', 'docs/getting-started.md#no-such-heading')).toBe('no heading #no-such-heading in docs/getting-started.md');
  expect(brokenLink('docs/getting-started.md', '../../outside.md')).toBe('leaves the repository');
  expect(brokenLink('docs/getting-started.md', '../README.md#in-your-own-cdk-app')).toBeUndefined();
});

test(`the README stays short: at most ${README_MAX_LINES} lines, the rest lives in docs/`, () => {
  const lines = readFileSync(join(ROOT, 'README.md'), 'utf8').trimEnd().split('\n');
  expect(lines.length).toBeLessThanOrEqual(README_MAX_LINES);
});

// The team's design and workload notes once lived beside the repository; a clone has only what is in it.
const OUTSIDE_NOTES = new RegExp(String.raw`\.\./shared/[A-Z]+\.md|\b(?:DESIGN|WORKLOAD)\.md\b`);

test('nothing in the README, docs/ or the code points at notes outside the repository', () => {
  const code = ['lib', 'functions', 'infra', 'bench', 'test', 'dashboard', 'bin', 'examples'].flatMap((dir) =>
    filesUnder(dir, (name) => /\.(?:ts|js|mjs)$/.test(name) && !name.endsWith('.generated.ts')),
  );
  const pointing = [...markdownPages, ...code]
    .filter((file) => file !== relative(ROOT, import.meta.filename))
    .filter((file) => OUTSIDE_NOTES.test(readFileSync(join(ROOT, file), 'utf8')));
  expect(pointing).toEqual([]);
});
