/** Recurring schedules: fire times of cron in a zone, across daylight-saving changes, and what a late poll fires. */
import fc from 'fast-check';
import { jobTypeFromInput } from '../../../support/job-types.js';
import { IANAZone } from 'luxon';
import { CronExpression } from 'cron-parser';
import { describe, expect, test, vi } from 'vitest';
import { fireTimesAfter, latestFireTimes, type CronSpec } from '../../../../lib/domain/cron.js';
import { ValidationError, type FieldIssue } from '../../../../lib/domain/errors.js';
import { eventForUnstartedJob } from '../../../../lib/domain/lifecycle-events.js';
import { newJob } from '../../../../lib/domain/new-job.js';
import { dueFires, firstFireOf, scheduledJobId, type Schedule, type ScheduleDefinition } from '../../../../lib/domain/schedule.js';
import { jobTypeInputSchema } from '../../../../lib/wire/job-types.js';
import { lifecycleEventDetail } from '../../../../lib/wire/lifecycle-events.js';
import { parseWith } from '../../../../lib/wire/parse.js';

const at = (iso: string): number => Date.parse(iso);
const isos = (times: number[]): string[] => times.map((time) => new Date(time).toISOString().replace('.000Z', 'Z'));
const next = (spec: CronSpec, fromIso: string, count: number): string[] => isos(fireTimesAfter(spec, at(fromIso), count));

const NEW_YORK = 'America/New_York';
const SYDNEY = 'Australia/Sydney';

function fieldOf(run: () => unknown): string | undefined {
  try {
    run();
  } catch (error) {
    if (error instanceof ValidationError) return error.details.map((issue: FieldIssue) => issue.field).join(',');
    throw error;
  }
  return undefined;
}

describe('fire times', () => {
  test('weekdays at 05:00 in New York are 10:00 UTC in winter', () => {
    expect(next({ cron: '0 5 * * 1-5', tz: NEW_YORK }, '2026-01-01T00:00:00Z', 3)).toEqual([
      '2026-01-01T10:00:00Z',
      '2026-01-02T10:00:00Z',
      '2026-01-05T10:00:00Z',
    ]);
  });

  test('six fields count seconds', () => {
    expect(next({ cron: '*/20 * * * * *', tz: 'UTC' }, '2026-04-03T12:00:00Z', 3)).toEqual([
      '2026-04-03T12:00:20Z',
      '2026-04-03T12:00:40Z',
      '2026-04-03T12:01:00Z',
    ]);
  });

  test('fire times are strictly after the instant asked from', () => {
    expect(next({ cron: '0 * * * *', tz: 'UTC' }, '2026-04-03T12:00:00Z', 1)).toEqual(['2026-04-03T13:00:00Z']);
  });
});

describe('spring forward: a local time that does not exist fires once, at the end of the gap', () => {
  test('New York, 2026-03-08: 02:30 fires at 03:00 EDT', () => {
    expect(next({ cron: '30 2 * * *', tz: NEW_YORK }, '2026-03-07T00:00:00Z', 3)).toEqual([
      '2026-03-07T07:30:00Z', // 02:30 EST
      '2026-03-08T07:00:00Z', // 03:00 EDT: 02:30 never happened
      '2026-03-09T06:30:00Z', // 02:30 EDT
    ]);
  });

  test('New York, 2026-03-08: every 30 minutes, the skipped 02:00 and 02:30 are the one fire at 03:00', () => {
    expect(next({ cron: '*/30 * * * *', tz: NEW_YORK }, '2026-03-08T06:15:00Z', 4)).toEqual([
      '2026-03-08T06:30:00Z', // 01:30 EST
      '2026-03-08T07:00:00Z', // 03:00 EDT
      '2026-03-08T07:30:00Z', // 03:30 EDT
      '2026-03-08T08:00:00Z',
    ]);
  });

  test('Sydney, 2026-10-04: 02:30 fires at 03:00 AEDT', () => {
    expect(next({ cron: '30 2 * * *', tz: SYDNEY }, '2026-10-02T12:00:00Z', 3)).toEqual([
      '2026-10-02T16:30:00Z', // 02:30 AEST on the 3rd
      '2026-10-03T16:00:00Z', // 03:00 AEDT on the 4th
      '2026-10-04T15:30:00Z', // 02:30 AEDT on the 5th
    ]);
  });

  test('looking back over the gap finds the same fire as looking forward', () => {
    const spec = { cron: '30 2 * * *', tz: NEW_YORK };
    expect(isos(latestFireTimes(spec, at('2026-03-07T00:00:00Z'), at('2026-03-09T12:00:00Z'), 10))).toEqual([
      '2026-03-07T07:30:00Z',
      '2026-03-08T07:00:00Z',
      '2026-03-09T06:30:00Z',
    ]);
  });
});

describe('fall back: a local time that happens twice fires once, the first time', () => {
  test('New York, 2026-11-01: 01:30 fires at 01:30 EDT only', () => {
    expect(next({ cron: '30 1 * * *', tz: NEW_YORK }, '2026-10-31T12:00:00Z', 2)).toEqual([
      '2026-11-01T05:30:00Z', // 01:30 EDT
      '2026-11-02T06:30:00Z', // 01:30 EST, the next day
    ]);
  });

  test('New York, 2026-11-01: every 30 minutes, the repeated hour is not fired again', () => {
    expect(next({ cron: '*/30 * * * *', tz: NEW_YORK }, '2026-11-01T04:45:00Z', 4)).toEqual([
      '2026-11-01T05:00:00Z', // 01:00 EDT
      '2026-11-01T05:30:00Z', // 01:30 EDT
      '2026-11-01T07:00:00Z', // 02:00 EST: 01:00 and 01:30 EST came before
      '2026-11-01T07:30:00Z',
    ]);
  });

  test('New York, 2026-11-01: every second, the schedule goes on after the repeated hour, not ending in it', () => {
    const spec = { cron: '* * * * * *', tz: NEW_YORK };
    expect(next(spec, '2026-11-01T05:59:58Z', 3)).toEqual(['2026-11-01T05:59:59Z', '2026-11-01T07:00:00Z', '2026-11-01T07:00:01Z']);
    expect(next(spec, '2026-11-01T06:30:00Z', 1)).toEqual(['2026-11-01T07:00:00Z']);
    expect(isos(latestFireTimes(spec, at('2026-11-01T05:00:00Z'), at('2026-11-01T06:30:00Z'), 2))).toEqual(['2026-11-01T05:59:58Z', '2026-11-01T05:59:59Z']);
  });

  test('New York, 2026-11-01: every minute, a poll inside the repeated hour fires nothing and keeps the next fire at 02:00 EST', () => {
    const everyMinute = { cron: '* * * * *', tz: NEW_YORK };
    expect(next(everyMinute, '2026-11-01T06:10:00Z', 1)).toEqual(['2026-11-01T07:00:00Z']);
  });

  test('Sydney, 2026-04-05: 02:30 fires at 02:30 AEDT only', () => {
    expect(next({ cron: '30 2 * * *', tz: SYDNEY }, '2026-04-03T12:00:00Z', 3)).toEqual([
      '2026-04-03T15:30:00Z', // 02:30 AEDT on the 4th
      '2026-04-04T15:30:00Z', // 02:30 AEDT on the 5th, before the clocks go back at 03:00
      '2026-04-05T16:30:00Z', // 02:30 AEST on the 6th
    ]);
  });
});

describe('forward and backward agree, in any zone, across 2026', () => {
  const crons = ['* * * * *', '*/30 * * * *', '30 2 * * *', '0 1 * * 0', '15 */2 * * *', '*/20 * * * * *', '0 0 1 * *'];
  // Lord Howe Island's half-hour changes are left to a test of their own: cron-parser fails next to them.
  const zones = ['UTC', NEW_YORK, SYDNEY, 'Europe/Berlin', 'America/Santiago', 'Asia/Kolkata', 'Europe/London'];
  const instant = fc.integer({ min: at('2026-01-01T00:00:00Z'), max: at('2026-12-31T00:00:00Z') });

  /** The next two fire times after `fromMs` exist, and looking back from the second finds both. */
  function expectForwardAndBackAgree(spec: { cron: string; tz: string }, fromMs: number): void {
    const [first, second] = fireTimesAfter(spec, fromMs, 2);
    expect(first).toBeGreaterThan(fromMs);
    expect(second).toBeGreaterThan(first!);
    expect(latestFireTimes(spec, fromMs + 1, second!, 2)).toEqual([first, second]);
  }

  test('the next fire time exists, and looking back from it finds it as the latest', () => {
    fc.assert(
      fc.property(fc.constantFrom(...crons), fc.constantFrom(...zones), instant, (cron, tz, fromMs) => {
        expectForwardAndBackAgree({ cron, tz }, fromMs);
      }),
      { numRuns: 150 },
    );
  }, 30_000);

  /** Each zone's 2026 offset changes, to the hour. */
  const changes = zones.flatMap((tz) => {
    const zone = IANAZone.create(tz);
    const found: { tz: string; atMs: number }[] = [];
    for (let hourMs = at('2026-01-01T00:00:00Z'); hourMs < at('2027-01-01T00:00:00Z'); hourMs += 3_600_000) {
      if (zone.offset(hourMs) !== zone.offset(hourMs + 3_600_000)) found.push({ tz, atMs: hourMs });
    }
    return found;
  });

  test('within three hours of every 2026 offset change, too', () => {
    expect(changes.length).toBeGreaterThanOrEqual(10);
    fc.assert(
      fc.property(fc.constantFrom(...crons), fc.constantFrom(...changes), fc.integer({ min: -3 * 3_600_000, max: 3 * 3_600_000 }), (cron, change, aroundMs) => {
        expectForwardAndBackAgree({ cron, tz: change.tz }, change.atMs + aroundMs);
      }),
      { numRuns: 200 },
    );
  }, 30_000);
});

const definition = (overrides: Partial<ScheduleDefinition> = {}): ScheduleDefinition => ({
  cron: '0 5 * * *',
  tz: 'UTC',
  jobType: 'report',
  data: null,
  priority: 100,
  weight: 1,
  overlap: 'allow',
  catchUp: 'latest',
  ...overrides,
});

test('next to a change the cron library fails on (Lord Howe Island, 2026-04-05), a schedule goes on rather than end', () => {
  expect(next({ cron: '0 1 * * 0', tz: 'Australia/Lord_Howe' }, '2026-04-04T14:00:00Z', 1)).toEqual(['2026-04-11T14:30:00Z']);
});

describe('validation', () => {
  const nowMs = at('2026-01-01T00:00:00Z');

  test.each([
    ['four fields', '* * * *'],
    ['seven fields', '0 0 0 * * * *'],
    ['an out-of-range minute', '61 * * * *'],
    ['a day February never has', '0 0 30 2 *'],
    ['letters that name nothing', 'a b c d e'],
    ['a huge string', `${'1,'.repeat(5_000)}1 * * * *`],
    ['nested brackets', '((((((* * * * *))))))'],
    ['an unknown alias', '@reboot'],
  ])('a cron with %s is refused naming cron', (_, cron) => {
    expect(fieldOf(() => firstFireOf(definition({ cron }), nowMs))).toBe('cron');
  });

  test.each(['Mars/Olympus_Mons', 'EST5EDT;rm', 'x'.repeat(500)])('zone %s is refused naming tz', (tz) => {
    expect(fieldOf(() => firstFireOf(definition({ tz }), nowMs))).toBe('tz');
  });

  test('end_at before start_at is refused naming end_at', () => {
    expect(fieldOf(() => firstFireOf(definition({ startAtMs: nowMs + 86_400_000, endAtMs: nowMs }), nowMs))).toBe('end_at');
  });

  test('a window between start_at and end_at holding no fire time is refused naming end_at', () => {
    expect(fieldOf(() => firstFireOf(definition({ startAtMs: at('2026-02-01T06:00:00Z'), endAtMs: at('2026-02-01T07:00:00Z') }), nowMs))).toBe('end_at');
  });

  test('a start_at decades ahead is refused naming start_at', () => {
    expect(fieldOf(() => firstFireOf(definition({ startAtMs: at('9999-01-01T00:00:00Z') }), nowMs))).toBe('start_at');
  });

  test('the first fire is the first fire time at or after start_at', () => {
    expect(isos([firstFireOf(definition({ startAtMs: at('2026-03-01T05:00:00Z') }), nowMs)])).toEqual(['2026-03-01T05:00:00Z']);
  });
});

describe('what a poll fires', () => {
  const schedule = (overrides: Partial<Schedule>): Schedule => ({
    ...definition({ cron: '* * * * *' }),
    name: 'tick',
    paused: false,
    nextFireAtMs: at('2026-01-01T10:00:00Z'),
    revision: 1,
    createdAtMs: 0,
    updatedAtMs: 0,
    ...overrides,
  });
  const anHourLate = at('2026-01-01T11:00:30Z');

  test('a poll before the next fire time fires nothing', () => {
    expect(dueFires(schedule({}), at('2026-01-01T09:59:59Z')).fireAtMs).toEqual([]);
  });

  test('on time, the due time fires and the next one is the following minute', () => {
    const fires = dueFires(schedule({}), at('2026-01-01T10:00:01Z'));
    expect(isos(fires.fireAtMs)).toEqual(['2026-01-01T10:00:00Z']);
    expect(isos([fires.nextFireAtMs!])).toEqual(['2026-01-01T10:01:00Z']);
  });

  test('a poll at the fire time to the millisecond fires it', () => {
    expect(isos(dueFires(schedule({}), at('2026-01-01T10:00:00Z')).fireAtMs)).toEqual(['2026-01-01T10:00:00Z']);
    expect(isos(dueFires(schedule({ cron: '* * * * * *' }), at('2026-01-01T10:00:00Z')).fireAtMs)).toEqual(['2026-01-01T10:00:00Z']);
  });

  test.each(['* 2 * * *', '*/2 2 * * *', '* * 2 * * *'])('%s in New York, polled a second after the 2026-03-08 gap, fires at its end and goes on to the next day', (cron) => {
    const gapEnd = at('2026-03-08T07:00:00Z');
    const fires = dueFires(schedule({ cron, tz: NEW_YORK, nextFireAtMs: gapEnd }), gapEnd + 800);
    expect(isos(fires.fireAtMs)).toEqual(['2026-03-08T07:00:00Z']);
    expect(isos([fires.nextFireAtMs!])).toEqual(['2026-03-09T06:00:00Z']);
  });

  test.each(['0 */2 * * *', '0 2,4 * * *', '*/5 2 * * *'])('%s in New York fires the 2026-03-08 gap time at its end when polled then', (cron) => {
    const gapEnd = at('2026-03-08T07:00:00Z');
    expect(isos(dueFires(schedule({ cron, tz: NEW_YORK, nextFireAtMs: gapEnd }), gapEnd + 800).fireAtMs)).toEqual(['2026-03-08T07:00:00Z']);
  });

  test('catch_up latest fires only the most recent of an hour of missed times', () => {
    expect(isos(dueFires(schedule({ catchUp: 'latest' }), anHourLate).fireAtMs)).toEqual(['2026-01-01T11:00:00Z']);
  });

  test('catch_up all fires every missed time, up to 100, the latest ones', () => {
    const fires = dueFires(schedule({ catchUp: 'all' }), at('2026-01-01T12:00:30Z')).fireAtMs;
    expect(fires).toHaveLength(100);
    expect(isos([fires[0]!, fires.at(-1)!])).toEqual(['2026-01-01T10:21:00Z', '2026-01-01T12:00:00Z']);
  });

  test('catch_up all after a short outage fires each missed time once', () => {
    expect(dueFires(schedule({ catchUp: 'all' }), at('2026-01-01T10:04:30Z')).fireAtMs).toHaveLength(5);
  });

  test('catch_up none fires a time that is due now, but none of those missed', () => {
    const hourly = schedule({ catchUp: 'none', cron: '0 * * * *' });
    expect(dueFires(hourly, at('2026-01-01T10:00:20Z')).fireAtMs).toHaveLength(1);
    expect(dueFires(hourly, at('2026-01-01T11:30:00Z')).fireAtMs).toEqual([]);
  });

  test('after end_at nothing fires and no fire time is left', () => {
    expect(dueFires(schedule({ endAtMs: at('2026-01-01T10:00:00Z') }), anHourLate)).toEqual({ fireAtMs: [], nextFireAtMs: null });
  });

  test('a per-second schedule missed for a day finds its latest times without walking the day', () => {
    // Counted in the cron library's steps, not timed: a walk over the day would take 86 400 of them.
    const previous = vi.spyOn(CronExpression.prototype, 'prev');
    const following = vi.spyOn(CronExpression.prototype, 'next');
    try {
      const fires = dueFires(schedule({ cron: '* * * * * *', catchUp: 'all' }), at('2026-01-02T10:00:00Z')).fireAtMs;
      expect(fires).toHaveLength(100);
      expect(isos([fires.at(-1)!])).toEqual(['2026-01-02T10:00:00Z']);
      expect(previous.mock.calls.length + following.mock.calls.length).toBeLessThan(1_000);
    } finally {
      previous.mockRestore();
      following.mockRestore();
    }
  });
});

test('the job id is the schedule and the fire time', () => {
  expect(scheduledJobId('nightly', at('2026-03-08T07:00:00Z'))).toBe('nightly@2026-03-08T07:00:00Z');
});

describe('the jobs a schedule makes name it', () => {
  const jobType = jobTypeFromInput('report', parseWith(jobTypeInputSchema, { target: { kind: 'handler', name: 'echo' } }), { createdAtMs: 0, updatedAtMs: 0 }, false);
  const input = { data: null, priority: 100, weight: 1 };

  test('in their lifecycle events', () => {
    const job = newJob(jobType, 'nightly@2026-03-08T07:00:00Z', { ...input, schedule: 'nightly' }, 0);
    expect(lifecycleEventDetail(eventForUnstartedJob({ ...job, status: 'cancelled' }, 'job.cancelled'))).toMatchObject({ schedule: 'nightly' });
  });

  test('and the events of other jobs carry no schedule field', () => {
    const job = newJob(jobType, 'job-1', input, 0);
    expect(lifecycleEventDetail(eventForUnstartedJob({ ...job, status: 'cancelled' }, 'job.cancelled'))).not.toHaveProperty('schedule');
  });
});
