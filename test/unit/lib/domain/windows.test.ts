/** Time windows (invariant 7, docs/concepts/design.md#invariants): when a job may start, in its zone's local time, across midnight and DST days. */
import fc from 'fast-check';
import { DateTime } from 'luxon';
import { describe, expect, test } from 'vitest';
import { detailsOf, fieldsOf } from '../../../support/validation.js';
import { jobInputSchema } from '../../../../lib/wire/jobs.js';
import { jobTypeInputSchema } from '../../../../lib/wire/job-types.js';
import { parseWith } from '../../../../lib/wire/parse.js';
import { firstInstantInWindows, isInWindows } from '../../../../lib/domain/windows.js';
import type { TimeWindow } from '../../../../lib/domain/windows.js';

const at = (iso: string): number => Date.parse(iso);
const iso = (epochMs: number): string => new Date(epochMs).toISOString();
const window = (start: string, end: string, tz: string): TimeWindow => ({ start, end, tz });

/** The first instant inside `windows` at or after `fromIso`, as an ISO string. */
const firstFrom = (windows: TimeWindow[], fromIso: string): string => iso(firstInstantInWindows(windows, at(fromIso)));

describe('inside and outside one window', () => {
  const officeHours = [window('09:00', '17:00', 'UTC')];

  test('an instant inside the window is its own answer', () => {
    expect(isInWindows(officeHours, at('2026-11-21T12:34:56.789Z'))).toBe(true);
    expect(firstFrom(officeHours, '2026-11-21T12:34:56.789Z')).toBe('2026-11-21T12:34:56.789Z');
  });

  test('the opening minute is inside', () => {
    expect(isInWindows(officeHours, at('2026-11-21T09:00:00.000Z'))).toBe(true);
  });

  test('the closing minute is outside: the window ends just before it', () => {
    expect(isInWindows(officeHours, at('2026-11-21T16:59:59.999Z'))).toBe(true);
    expect(isInWindows(officeHours, at('2026-11-21T17:00:00.000Z'))).toBe(false);
  });

  test('before the window the answer is its opening the same day', () => {
    expect(isInWindows(officeHours, at('2026-11-21T08:59:00.000Z'))).toBe(false);
    expect(firstFrom(officeHours, '2026-11-21T08:59:00.000Z')).toBe('2026-11-21T09:00:00.000Z');
  });

  test('after the window the answer is its opening the next day', () => {
    expect(firstFrom(officeHours, '2026-11-21T17:00:00.000Z')).toBe('2026-11-22T09:00:00.000Z');
  });

  test('the window is local time in its zone', () => {
    // New York is UTC-5 in November.
    expect(firstFrom([window('05:00', '07:00', 'America/New_York')], '2026-11-21T00:00:00Z')).toBe('2026-11-21T10:00:00.000Z');
  });
});

describe('a window crossing midnight', () => {
  // Berlin is UTC+1 in November: the window is 21:00Z to 01:00Z the next day.
  const night = [window('22:00', '02:00', 'Europe/Berlin')];

  test('is inside before midnight', () => {
    expect(isInWindows(night, at('2026-11-21T22:30:00Z'))).toBe(true);
  });

  test('is inside after midnight, until its end the next day', () => {
    expect(isInWindows(night, at('2026-11-22T00:59:59.999Z'))).toBe(true);
    expect(isInWindows(night, at('2026-11-22T01:00:00Z'))).toBe(false);
  });

  test('after it closes the answer is its opening that evening', () => {
    expect(firstFrom(night, '2026-11-22T01:00:00Z')).toBe('2026-11-22T21:00:00.000Z');
  });
});

describe('several windows', () => {
  const twiceADay = [window('18:00', '19:00', 'America/New_York'), window('05:00', '07:00', 'America/New_York')];

  test('the answer is the next opening of whichever window opens first', () => {
    expect(firstFrom(twiceADay, '2026-11-21T13:00:00Z')).toBe('2026-11-21T23:00:00.000Z');
    expect(firstFrom(twiceADay, '2026-11-22T00:30:00Z')).toBe('2026-11-22T10:00:00.000Z');
  });

  test('an instant inside any of them is inside', () => {
    expect(isInWindows(twiceADay, at('2026-11-21T10:30:00Z'))).toBe(true);
    expect(isInWindows(twiceADay, at('2026-11-21T23:30:00Z'))).toBe(true);
    expect(isInWindows(twiceADay, at('2026-11-21T20:00:00Z'))).toBe(false);
  });

  test('windows in different zones each keep their own local time', () => {
    // 09:00 in Tokyo (UTC+9) is 00:00Z; 09:00 in London (UTC+0 in November) is 09:00Z.
    const tokyoAndLondon = [window('09:00', '10:00', 'Asia/Tokyo'), window('09:00', '10:00', 'Europe/London')];
    expect(firstFrom(tokyoAndLondon, '2026-11-21T00:30:00Z')).toBe('2026-11-21T00:30:00.000Z');
    expect(firstFrom(tokyoAndLondon, '2026-11-21T01:00:00Z')).toBe('2026-11-21T09:00:00.000Z');
    expect(firstFrom(tokyoAndLondon, '2026-11-21T10:00:00Z')).toBe('2026-11-22T00:00:00.000Z');
  });
});

describe('US spring forward (New York, 2026-03-08: 02:00 EST becomes 03:00 EDT)', () => {
  test('a window after the change opens at its local time on the new offset', () => {
    // 05:00 EST on the 7th is 10:00Z; 05:00 EDT on the 8th is 09:00Z.
    const mornings = [window('05:00', '07:00', 'America/New_York')];
    expect(firstFrom(mornings, '2026-03-07T12:00:00Z')).toBe('2026-03-08T09:00:00.000Z');
    expect(isInWindows(mornings, at('2026-03-08T08:59:59.999Z'))).toBe(false);
  });

  test('a window starting in the gap opens at the first instant after it', () => {
    const fromTheGap = [window('02:30', '04:00', 'America/New_York')];
    expect(firstFrom(fromTheGap, '2026-03-08T05:00:00Z')).toBe('2026-03-08T07:00:00.000Z');
    expect(isInWindows(fromTheGap, at('2026-03-08T07:59:59.999Z'))).toBe(true);
    expect(isInWindows(fromTheGap, at('2026-03-08T08:00:00Z'))).toBe(false);
  });

  test('a window ending in the gap closes when the gap begins', () => {
    // 01:00 EST is 06:00Z; the clock jumps at 07:00Z.
    const intoTheGap = [window('01:00', '02:30', 'America/New_York')];
    expect(isInWindows(intoTheGap, at('2026-03-08T06:59:59.999Z'))).toBe(true);
    expect(isInWindows(intoTheGap, at('2026-03-08T07:00:00Z'))).toBe(false);
  });

  test('a window lying wholly in the gap does not open that day: the next answer is the next day', () => {
    const inTheGap = [window('02:00', '02:30', 'America/New_York')];
    expect(firstFrom(inTheGap, '2026-03-08T05:00:00Z')).toBe('2026-03-09T06:00:00.000Z');
  });
});

describe('US fall back (New York, 2026-11-01: 02:00 EDT becomes 01:00 EST, 01:00–02:00 happens twice)', () => {
  test('a window starting in the repeated hour opens at its first occurrence', () => {
    // 01:30 EDT is 05:30Z; the second 01:30 (EST) is 06:30Z.
    const fromTheRepeat = [window('01:30', '03:00', 'America/New_York')];
    expect(firstFrom(fromTheRepeat, '2026-11-01T00:00:00Z')).toBe('2026-11-01T05:30:00.000Z');
  });

  test('a window spanning the repeated hour stays open through both passes, to its end on the new offset', () => {
    const fromTheRepeat = [window('01:30', '03:00', 'America/New_York')];
    // 01:10 EST, the second pass: the window opened at 01:30 EDT and has not closed yet.
    expect(isInWindows(fromTheRepeat, at('2026-11-01T06:10:00Z'))).toBe(true);
    // 03:00 EST is 08:00Z.
    expect(isInWindows(fromTheRepeat, at('2026-11-01T07:59:59.999Z'))).toBe(true);
    expect(isInWindows(fromTheRepeat, at('2026-11-01T08:00:00Z'))).toBe(false);
  });

  test('a window lying in the repeated hour opens on the first pass only', () => {
    const inTheRepeat = [window('01:00', '01:30', 'America/New_York')];
    expect(isInWindows(inTheRepeat, at('2026-11-01T05:00:00Z'))).toBe(true);
    expect(isInWindows(inTheRepeat, at('2026-11-01T05:30:00Z'))).toBe(false);
    // 01:00 EST, the second pass: next is 01:00 EST on the 2nd.
    expect(firstFrom(inTheRepeat, '2026-11-01T06:00:00Z')).toBe('2026-11-02T06:00:00.000Z');
  });

  test('a window after the change opens at its local time on the new offset', () => {
    expect(firstFrom([window('05:00', '07:00', 'America/New_York')], '2026-10-31T12:00:00Z')).toBe('2026-11-01T10:00:00.000Z');
  });
});

describe('a European DST day', () => {
  test('London, 2026-03-29 (01:00 GMT becomes 02:00 BST): a window in the gap waits for the next day', () => {
    expect(firstFrom([window('01:15', '01:45', 'Europe/London')], '2026-03-28T12:00:00Z')).toBe('2026-03-30T00:15:00.000Z');
  });

  test('London, 2026-03-29: a window spanning the gap is an hour shorter', () => {
    const early = [window('00:30', '02:30', 'Europe/London')];
    expect(firstFrom(early, '2026-03-28T12:00:00Z')).toBe('2026-03-29T00:30:00.000Z');
    expect(isInWindows(early, at('2026-03-29T01:29:59.999Z'))).toBe(true);
    expect(isInWindows(early, at('2026-03-29T01:30:00Z'))).toBe(false);
  });

  test('Berlin, 2026-10-25 (03:00 CEST becomes 02:00 CET): a window opening in the repeated hour opens on its first pass', () => {
    // 02:30 CEST is 00:30Z; 04:00 CET is 03:00Z.
    const repeated = [window('02:30', '04:00', 'Europe/Berlin')];
    expect(firstFrom(repeated, '2026-10-24T12:00:00Z')).toBe('2026-10-25T00:30:00.000Z');
    expect(isInWindows(repeated, at('2026-10-25T02:59:59.999Z'))).toBe(true);
    expect(isInWindows(repeated, at('2026-10-25T03:00:00Z'))).toBe(false);
  });
});

describe('zones with a half-hour offset', () => {
  test('India (UTC+05:30, no DST): 09:00–10:00 is 03:30Z–04:30Z', () => {
    const kolkata = [window('09:00', '10:00', 'Asia/Kolkata')];
    expect(firstFrom(kolkata, '2026-11-21T00:00:00Z')).toBe('2026-11-21T03:30:00.000Z');
    expect(isInWindows(kolkata, at('2026-11-21T04:29:59.999Z'))).toBe(true);
    expect(isInWindows(kolkata, at('2026-11-21T04:30:00Z'))).toBe(false);
  });

  test('Lord Howe Island moves its clock by half an hour (2026-10-04: 02:00 becomes 02:30)', () => {
    // 02:00 at +10:30 is 15:30Z on the 3rd.
    expect(firstFrom([window('02:10', '03:00', 'Australia/Lord_Howe')], '2026-10-03T12:00:00Z')).toBe('2026-10-03T15:30:00.000Z');
    // Wholly in the half-hour gap: the next day's 02:00 at +11:00 is 15:00Z on the 4th.
    expect(firstFrom([window('02:00', '02:15', 'Australia/Lord_Howe')], '2026-10-03T12:00:00Z')).toBe('2026-10-04T15:00:00.000Z');
  });
});

describe('properties', () => {
  const clockTime = fc.tuple(fc.integer({ min: 0, max: 23 }), fc.integer({ min: 0, max: 59 })).map(
    ([hour, minute]) => `${String(hour).padStart(2, '0')}:${String(minute).padStart(2, '0')}`,
  );
  const windowIn = (zones: string[]): fc.Arbitrary<TimeWindow> =>
    fc
      .record({ start: clockTime, end: clockTime, tz: fc.constantFrom(...zones) })
      .filter((candidate) => candidate.start !== candidate.end);
  const minuteBetween = (fromIso: string, toIso: string): fc.Arbitrary<number> =>
    fc.integer({ min: at(fromIso) / 60_000, max: at(toIso) / 60_000 }).map((minute) => minute * 60_000);
  const minuteIn2026 = minuteBetween('2026-01-01T00:00:00Z', '2027-01-01T00:00:00Z');
  const anyZone = ['America/New_York', 'Europe/Berlin', 'Europe/London', 'Australia/Sydney', 'Australia/Lord_Howe', 'America/Santiago', 'Asia/Kolkata'];
  /** 2026 clock changes: the zone, and the instant its clock jumps. */
  const clockChanges: [string, string][] = [
    ['America/New_York', '2026-03-08T07:00:00Z'],
    ['America/New_York', '2026-11-01T06:00:00Z'],
    ['Europe/Berlin', '2026-03-29T01:00:00Z'],
    ['Europe/London', '2026-10-25T01:00:00Z'],
    ['Australia/Sydney', '2026-04-04T16:00:00Z'],
    ['Australia/Lord_Howe', '2026-10-03T15:30:00Z'],
    ['America/Santiago', '2026-04-05T03:00:00Z'],
    ['America/Santiago', '2026-09-06T04:00:00Z'],
  ];
  /** Windows in the zone of a clock change, mostly around the small hours when clocks change, and a minute within two days of it. */
  const aroundAClockChange = fc.constantFrom(...clockChanges).chain(([tz, changeIso]) => {
    const smallHours = fc.tuple(fc.integer({ min: 0, max: 4 }), fc.integer({ min: 0, max: 59 })).map(
      ([hour, minute]) => `${String(hour).padStart(2, '0')}:${String(minute).padStart(2, '0')}`,
    );
    const time = fc.oneof(smallHours, clockTime);
    const windowInZone = fc.record({ start: time, end: time, tz: fc.constant(tz) }).filter((candidate) => candidate.start !== candidate.end);
    return fc.tuple(
      fc.array(windowInZone, { minLength: 1, maxLength: 3 }),
      fc.integer({ min: -2 * 1440, max: 2 * 1440 }).map((minutes) => at(changeIso) + minutes * 60_000),
    );
  });

  /** What the clock in `tz` reads at `epochMs`, as text that sorts like the time of day. */
  const readingAt = (epochMs: number, tz: string): string => DateTime.fromMillis(epochMs, { zone: tz }).toFormat('HH:mm:ss.SSS');

  /** The clock in the window's zone passed its start at `epochMs`: it reads the start then, or jumped over it then. */
  const opensAt = ({ start, tz }: TimeWindow, epochMs: number): boolean => {
    const before = readingAt(epochMs - 1, tz);
    const now = readingAt(epochMs, tz);
    const opening = `${start}:00.000`;
    return before < now ? before < opening && opening <= now : before < opening || opening <= now;
  };

  /** Inside by the wall clock alone, which is exact in a zone that never changes its offset. */
  const wallClockInside = (windows: TimeWindow[], epochMs: number): boolean =>
    windows.some(({ start, end, tz }) => {
      const time = DateTime.fromMillis(epochMs, { zone: tz }).toFormat('HH:mm');
      return start < end ? start <= time && time < end : time >= start || time < end;
    });

  test('in zones without DST, the answer is the first whole minute inside by the wall clock', () => {
    const fixedZones = ['UTC', 'Asia/Kolkata', 'Asia/Kathmandu', 'Asia/Tokyo', 'America/Phoenix'];
    fc.assert(
      fc.property(fc.array(windowIn(fixedZones), { minLength: 1, maxLength: 3 }), minuteIn2026, (windows, fromMs) => {
        let expectedMs = fromMs;
        while (!wallClockInside(windows, expectedMs)) expectedMs += 60_000;
        expect(iso(firstInstantInWindows(windows, fromMs))).toBe(iso(expectedMs));
      }),
      { numRuns: 200 },
    );
  }, 60_000);

  /** The answer is inside, not before the input, the window opened there (or was open already), and no minute between is inside. */
  const checkFirstInstant = (windows: TimeWindow[], fromMs: number): void => {
    const answerMs = firstInstantInWindows(windows, fromMs);
    expect(answerMs).toBeGreaterThanOrEqual(fromMs);
    expect(isInWindows(windows, answerMs)).toBe(true);
    if (answerMs > fromMs) {
      expect(isInWindows(windows, answerMs - 1)).toBe(false);
      expect(windows.some((candidate) => opensAt(candidate, answerMs))).toBe(true);
    }
    for (let minuteMs = fromMs; minuteMs < answerMs; minuteMs += 60_000) {
      expect(isInWindows(windows, minuteMs), iso(minuteMs)).toBe(false);
    }
  };

  test('in any zone on any day, the answer is the first instant inside, where a window opens', () => {
    fc.assert(
      fc.property(fc.array(windowIn(anyZone), { minLength: 1, maxLength: 3 }), minuteIn2026, checkFirstInstant),
      { numRuns: 200 },
    );
  }, 60_000);

  test('around a clock change, the answer is the first instant inside, where a window opens', () => {
    fc.assert(
      fc.property(aroundAClockChange, ([windows, fromMs]) => checkFirstInstant(windows, fromMs)),
      { numRuns: 300 },
    );
  }, 60_000);
});

describe('time_windows validation names the offending field', () => {
  const NY = 'America/New_York';
  const jobFields = (timeWindows: unknown): string[] => fieldsOf(detailsOf(jobInputSchema, { time_windows: timeWindows }));

  test('valid windows on a job and on a job type are accepted as given', () => {
    const windows = [window('05:00', '07:00', NY), window('22:00', '02:00', 'Asia/Kolkata')];
    expect(parseWith(jobInputSchema, { time_windows: windows }).time_windows).toEqual(windows);
    expect(parseWith(jobTypeInputSchema, { target: { kind: 'handler', name: 'echo' }, time_windows: windows }).time_windows).toEqual(windows);
  });

  test('null and absent both mean no windows of its own', () => {
    expect(parseWith(jobInputSchema, { time_windows: null }).time_windows).toBeNull();
    expect(parseWith(jobInputSchema, {}).time_windows).toBeUndefined();
  });

  test('a time not on a 24-hour HH:MM clock names start or end', () => {
    expect(jobFields([window('5:00', '07:00', NY)])).toEqual(['time_windows.0.start']);
    expect(jobFields([window('05:00', '24:00', NY)])).toEqual(['time_windows.0.end']);
    expect(jobFields([window('05:00', '07:60', NY)])).toEqual(['time_windows.0.end']);
    expect(jobFields([window('5am', '07:00', NY)])).toEqual(['time_windows.0.start']);
  });

  test('a zone that is not an IANA zone names tz', () => {
    expect(jobFields([window('05:00', '07:00', NY), window('05:00', '07:00', 'Mars/Olympus_Mons')])).toEqual(['time_windows.1.tz']);
    expect(jobFields([window('05:00', '07:00', '+05:00')])).toEqual(['time_windows.0.tz']);
  });

  test('a window starting when it ends names end', () => {
    expect(jobFields([window('05:00', '05:00', NY)])).toEqual(['time_windows.0.end']);
  });

  test('no windows, or more than 24, names time_windows', () => {
    expect(jobFields([])).toEqual(['time_windows']);
    expect(jobFields(Array.from({ length: 25 }, () => window('05:00', '07:00', NY)))).toEqual(['time_windows']);
  });

  test('a missing or unknown field inside a window is named with its path', () => {
    expect(jobFields([{ start: '05:00', end: '07:00' }])).toEqual(['time_windows.0.tz']);
    expect(jobFields([{ ...window('05:00', '07:00', NY), days: ['mon'] }])).toEqual(['time_windows.0.days']);
  });

  test('a job type names the same fields', () => {
    const details = detailsOf(jobTypeInputSchema, { target: { kind: 'handler', name: 'echo' }, time_windows: [window('05:00', '07:00', 'Nowhere')] });
    expect(fieldsOf(details)).toEqual(['time_windows.0.tz']);
  });
});
