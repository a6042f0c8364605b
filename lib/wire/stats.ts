/** A type's stats as the API returns them, and `GET /v1/stats` as a whole. */
import { z } from 'zod';
import type { TypeStats } from '../domain/stats.js';
import { rosterEntrySchema } from './roster.js';

export const typeStatsSchema = z
  .strictObject({
    due: z.number().int(),
    scheduled: z.number().int(),
    running: z.number().int(),
    awaiting_callback: z.number().int(),
    oldest_due_lag_ms: z.number(),
    in_flight_weight: z.number().int().nullable().meta({ description: 'null without a concurrency limit' }),
  })
  .meta({ id: 'TypeStats' });

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

export const statsSchema = z.strictObject({
  job_types: z.array(
    typeStatsSchema.extend({ name: z.string(), concurrency: z.number().int().nullable(), paused: z.boolean() }),
  ),
  pollers: z.array(rosterEntrySchema.extend({ shards: z.array(z.number().int()) })),
  workers: z.array(rosterEntrySchema),
});
