/** `/v1/stats` and `/v1/metrics`: the queue's state now and over the last hours, for the types the caller may read. */
import { listRoster } from '../../../lib/queue/telemetry/roster.js';
import { rosterEntryToApi } from '../../../lib/wire/roster.js';
import { metricsHistoryToApi } from '../../../lib/wire/metrics.js';
import { readMetricsHistory } from '../../../lib/queue/telemetry/metrics-history.js';
import { statsOfTypes } from '../../../lib/queue/read/type-stats.js';
import { alarmStatusToApi, deployedCostToApi, typeStatsToApi } from '../../../lib/wire/stats.js';
import { metricsQuerySchema } from '../../../lib/wire/api-requests.js';
import { parseWith } from '../../../lib/wire/parse.js';
import { json } from '../../shared/http.js';
import { readableJobTypes, type ApiDeps, type Route } from './route.js';

export function statsRoutes({ ctx, alarms, deployedCost }: ApiDeps) {
  return {
    stats: async (_event, principal) => {
      const readable = await readableJobTypes(ctx, principal);
      const [stats, roster] = await Promise.all([statsOfTypes(ctx, readable), listRoster(ctx)]);
      return json(200, {
        job_types: stats.map(({ jobType, stats: typeStats }) => ({
          name: jobType.name,
          ...typeStatsToApi(typeStats),
          concurrency: jobType.concurrency,
          paused: jobType.paused,
        })),
        pollers: roster.poller.map(rosterEntryToApi),
        workers: roster.worker.map(rosterEntryToApi),
        ...(alarms ? { alarms: alarms().map(alarmStatusToApi) } : {}),
        ...(deployedCost ? { deployed_cost: deployedCostToApi(deployedCost()) } : {}),
      });
    },
    metrics: async (event, principal) => {
      const { minutes } = parseWith(metricsQuerySchema, event.queryStringParameters ?? {});
      const readable = await readableJobTypes(ctx, principal);
      return json(200, metricsHistoryToApi(await readMetricsHistory(ctx, readable.map((jobType) => jobType.name), minutes)));
    },
  } satisfies Record<string, Route>;
}
