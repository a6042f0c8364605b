import { processIdentity, queueFromEnvironment, targetClientsFromEnvironment, wakerFromEnvironment } from '../shared/environment.js';
import { createEmfMetrics } from '../shared/metrics.js';
import { createWorkerHandler } from './app.js';
import { registry } from './handlers/index.js';

export const handler = createWorkerHandler({
  ctx: queueFromEnvironment(process.env, { waker: wakerFromEnvironment() }),
  registry,
  worker: processIdentity(),
  metrics: createEmfMetrics(),
  targets: targetClientsFromEnvironment(),
});
