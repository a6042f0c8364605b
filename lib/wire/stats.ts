/** A type's stats as the API returns them, and `GET /v1/stats` as a whole. */
import { z } from 'zod';
import { ALARM_STATES, type AlarmStatus } from '../domain/alarms.js';
import type { TypeStats } from '../domain/stats.js';
import { instantSchema } from './fields.js';
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

export const alarmStatusSchema = z
  .strictObject({
    name: z.string(),
    state: z.enum(ALARM_STATES),
    reason: z.string().meta({ description: 'Why it went into its state' }),
    changed_at: instantSchema.meta({ description: 'When it went into its state (its creation, while it has not changed)' }),
  })
  .meta({ id: 'AlarmStatus' });

export function alarmStatusToApi(status: AlarmStatus): z.output<typeof alarmStatusSchema> {
  return { name: status.name, state: status.state, reason: status.reason, changed_at: new Date(status.changedAtMs).toISOString() };
}

export const statsSchema = z.strictObject({
  job_types: z.array(
    typeStatsSchema.extend({ name: z.string(), concurrency: z.number().int().nullable(), paused: z.boolean() }),
  ),
  pollers: z.array(rosterEntrySchema.extend({ shards: z.array(z.number().int()) })),
  workers: z.array(rosterEntrySchema),
  alarms: z
    .array(alarmStatusSchema)
    .optional()
    .meta({ description: "The stack's alarms and their states, where the server evaluates them (`npm start`); absent on AWS, whose are in CloudWatch" }),
});
