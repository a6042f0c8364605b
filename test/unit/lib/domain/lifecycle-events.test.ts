/** The in-memory publisher of lifecycle events, which the local runtime and the tests subscribe to (lib/domain/lifecycle-events.ts). */
import { describe, expect, test } from 'vitest';
import {
  createMemoryPublisher,
  discardLifecycleEvents,
  eventForUnstartedJob,
  eventsForEndedAttempt,
  type LifecycleEvent,
} from '../../../../lib/domain/lifecycle-events.js';
import { runningJob, T0 } from '../../../support/jobs.js';

const event = (id: string): LifecycleEvent => ({ name: 'job.succeeded', type: 't', id, attempt: 1, outcome: 'succeeded', status: 'succeeded', atMs: 0 });

test('the memory publisher keeps every event in order, and hands each to its subscriber', async () => {
  const seen: string[] = [];
  const publisher = createMemoryPublisher((published) => seen.push(published.id));
  await publisher.publish([event('a'), event('b')]);
  await publisher.publish([event('c')]);
  expect(publisher.events.map((kept) => kept.id)).toEqual(['a', 'b', 'c']);
  expect(seen).toEqual(['a', 'b', 'c']);
});

test('the memory publisher keeps only the newest events past its limit', async () => {
  const publisher = createMemoryPublisher(undefined, 2);
  await publisher.publish([event('a'), event('b')]);
  expect(publisher.events.map((kept) => kept.id)).toEqual(['a', 'b']);
  await publisher.publish([event('c')]);
  expect(publisher.events.map((kept) => kept.id)).toEqual(['b', 'c']);
});

test('the discarding publisher takes events and keeps nothing', async () => {
  await expect(discardLifecycleEvents.publish([event('a')])).resolves.toBeUndefined();
});

describe('the events of an ended attempt', () => {
  const ended = runningJob({ status: 'expired', attempt: 2, updatedAtMs: T0 + 5 });

  test('an attempt that expired is one job.expired event, stamped when the job changed', () => {
    expect(eventsForEndedAttempt(ended, { outcome: 'expired' }, { status: 'expired', outcome: 'expired' })).toStrictEqual([
      { type: 'emails', id: 'job_1', attempt: 2, status: 'expired', atMs: T0 + 5, name: 'job.expired', outcome: 'expired' },
    ]);
  });

  test('an attempt cancelled is one job.cancelled event naming who cancelled it, when the job says', () => {
    const cancelled = { ...ended, status: 'cancelled' as const, cancelledBy: 'key-1' };
    expect(eventsForEndedAttempt(cancelled, { outcome: 'cancelled' }, { status: 'cancelled', outcome: 'cancelled' })).toStrictEqual([
      { type: 'emails', id: 'job_1', attempt: 2, status: 'cancelled', atMs: T0 + 5, name: 'job.cancelled', outcome: 'cancelled', cancelledBy: 'key-1' },
    ]);
    const [event] = eventsForEndedAttempt({ ...cancelled, cancelledBy: undefined }, { outcome: 'cancelled' }, { status: 'cancelled', outcome: 'cancelled' });
    expect(Object.keys(event!)).not.toContain('cancelledBy');
  });

  test("an event carries the job's schedule, trace and tags, and only those it has", () => {
    const origin = { schedule: 'nightly', traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', tags: ['blue'] };
    const [event] = eventsForEndedAttempt({ ...ended, ...origin }, { outcome: 'succeeded' }, { status: 'succeeded', outcome: 'succeeded' });
    expect(event).toMatchObject(origin);
    const [bare] = eventsForEndedAttempt(ended, { outcome: 'succeeded' }, { status: 'succeeded', outcome: 'succeeded' });
    expect(Object.keys(bare!)).not.toContain('schedule');
    expect(Object.keys(bare!)).not.toContain('traceparent');
    expect(Object.keys(bare!)).not.toContain('tags');
  });
});

describe('the event of a job that ended without an attempt', () => {
  const waiting = runningJob({ status: 'cancelled', attempt: 0, updatedAtMs: T0 + 5, cancelledBy: 'op_1', tags: ['blue'] });

  test('a cancelled job is a job.cancelled event of outcome cancelled, naming who cancelled it', () => {
    expect(eventForUnstartedJob(waiting, 'job.cancelled')).toStrictEqual({
      name: 'job.cancelled',
      type: 'emails',
      id: 'job_1',
      attempt: 0,
      outcome: 'cancelled',
      status: 'cancelled',
      atMs: T0 + 5,
      tags: ['blue'],
      cancelledBy: 'op_1',
    });
  });

  test('a job that expired while it waited is a job.expired event of outcome expired, naming no canceller', () => {
    const event = eventForUnstartedJob({ ...waiting, status: 'expired' }, 'job.expired');
    expect(event).toMatchObject({ name: 'job.expired', outcome: 'expired', status: 'expired' });
    expect(Object.keys(event)).not.toContain('cancelledBy');
  });
});
