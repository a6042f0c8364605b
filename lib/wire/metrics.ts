/** The metrics history as the API returns it. */
import { z } from 'zod';
import { FINISHED_OUTCOMES, lagPercentileMs, MINUTE_MS, type MetricsHistory, type MinuteCounts } from '../domain/metrics.js';
import { instantSchema } from './fields.js';

const metricsMinuteSchema = z
  .strictObject({
    at: instantSchema.meta({ description: 'The minute’s start' }),
    finished: z.record(z.enum(FINISHED_OUTCOMES), z.number().int()),
    lag_p50_ms: z.number().nullable().meta({ description: 'null in a minute without claims' }),
    lag_p99_ms: z.number().nullable(),
  })
  .meta({ id: 'MetricsMinute' });

/** `GET /v1/metrics`: oldest minute first; the last is the current, running one. */
export const metricsSchema = z.strictObject({
  minutes: z.array(metricsMinuteSchema),
  job_types: z.array(z.strictObject({ name: z.string(), minutes: z.array(metricsMinuteSchema) })),
});

function minutesToApi(epochMinutes: number[], minutes: MinuteCounts[]): Record<string, unknown>[] {
  return minutes.map((counts, i) => ({
    at: new Date(epochMinutes[i]! * MINUTE_MS).toISOString(),
    finished: { ...counts.finished },
    lag_p50_ms: lagPercentileMs(counts.lag, 0.5),
    lag_p99_ms: lagPercentileMs(counts.lag, 0.99),
  }));
}

export function metricsHistoryToApi(history: MetricsHistory): Record<string, unknown> {
  return {
    minutes: minutesToApi(history.epochMinutes, history.total),
    job_types: history.byType.map((type) => ({ name: type.name, minutes: minutesToApi(history.epochMinutes, type.minutes) })),
  };
}
