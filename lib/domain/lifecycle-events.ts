/**
 * Lifecycle events: `job.succeeded`, `job.failed` (an attempt failed),
 * `job.dead` (it failed with no attempt left), `job.expired`, `job.cancelled`.
 * They are published right after the write that made them true succeeded (an
 * attempt ended, a job was cancelled or expired), from what that write
 * returned, so they cost no extra read or write. Publishing is best effort: an
 * outcome is never undone because its event could not be delivered.
 */
import type { AttemptEnding, NextState } from './attempts.js';
import type { AttemptError, AttemptOutcome, Job, JobStatus } from './job.js';

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
  /** The schedule that made the job, when one did. */
  schedule?: string;
  /** The job's trace context, when it has one: an event is part of the trace its job was enqueued in. */
  traceparent?: string;
  /** The job's tags, when it has any: a subscriber's rule may match on them. */
  tags?: string[];
  /** Who cancelled the job (`job.cancelled`): the id of the key that asked, or of the bulk operation. */
  cancelledBy?: string;
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

/** What an event says of where its job came from: the schedule that made it, the trace it was enqueued in, its tags. */
const originOf = (job: Job): { schedule?: string; traceparent?: string; tags?: string[] } => ({
  ...(job.schedule !== undefined ? { schedule: job.schedule } : {}),
  ...(job.traceparent !== undefined ? { traceparent: job.traceparent } : {}),
  ...(job.tags !== undefined ? { tags: job.tags } : {}),
});

/** Who cancelled the job, for its `job.cancelled` event. */
const cancellerOf = (job: Job): { cancelledBy?: string } => (job.cancelledBy !== undefined ? { cancelledBy: job.cancelledBy } : {});

/** The events for an attempt that ended as `ending` and moved the job (now `after`) to `next`. */
export function eventsForEndedAttempt(after: Job, ending: AttemptEnding, next: NextState): LifecycleEvent[] {
  const base = { type: after.type, id: after.id, attempt: after.attempt, status: after.status, atMs: after.updatedAtMs, ...originOf(after) };
  if (ending.outcome === 'succeeded') return [{ ...base, name: 'job.succeeded', outcome: 'succeeded' }];
  if (ending.outcome === 'expired') return [{ ...base, name: 'job.expired', outcome: 'expired' }];
  if (ending.outcome === 'cancelled') return [{ ...base, name: 'job.cancelled', outcome: 'cancelled', ...cancellerOf(after) }];
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
    ...originOf(job),
    ...(name === 'job.cancelled' ? cancellerOf(job) : {}),
  };
}

