/** Lifecycle events as subscribers see them on the bus. */
import type { LifecycleEvent } from '../domain/lifecycle-events.js';

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
    ...(event.schedule !== undefined ? { schedule: event.schedule } : {}),
    ...(event.traceparent !== undefined ? { traceparent: event.traceparent } : {}),
    ...(event.tags !== undefined ? { tags: event.tags } : {}),
    ...(event.cancelledBy !== undefined ? { cancelled_by: event.cancelledBy } : {}),
  };
}
