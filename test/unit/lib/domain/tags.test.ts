/** Job tags: which lists of tags a job may hold, and how long a tag's index entry is kept (lib/domain/tags.ts). */
import { expect, test } from 'vitest';
import { MAX_TAGS, tagEntryPurgeAtS, tagsProblem } from '../../../../lib/domain/tags.js';

test('ten well-formed tags, none twice, are fine', () => {
  expect(tagsProblem(Array.from({ length: MAX_TAGS }, (_, index) => `tag-${index}`))).toBeUndefined();
});

test('no tags at all are fine', () => {
  expect(tagsProblem([])).toBeUndefined();
});

test('more than ten tags are refused as a whole, naming no tag', () => {
  expect(tagsProblem(Array.from({ length: MAX_TAGS + 1 }, (_, index) => `tag-${index}`))).toStrictEqual({ message: 'must hold at most 10 tags' });
});

test('a tag may use letters, digits and _ . : = @ / -', () => {
  expect(tagsProblem(['Az09_.:=@/-'])).toBeUndefined();
});

test('a tag of 1 and of 64 characters is fine; an empty tag or one of 65 is refused', () => {
  expect(tagsProblem(['a', 'b'.repeat(64)])).toBeUndefined();
  expect(tagsProblem([''])?.index).toBe(0);
  expect(tagsProblem(['c'.repeat(65)])?.index).toBe(0);
});

test.each(['a b', 'a#b', 'a,b', 'é', ' a', 'a '])('the tag %j is refused, naming its place and the rule', (tag) => {
  expect(tagsProblem(['fine', tag])).toStrictEqual({ index: 1, message: 'must be 1 to 64 characters of A-Z a-z 0-9 _ . : = @ / -' });
});

test('a tag given twice is refused at its second place', () => {
  expect(tagsProblem(['a', 'b', 'a'])).toStrictEqual({ index: 2, message: 'must not repeat a tag' });
});

test("a tag's entry is purged twice the retention after the job is due, in whole seconds", () => {
  expect(tagEntryPurgeAtS(1_000_999, 7)).toBe(1_000 + 2 * 7 * 86_400);
});
