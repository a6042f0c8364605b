/** A roster entry as the API returns it. */
import { z } from 'zod';
import type { RosterEntry } from '../domain/roster.js';
import { instantSchema } from './fields.js';

/** A worker's entry; a poller's carries its `shards` too. */
export const rosterEntrySchema = z.strictObject({ id: z.string(), host: z.string(), started_at: instantSchema, last_seen_at: instantSchema });

export function rosterEntryToApi(entry: RosterEntry): Record<string, unknown> {
  return {
    id: entry.id,
    host: entry.host,
    ...(entry.role === 'poller' ? { shards: entry.shards ?? [] } : {}),
    started_at: new Date(entry.startedAtMs).toISOString(),
    last_seen_at: new Date(entry.lastSeenAtMs).toISOString(),
  };
}
