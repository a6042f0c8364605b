import { queueFromEnvironment } from '../shared/environment.js';
import { createEmfMetrics } from '../shared/metrics.js';
import { registry } from '../worker/handlers/index.js';
import { createSweeperHandler } from './app.js';

export const handler = createSweeperHandler({ ctx: queueFromEnvironment(), registry, metrics: createEmfMetrics() });
