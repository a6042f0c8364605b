/**
 * Fire times of a cron expression in an IANA zone. cron-parser parses and
 * iterates; this module adds the daylight-saving policy the queue promises:
 *
 * - a local time that does not exist (the hour skipped on a spring-forward day)
 *   fires once, at the first instant after the gap (02:30 -> 03:00 on
 *   2026-03-08 in New York); when a fire is due then anyway, the two are one;
 * - a local time that happens twice (the hour repeated on a fall-back day)
 *   fires once, the first time it happens.
 *
 * Both rules hold instant by instant, so iterating forward and backward give
 * the same times.
 */
import { CronExpressionParser, type CronExpression } from 'cron-parser';
import { IANAZone } from 'luxon';
import { ValidationError } from './errors.js';

export interface CronSpec {
  /** Five fields (minute first), or six (second first). */
  cron: string;
  tz: string;
}

export const MAX_CRON_CHARS = 120;
/** What a field may hold: numbers, names, `*`, `?`, ranges, steps, lists, `L`, `W`, `#`; a leading `@` for the named ones. */
const CRON_CHARACTERS = /^@?[A-Za-z0-9*?,/#\- ]+$/;

const DAY_MS = 86_400_000;
const LIBRARY_START_MARGIN_MS = 2_000;
/** Longer than any stretch of local time a zone repeats when its clocks go back (two hours at most). */
const BEFORE_ANY_REPEAT_MS = 3 * 3_600_000;

/** Library times looked at per time asked for, to bound the work. */
const ITERATIONS_PER_TIME = 8;
/**
 * Library times inside a spring-forward gap, all moved to the gap's end, looked at besides: every time of a
 * per-second schedule in a gap of up to two hours, so a gap never uses up the budget above (and never ends a
 * schedule whose next time lies past it).
 */
const MAX_GAP_DUPLICATES = 2 * 3_600 + 60;

function invalidCron(message: string): ValidationError {
  return new ValidationError([{ field: 'cron', message }]);
}

export function assertValidZone(tz: string): void {
  if (tz.length > 64 || !IANAZone.isValidZone(tz)) {
    throw new ValidationError([{ field: 'tz', message: 'must be an IANA time zone, e.g. America/New_York' }]);
  }
}

/** The library's iterator from `fromMs`; a cron string it cannot read is a ValidationError naming `cron`, a zone `tz`. */
function iteratorFrom(spec: CronSpec, fromMs: number): CronExpression {
  assertValidZone(spec.tz);
  const cron = spec.cron.trim();
  if (cron.length === 0 || cron.length > MAX_CRON_CHARS || !CRON_CHARACTERS.test(cron)) {
    throw invalidCron(`must be a cron expression of at most ${MAX_CRON_CHARS} characters, e.g. "0 5 * * 1-5"`);
  }
  const fields = cron.split(/\s+/).length;
  if (!cron.startsWith('@') && fields !== 5 && fields !== 6) throw invalidCron('must have five fields (minute first) or six (second first)');
  try {
    return CronExpressionParser.parse(cron, { tz: spec.tz, currentDate: new Date(fromMs), strict: false });
  } catch (error) {
    throw invalidCron(error instanceof Error ? error.message : 'is not a cron expression');
  }
}

/** The first instant after `fromMs` from which on the zone's offset is the one at `ms`: where a gap before `ms` ends. */
function offsetChangeBetween(zone: IANAZone, fromMs: number, ms: number): number {
  const offset = zone.offset(ms);
  // In whole seconds: zones change their offsets on whole seconds, and cron times are whole seconds.
  let lowS = Math.floor(fromMs / 1000);
  let highS = Math.floor(ms / 1000);
  if (zone.offset(lowS * 1000) === offset) return ms;
  while (highS - lowS > 1) {
    const middleS = Math.floor((lowS + highS) / 2);
    if (zone.offset(middleS * 1000) === offset) highS = middleS;
    else lowS = middleS;
  }
  return highS * 1000;
}

/** What the queue does with a time the library gave: fire at an instant, or skip a repeated stretch of local time. */
type Policy = { fireAtMs: number } | { repeated: { fromMs: number; untilMs: number } };

/**
 * The library moves a local time that does not exist forward by the gap, which we move back to the gap's end;
 * it gives the second pass of a repeated hour, which we skip whole (one jump, not a step per time in it).
 */
function policyOf(expression: CronExpression, zone: IANAZone, ms: number): Policy {
  if (!expression.includesDate(new Date(ms))) return { fireAtMs: offsetChangeBetween(zone, ms - DAY_MS, ms) };
  // In the second pass of a repeated stretch, the same local time came one offset change earlier.
  const offsetMin = zone.offset(ms);
  const earlierOffsetMin = zone.offset(ms - BEFORE_ANY_REPEAT_MS);
  if (earlierOffsetMin <= offsetMin) return { fireAtMs: ms };
  const repeatMs = (earlierOffsetMin - offsetMin) * 60_000;
  if (zone.offset(ms - repeatMs) !== earlierOffsetMin) return { fireAtMs: ms };
  const fromMs = offsetChangeBetween(zone, ms - BEFORE_ANY_REPEAT_MS, ms);
  return { repeated: { fromMs, untilMs: fromMs + repeatMs } };
}

/** How far past a spot where the library fails the next try starts, and how many tries are made. */
const LIBRARY_RETRY_STEP_MS = 3_600_000;
const LIBRARY_RETRIES = 24;

/**
 * The library's next (or previous) time from where `expression` stands at `fromMs`; undefined past the last
 * one it can find. cron-parser 5 fails ("loop limit exceeded") next to some half-hour offset changes (Lord
 * Howe Island's): the search is tried again an hour further on, for at most a day, so a schedule goes on
 * after such a change rather than end.
 */
function nextOf(expression: CronExpression, direction: 'next' | 'prev', fromMs?: number): number | undefined {
  for (let retry = 0; ; retry++) {
    try {
      return expression[direction]().getTime();
    } catch {
      if (fromMs === undefined || retry >= LIBRARY_RETRIES) return undefined;
      const stepMs = (retry + 1) * LIBRARY_RETRY_STEP_MS;
      expression.reset(new Date(direction === 'next' ? fromMs + stepMs : fromMs - stepMs));
    }
  }
}

/** Up to `count` fire times strictly after `afterMs` and before `untilMs`, ascending. */
export function fireTimesAfter(spec: CronSpec, afterMs: number, count: number, untilMs = Infinity): number[] {
  // From a little earlier: started in the last second before a spring-forward gap, the library starts after the
  // gap and never gives the gap's time. What it gives up to `afterMs` is left out below.
  const expression = iteratorFrom(spec, afterMs - LIBRARY_START_MARGIN_MS);
  const zone = IANAZone.create(spec.tz);
  const times: number[] = [];
  let lastGivenMs = afterMs - LIBRARY_START_MARGIN_MS;
  let gapDuplicates = 0;
  for (let step = 0; step < (count + 2) * ITERATIONS_PER_TIME && times.length < count; step++) {
    const given = nextOf(expression, 'next', lastGivenMs);
    if (given !== undefined) lastGivenMs = given;
    // A gap's time moves back to the gap's end, never more than a day before what the library gave.
    if (given === undefined || given - DAY_MS >= untilMs) break;
    const policy = policyOf(expression, zone, given);
    if ('repeated' in policy) {
      lastGivenMs = policy.repeated.untilMs - 1;
      expression.reset(new Date(lastGivenMs));
      continue;
    }
    const time = policy.fireAtMs;
    const movedFromGap = time !== given;
    if (time <= afterMs || time >= untilMs || time <= (times.at(-1) ?? -Infinity)) {
      if (movedFromGap && gapDuplicates++ < MAX_GAP_DUPLICATES) step--;
      continue;
    }
    times.push(time);
  }
  return times;
}

/** The first fire time at or after `fromMs` and before `untilMs`, or undefined when there is none. */
export function firstFireAtOrAfter(spec: CronSpec, fromMs: number, untilMs = Infinity): number | undefined {
  return fireTimesAfter(spec, fromMs - 1, 1, untilMs)[0];
}

/**
 * Up to `count` of the latest fire times at or after `fromMs` and at or before `upToMs`, ascending, found
 * backward from `upToMs` so that a long outage costs no walk through every time it missed. The library's
 * previous times skip a spring-forward gap; the gap's end is added where a forward walk would fire it.
 */
export function latestFireTimes(spec: CronSpec, fromMs: number, upToMs: number, count: number): number[] {
  const expression = iteratorFrom(spec, upToMs + 1);
  const zone = IANAZone.create(spec.tz);
  const kept: number[] = [];
  for (let step = 0; step < count * ITERATIONS_PER_TIME + ITERATIONS_PER_TIME && kept.length < count; step++) {
    const given = nextOf(expression, 'prev');
    if (given === undefined || given < fromMs) break;
    const policy = policyOf(expression, zone, given);
    if ('repeated' in policy) expression.reset(new Date(policy.repeated.fromMs));
    else if (policy.fireAtMs === given) kept.push(given);
  }
  // Between two of the library's times lie no others but a gap's; a forward walk between them finds it.
  const bounds = [upToMs, ...kept, kept.length === count ? kept.at(-1)! : fromMs];
  for (let at = 1; at < bounds.length; at++) {
    const laterMs = bounds[at - 1]!;
    const earlierMs = bounds[at]!;
    if (zone.offset(earlierMs) >= zone.offset(laterMs)) continue;
    kept.push(...fireTimesAfter(spec, earlierMs - 1, 2, laterMs + 1).filter((atMs) => atMs >= fromMs && atMs <= upToMs));
  }
  return [...new Set(kept)].sort((a, b) => a - b).slice(-count);
}

/** Refuses a cron string or zone the library cannot read (naming the field); returns nothing. */
export function assertValidCron(spec: CronSpec): void {
  iteratorFrom(spec, 0);
}
