import { processIdentity, queueFromEnvironment, targetClientsFromEnvironment } from '../shared/environment.js';
import { createEmfMetrics } from '../shared/metrics.js';
import { createWorkerHandler } from './app.js';
import { registry } from './handlers/index.js';

export const handler = createWorkerHandler({
  ctx: queueFromEnvironment(process.env),
  registry,
  worker: processIdentity(),
  metrics: createEmfMetrics(),
  targets: targetClientsFromEnvironment(),
});
