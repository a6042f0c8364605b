import { requiredSetting } from '../../lib/queue/settings.js';
import { createLambdaInvoker } from '../../lib/aws/lambda.js';
import { lambdaClient, processIdentity, queueFromEnvironment, wakerFromEnvironment, wakeTimersFromEnvironment } from '../shared/environment.js';
import { createEmfMetrics } from '../shared/metrics.js';
import { createPollerHandler } from './app.js';

const invoker = createLambdaInvoker(lambdaClient(), requiredSetting(process.env, 'WORKER_FUNCTION_NAME'));

export const handler = createPollerHandler({
  ctx: queueFromEnvironment(process.env, { waker: wakerFromEnvironment(), wakeTimers: wakeTimersFromEnvironment() }),
  invoker,
  identity: processIdentity(),
  metrics: createEmfMetrics(),
});
