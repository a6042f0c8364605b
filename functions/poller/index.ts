import { LambdaClient } from '@aws-sdk/client-lambda';
import { requiredSetting } from '../../lib/queue/context.js';
import { createLambdaInvoker } from '../../lib/aws/lambda.js';
import { processIdentity, queueFromEnvironment } from '../shared/environment.js';
import { createEmfMetrics } from '../shared/metrics.js';
import { createPollerHandler } from './app.js';

const invoker = createLambdaInvoker(new LambdaClient({}), requiredSetting(process.env, 'WORKER_FUNCTION_NAME'));

export const handler = createPollerHandler({ ctx: queueFromEnvironment(), invoker, identity: processIdentity(), metrics: createEmfMetrics() });
