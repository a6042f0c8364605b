/** A type's stats as the API returns them, and `GET /v1/stats` as a whole. */
import { z } from 'zod';
import { ALARM_STATES, type AlarmStatus } from '../domain/alarms.js';
import type { DeployedCost } from '../domain/deployed-cost.js';
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

const dollarsSchema = z.record(z.string(), z.number());

export const deployedCostSchema = z
  .strictObject({
    since: instantSchema.meta({ description: 'When the meter started: the server\'s start' }),
    prices_as_of: z.string().meta({ description: 'The date of the list prices used' }),
    region: z.string().meta({ description: 'The region whose list prices are used' }),
    units: z.record(z.string(), z.number()).meta({ description: 'Every billed unit counted since, all functions together (lambda_requests, dynamo_db_write_units, ...)' }),
    traffic_dollars: dollarsSchema.meta({ description: 'What the traffic since would have cost deployed, by service' }),
    traffic_dollars_by_function: dollarsSchema.meta({ description: 'The same by function, and gateway for API Gateway itself' }),
    fixed_dollars_per_month: dollarsSchema.meta({ description: 'What the stack costs a month whatever the traffic (its secret, alarms, timer queue polling), by service' }),
    total_dollars: z.number().meta({ description: 'The traffic and the fixed costs over the time since' }),
  })
  .meta({ id: 'DeployedCost' });

const snakeCase = (name: string): string => name.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`);

export function deployedCostToApi(cost: DeployedCost): z.output<typeof deployedCostSchema> {
  return {
    since: new Date(cost.sinceMs).toISOString(),
    prices_as_of: cost.pricesAsOf,
    region: cost.region,
    units: Object.fromEntries(Object.entries(cost.units).map(([name, units]) => [snakeCase(name), units])),
    traffic_dollars: { ...cost.trafficDollars },
    traffic_dollars_by_function: { ...cost.trafficDollarsByFunction },
    fixed_dollars_per_month: { ...cost.fixedDollarsPerMonth },
    total_dollars: cost.totalDollars,
  };
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
  deployed_cost: deployedCostSchema
    .optional()
    .meta({ description: 'What the traffic the server has seen would have cost deployed, where it meters itself (`npm start`); absent on AWS, whose bill says it' }),
});
