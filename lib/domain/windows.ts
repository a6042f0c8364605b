/**
 * Time windows: the hours of the local day in which a job may start (invariant 7, docs/concepts/design.md#invariants).
 *
 * A window `{start, end, tz}` opens every day at `start` on the clock of the IANA zone `tz`
 * and closes at `end`, on the next day when `end` is before `start` (it crosses midnight).
 * The window is the span of time between those two instants, the opening included and the
 * closing not. Each clock time is resolved to the first instant at which the zone's clock
 * reads that time or later, which decides the days the clocks change:
 * - spring forward: a time in the gap resolves to the first instant after the gap (02:30 in
 *   New York on 2026-03-08 is 03:00 EDT), so a window starting in the gap opens when the gap
 *   ends and one ending in it closes there;
 * - fall back: a time in the repeated hour resolves to its first occurrence (01:30 in New York
 *   on 2026-11-01 is 01:30 EDT), so a window ending in the repeated hour closes on its first
 *   pass and one spanning it stays open an hour longer, as long as the clock says it should;
 * - a window lying wholly in a gap (02:00–02:30 in New York on 2026-03-08) spans nothing and
 *   does not open that day: its next opening is the next day's.
 *
 * All zone rules come from luxon (the platform's tz database); nothing here adds offsets.
 */
import { DateTime } from 'luxon';

export interface TimeWindow {
  /** Local opening time, `HH:MM` on a 24-hour clock. */
  start: string;
  /** Local closing time, `HH:MM`; before `start` when the window crosses midnight. */
  end: string;
  /** An IANA time zone, e.g. `America/New_York`. */
  tz: string;
}

export const MAX_TIME_WINDOWS = 24;

const DAY_MS = 86_400_000;

/** A calendar date as the epoch ms of its midnight in UTC, where every day is DAY_MS long: stepping days is plain addition. */
type LocalDate = number;

function localDateOf(epochMs: number, tz: string): LocalDate {
  const local = DateTime.fromMillis(epochMs, { zone: tz });
  return Date.UTC(local.year, local.month - 1, local.day);
}

/** What the clock in `tz` reads at `epochMs`, as a number that orders readings (the reading taken as UTC). */
function clockReadingMs(epochMs: number, tz: string): number {
  return DateTime.fromMillis(epochMs, { zone: tz }).setZone('UTC', { keepLocalTime: true }).toMillis();
}

/**
 * Resolved clock times, by zone, date and time: the zone rules behind them do not change while
 * the process runs, and a worker batch or a scan over several days asks for the same ones again.
 */
const resolvedClockTimes = new Map<string, number>();
const MAX_RESOLVED_CLOCK_TIMES = 10_000;

function resolveClockTime(date: LocalDate, time: string, tz: string): number {
  const key = `${tz} ${date} ${time}`;
  let resolvedMs = resolvedClockTimes.get(key);
  if (resolvedMs === undefined) {
    if (resolvedClockTimes.size >= MAX_RESOLVED_CLOCK_TIMES) resolvedClockTimes.clear();
    resolvedMs = firstInstantReading(date, time, tz);
    resolvedClockTimes.set(key, resolvedMs);
  }
  return resolvedMs;
}

/** The first instant at which the clock in `tz` reads `time` on `date`, or later. */
function firstInstantReading(date: LocalDate, time: string, tz: string): number {
  const [hour, minute] = time.split(':').map(Number) as [number, number];
  const { year, month, day } = DateTime.fromMillis(date, { zone: 'UTC' });
  const wanted = { year, month, day, hour, minute };
  const wantedReadingMs = DateTime.fromObject(wanted, { zone: 'UTC' }).toMillis();
  const candidate = DateTime.fromObject(wanted, { zone: tz });
  if (clockReadingMs(candidate.toMillis(), tz) === wantedReadingMs) {
    // luxon takes the later occurrence of a repeated time; the window means the first.
    return Math.min(...candidate.getPossibleOffsets().map((occurrence) => occurrence.toMillis()));
  }
  // The time falls in a gap: luxon moved it forward by the gap's length, so the gap ended within the
  // day before `candidate`. Readings only grow across that day: find the first one at `time` or later.
  let beforeMs = candidate.toMillis() - DAY_MS;
  let atOrAfterMs = candidate.toMillis();
  while (atOrAfterMs - beforeMs > 1) {
    const middleMs = Math.floor((beforeMs + atOrAfterMs) / 2);
    if (clockReadingMs(middleMs, tz) >= wantedReadingMs) atOrAfterMs = middleMs;
    else beforeMs = middleMs;
  }
  return atOrAfterMs;
}

/** The window's span that opens on `date`: [openMs, closeMs), empty when it lies wholly in a gap. */
function spanOpeningOn(window: TimeWindow, date: LocalDate): { openMs: number; closeMs: number } {
  const closingDate = window.end < window.start ? date + DAY_MS : date;
  return {
    openMs: resolveClockTime(date, window.start, window.tz),
    closeMs: resolveClockTime(closingDate, window.end, window.tz),
  };
}

/**
 * A window opens on at least one day of any week (a zone skips at most a day), and the span
 * opening the day before may still be open (it crosses midnight).
 */
const FIRST_DAY_OFFSET = -1;
const LAST_DAY_OFFSET = 7;

function firstInstantInWindow(window: TimeWindow, fromMs: number): number {
  const fromDate = localDateOf(fromMs, window.tz);
  for (let offset = FIRST_DAY_OFFSET; offset <= LAST_DAY_OFFSET; offset++) {
    const { openMs, closeMs } = spanOpeningOn(window, fromDate + offset * DAY_MS);
    if (openMs < closeMs && closeMs > fromMs) return Math.max(openMs, fromMs);
  }
  throw new Error(`the window ${window.start}-${window.end} ${window.tz} does not open within a week of ${new Date(fromMs).toISOString()}`);
}

/** The first instant at or after `fromMs` that lies inside one of the windows. */
export function firstInstantInWindows(windows: readonly TimeWindow[], fromMs: number): number {
  return Math.min(...windows.map((window) => firstInstantInWindow(window, fromMs)));
}

export function isInWindows(windows: readonly TimeWindow[], atMs: number): boolean {
  return firstInstantInWindows(windows, atMs) === atMs;
}

/** A job's own windows replace its type's; neither means any time will do. */
export function effectiveWindows(
  job: { timeWindows?: readonly TimeWindow[] | undefined },
  jobType: { timeWindows?: readonly TimeWindow[] | undefined },
): readonly TimeWindow[] | undefined {
  return job.timeWindows ?? jobType.timeWindows;
}

/** The earliest a job may start when it is ready at `readyAtMs`: then, or the next window opening. */
export function earliestStartMs(windows: readonly TimeWindow[] | undefined, readyAtMs: number): number {
  return windows === undefined ? readyAtMs : firstInstantInWindows(windows, readyAtMs);
}
