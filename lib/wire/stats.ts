/** A type's stats as the API returns them. */
import type { TypeStats } from '../domain/stats.js';

export function typeStatsToApi(stats: TypeStats): Record<string, unknown> {
  return {
    due: stats.due,
    scheduled: stats.scheduled,
    running: stats.running,
    awaiting_callback: stats.awaitingCallback,
    oldest_due_lag_ms: stats.oldestDueLagMs,
    in_flight_weight: stats.inFlightWeight,
  };
}
