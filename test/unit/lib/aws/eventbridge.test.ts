import { EventBridgeClient, PutEventsCommand } from '@aws-sdk/client-eventbridge';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, test } from 'vitest';
import { createEventBridgePublisher } from '../../../../lib/aws/eventbridge.js';
import { eventsForEndedAttempt, type LifecycleEvent } from '../../../../lib/domain/lifecycle-events.js';
import { runningJob, T0 } from '../../../support/jobs.js';

const eventBridge = mockClient(EventBridgeClient);
beforeEach(() => eventBridge.reset());

const failure = { error: { class: 'HttpError', message: 'answered 500' }, retryable: true };

describe('which events an ended attempt publishes', () => {
  test('a success is job.succeeded', () => {
    const events = eventsForEndedAttempt(runningJob({ status: 'succeeded', attempt: 2 }), { outcome: 'succeeded' }, { status: 'succeeded', outcome: 'succeeded' });
    expect(events).toEqual([{ name: 'job.succeeded', type: 'emails', id: 'job_1', attempt: 2, status: 'succeeded', outcome: 'succeeded', atMs: T0 }]);
  });

  test('a failure that will be retried is job.failed only', () => {
    const events = eventsForEndedAttempt(runningJob({ status: 'queued' }), { outcome: 'failed', failure }, { status: 'queued', outcome: 'failed', runAfterMs: T0 });
    expect(events.map((event) => event.name)).toEqual(['job.failed']);
    expect(events[0]?.error).toEqual(failure.error);
  });

  test('a failure with no attempt left is job.failed then job.dead', () => {
    const events = eventsForEndedAttempt(runningJob({ status: 'failed' }), { outcome: 'timed_out', failure }, { status: 'failed', outcome: 'timed_out' });
    expect(events.map((event) => [event.name, event.outcome])).toEqual([['job.failed', 'timed_out'], ['job.dead', 'timed_out']]);
  });

  test('a failure whose retry would fall after expires_at is job.failed then job.expired', () => {
    const events = eventsForEndedAttempt(runningJob({ status: 'expired' }), { outcome: 'failed', failure }, { status: 'expired', outcome: 'failed' });
    expect(events.map((event) => event.name)).toEqual(['job.failed', 'job.expired']);
  });
});

describe('publishing to EventBridge', () => {
  const event = (id: string): LifecycleEvent => ({ name: 'job.succeeded', type: 'emails', id, attempt: 1, outcome: 'succeeded', status: 'succeeded', atMs: T0 });
  const undelivered: { events: LifecycleEvent[]; reason: string }[] = [];
  const publisher = () =>
    createEventBridgePublisher(new EventBridgeClient({}), {
      busName: 'jobs-bus',
      sleep: async () => undefined,
      onUndelivered: (events, reason) => undelivered.push({ events, reason }),
    });
  beforeEach(() => (undelivered.length = 0));

  test('each event goes to the bus with its name as detail type and the job as snake_case detail', async () => {
    eventBridge.on(PutEventsCommand).resolves({ FailedEntryCount: 0, Entries: [{ EventId: 'e1' }] });
    await publisher().publish([{ ...event('j1'), name: 'job.failed', outcome: 'failed', status: 'queued', error: failure.error }]);
    const [entry] = eventBridge.commandCalls(PutEventsCommand)[0]?.args[0].input.Entries ?? [];
    expect(entry).toMatchObject({ EventBusName: 'jobs-bus', Source: 'delayed-job-queue', DetailType: 'job.failed', Time: new Date(T0) });
    expect(JSON.parse(entry?.Detail ?? '')).toEqual({
      type: 'emails',
      id: 'j1',
      attempt: 1,
      outcome: 'failed',
      status: 'queued',
      at: new Date(T0).toISOString(),
      error: failure.error,
    });
  });

  test('after a partial failure only the refused entries are sent again', async () => {
    eventBridge
      .on(PutEventsCommand)
      .resolvesOnce({ FailedEntryCount: 1, Entries: [{ EventId: 'e1' }, { ErrorCode: 'ThrottlingException' }, { EventId: 'e3' }] })
      .resolvesOnce({ FailedEntryCount: 0, Entries: [{ EventId: 'e2' }] });
    await publisher().publish([event('j1'), event('j2'), event('j3')]);
    const calls = eventBridge.commandCalls(PutEventsCommand).map((call) => call.args[0].input.Entries?.map((entry) => JSON.parse(entry.Detail ?? '').id));
    expect(calls).toEqual([['j1', 'j2', 'j3'], ['j2']]);
    expect(undelivered).toEqual([]);
  });

  test('entries still refused after every attempt are reported, with the reason, and publish does not throw', async () => {
    // Every call accepts j1 and refuses j2.
    eventBridge.on(PutEventsCommand).callsFake((input: { Entries: { Detail: string }[] }) => {
      const entries = input.Entries.map((entry) => (JSON.parse(entry.Detail).id === 'j2' ? { ErrorCode: 'InternalFailure' } : { EventId: 'e1' }));
      return { FailedEntryCount: entries.filter((entry) => 'ErrorCode' in entry).length, Entries: entries };
    });
    await publisher().publish([event('j1'), event('j2')]);
    expect(eventBridge.commandCalls(PutEventsCommand)).toHaveLength(3);
    expect(undelivered).toEqual([{ events: [event('j2')], reason: 'InternalFailure' }]);
  });

  test('a call that throws is retried whole, and reported if it never succeeds', async () => {
    eventBridge.on(PutEventsCommand).rejects(new Error('network down'));
    await expect(publisher().publish([event('j1')])).resolves.toBeUndefined();
    expect(undelivered).toEqual([{ events: [event('j1')], reason: 'network down' }]);
  });

  test('more than ten events go in calls of ten at most', async () => {
    eventBridge.on(PutEventsCommand).callsFake((input: { Entries: unknown[] }) => ({ FailedEntryCount: 0, Entries: input.Entries.map((_, i) => ({ EventId: `e${i}` })) }));
    await publisher().publish(Array.from({ length: 23 }, (_, i) => event(`j${i}`)));
    expect(eventBridge.commandCalls(PutEventsCommand).map((call) => call.args[0].input.Entries?.length).sort()).toEqual([10, 10, 3]);
  });
});
