/** A roster entry as the API returns it. */
import type { RosterEntry } from '../domain/roster.js';

export function rosterEntryToApi(entry: RosterEntry): Record<string, unknown> {
  return {
    id: entry.id,
    host: entry.host,
    ...(entry.role === 'poller' ? { shards: entry.shards ?? [] } : {}),
    started_at: new Date(entry.startedAtMs).toISOString(),
    last_seen_at: new Date(entry.lastSeenAtMs).toISOString(),
  };
}
