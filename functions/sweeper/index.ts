import { queueFromEnvironment, wakerFromEnvironment, wakeTimersFromEnvironment } from '../shared/environment.js';
import { createEmfMetrics } from '../shared/metrics.js';
import { retryPolicies } from '../shared/retry-policies.js';
import { createSweeperHandler } from './app.js';

export const handler = createSweeperHandler({ ctx: queueFromEnvironment(process.env, { waker: wakerFromEnvironment(), wakeTimers: wakeTimersFromEnvironment() }), registry: { retryPolicies }, metrics: createEmfMetrics() });
