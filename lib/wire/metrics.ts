/** The metrics history as the API returns it. */
import { lagPercentileMs, MINUTE_MS, type MetricsHistory, type MinuteCounts } from '../domain/metrics.js';

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
