/**
 * Lifecycle events: `job.succeeded`, `job.failed` (an attempt failed),
 * `job.dead` (it failed with no attempt left), `job.expired`, `job.cancelled`.
 * They are published right after the write that made them true succeeded (an
 * attempt ended, a job was cancelled or expired), from what that write
 * returned, so they cost no extra read or write. Publishing is best effort: an
 * outcome is never undone because its event could not be delivered.
 */
import { PutEventsCommand, type EventBridgeClient, type PutEventsRequestEntry } from '@aws-sdk/client-eventbridge';
import type { AttemptEnding, NextState } from '../queue/claims.js';
import type { AttemptError, AttemptOutcome, Job, JobStatus } from './model.js';

export const LIFECYCLE_EVENT_NAMES = ['job.succeeded', 'job.failed', 'job.dead', 'job.expired', 'job.cancelled'] as const;
export type LifecycleEventName = (typeof LIFECYCLE_EVENT_NAMES)[number];

export interface LifecycleEvent {
  name: LifecycleEventName;
  type: string;
  id: string;
  /** The attempt the event is about; 0 for a job cancelled or expired before its first attempt. */
  attempt: number;
  outcome: AttemptOutcome | 'cancelled';
  /** The job's status after the change. */
  status: JobStatus;
  atMs: number;
  error?: AttemptError;
}

/** Where lifecycle events go. `publish` never rejects: an implementation reports its own delivery failures. */
export interface LifecyclePublisher {
  publish(events: readonly LifecycleEvent[]): Promise<void>;
}

export const discardLifecycleEvents: LifecyclePublisher = { publish: async () => undefined };

/** Keeps the last `limit` events in memory (the local runtime and tests), passing each to `onEvent` too, e.g. to log it. */
export function createMemoryPublisher(
  onEvent?: (event: LifecycleEvent) => void,
  limit = 10_000,
): LifecyclePublisher & { events: LifecycleEvent[] } {
  const events: LifecycleEvent[] = [];
  return {
    events,
    publish: async (batch) => {
      for (const event of batch) {
        events.push(event);
        onEvent?.(event);
      }
      if (events.length > limit) events.splice(0, events.length - limit);
    },
  };
}

/** The events for an attempt that ended as `ending` and moved the job (now `after`) to `next`. */
export function eventsForEndedAttempt(after: Job, ending: AttemptEnding, next: NextState): LifecycleEvent[] {
  const base = { type: after.type, id: after.id, attempt: after.attempt, status: after.status, atMs: after.updatedAtMs };
  if (ending.outcome === 'succeeded') return [{ ...base, name: 'job.succeeded', outcome: 'succeeded' }];
  if (ending.outcome === 'expired') return [{ ...base, name: 'job.expired', outcome: 'expired' }];
  const failed: LifecycleEvent = { ...base, name: 'job.failed', outcome: next.outcome, error: ending.failure.error };
  if (next.status === 'failed') return [failed, { ...failed, name: 'job.dead' }];
  if (next.status === 'expired') return [failed, { ...failed, name: 'job.expired' }];
  return [failed];
}

/** A job that ended without an attempt: cancelled, or expired while it waited. */
export function eventForUnstartedJob(job: Job, name: 'job.cancelled' | 'job.expired'): LifecycleEvent {
  return {
    name,
    type: job.type,
    id: job.id,
    attempt: job.attempt,
    outcome: name === 'job.cancelled' ? 'cancelled' : 'expired',
    status: job.status,
    atMs: job.updatedAtMs,
  };
}

/** The event as subscribers see it: snake_case, like the API. */
export function lifecycleEventDetail(event: LifecycleEvent): Record<string, unknown> {
  return {
    type: event.type,
    id: event.id,
    attempt: event.attempt,
    outcome: event.outcome,
    status: event.status,
    at: new Date(event.atMs).toISOString(),
    error: event.error ?? null,
  };
}

export const LIFECYCLE_EVENT_SOURCE = 'delayed-job-queue';
/** PutEvents takes at most 10 entries per call. */
const PUT_EVENTS_LIMIT = 10;

export interface EventBridgePublisherOptions {
  busName: string;
  /** Events still undelivered after every attempt, with the last error code or message. */
  onUndelivered: (events: LifecycleEvent[], reason: string) => void;
  /** Calls per chunk, the first included; only entries that failed are sent again. @default 3 */
  maxAttempts?: number;
  sleep?: (ms: number) => Promise<void>;
}

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Publishes to an EventBridge bus in chunks of ten. PutEvents may accept some
 * entries of a call and refuse others (throttling, an internal error); only
 * the refused ones are sent again, after a short backoff.
 */
export function createEventBridgePublisher(client: EventBridgeClient, options: EventBridgePublisherOptions): LifecyclePublisher {
  const maxAttempts = options.maxAttempts ?? 3;
  const sleep = options.sleep ?? defaultSleep;
  const toEntry = (event: LifecycleEvent): PutEventsRequestEntry => ({
    EventBusName: options.busName,
    Source: LIFECYCLE_EVENT_SOURCE,
    DetailType: event.name,
    Detail: JSON.stringify(lifecycleEventDetail(event)),
    Time: new Date(event.atMs),
  });
  const publishChunk = async (chunk: LifecycleEvent[]): Promise<void> => {
    let pending = chunk;
    let reason = '';
    for (let attempt = 1; attempt <= maxAttempts && pending.length > 0; attempt++) {
      if (attempt > 1) await sleep(100 * 2 ** (attempt - 2));
      try {
        const { FailedEntryCount, Entries } = await client.send(new PutEventsCommand({ Entries: pending.map(toEntry) }));
        if (!FailedEntryCount) return;
        // Entries come back in request order; a refused one has an ErrorCode and no EventId.
        const refused = pending.filter((_, index) => Entries?.[index]?.ErrorCode !== undefined || Entries?.[index]?.EventId === undefined);
        reason = Entries?.find((entry) => entry.ErrorCode)?.ErrorCode ?? 'entries refused';
        pending = refused;
      } catch (error) {
        reason = error instanceof Error ? error.message : String(error);
      }
    }
    if (pending.length > 0) options.onUndelivered(pending, reason);
  };
  return {
    publish: async (events) => {
      const chunks: LifecycleEvent[][] = [];
      for (let start = 0; start < events.length; start += PUT_EVENTS_LIMIT) chunks.push(events.slice(start, start + PUT_EVENTS_LIMIT));
      await Promise.all(chunks.map(publishChunk));
    },
  };
}
