/** Field schemas more than one API body shares. */
import { IANAZone } from 'luxon';
import { z } from 'zod';
import { isWellFormedText } from '../domain/json-size.js';
import { MAX_TIME_WINDOWS } from '../domain/windows.js';
import { MAX_TAGS, TAG_PATTERN, TAG_RULE } from '../domain/tags.js';

/**
 * Any JSON value (a job's data, a result), as `z.json()` accepts it, written out so its recursion refers to
 * the named schema itself: the API's description then defines `JsonValue` once, by that name.
 */
export const jsonValueSchema: z.ZodType<z.core.util.JSONType, z.core.util.JSONType> = z
  .lazy(() => z.union([z.string(), z.number(), z.boolean(), z.null(), z.array(jsonValueSchema), z.record(z.string(), jsonValueSchema)]))
  .meta({ id: 'JsonValue' });

/** Throttle keys index counters in the table, so they are bounded and free of control characters. */
// oxlint-disable-next-line no-control-regex -- the control characters are what the pattern refuses.
const THROTTLE_KEY_PATTERN = /^[^\u0000-\u001f]{1,128}$/;

/** A throttle key, given or as a limit's name: it names a counter in the table. */
export const throttleKeySchema = z
  .string()
  .regex(THROTTLE_KEY_PATTERN, 'must be 1 to 128 characters without control characters')
  .refine(isWellFormedText, 'must be well-formed Unicode: no unpaired surrogate');

const clockTimeSchema = z.string().regex(/^([01]\d|2[0-3]):[0-5]\d$/, 'must be a 24-hour time HH:MM, e.g. 05:00');

export const timeWindowSchema = z
  .strictObject({
    start: clockTimeSchema,
    end: clockTimeSchema,
    tz: z
      .string()
      .max(64)
      .refine((tz) => IANAZone.isValidZone(tz), 'must be an IANA time zone, e.g. America/New_York'),
  })
  .refine((window) => window.start !== window.end, { path: ['end'], message: 'must differ from start' })
  .meta({ id: 'TimeWindow' });

export const timeWindowsSchema = z
  .array(timeWindowSchema)
  .min(1, 'must hold at least one window; leave it out (or null) for none')
  .max(MAX_TIME_WINDOWS, `must hold at most ${MAX_TIME_WINDOWS} windows`);

/** An instant the API answers with: always UTC, as `Date.prototype.toISOString` writes it. */
export const instantSchema = z.iso.datetime();

/** A page's cursor: pass it back for the next page; null on the last. */
export const nextCursorSchema = z.string().nullable();

/** A tag, in a job's `tags` or as the `tag` a listing or bulk operation selects by. */
export const tagSchema = z.string().regex(TAG_PATTERN, `must be ${TAG_RULE}`);

/** A job's tags: at most MAX_TAGS, none twice. */
export const tagsSchema = z
  .array(tagSchema)
  .max(MAX_TAGS, `must hold at most ${MAX_TAGS} tags`)
  .superRefine((tags, ctx) => {
    const seen = new Set<string>();
    for (const [index, tag] of tags.entries()) {
      if (seen.has(tag)) ctx.addIssue({ code: 'custom', path: [index], message: 'must not repeat a tag' });
      seen.add(tag);
    }
  });
