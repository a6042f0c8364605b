import { REQUEST_PATH_DYNAMODB_CALL_LIMITS } from '../../lib/domain/limits.js';
import { callbackTokenSecretFromEnvironment, queueFromEnvironment } from '../shared/environment.js';
import { createAuthorizer } from './app.js';

const callbackTokenSecret = callbackTokenSecretFromEnvironment();

export const handler = createAuthorizer({
  ctx: queueFromEnvironment(process.env, { callLimits: REQUEST_PATH_DYNAMODB_CALL_LIMITS }),
  ...(process.env.API_TOKEN ? { staticAdminToken: process.env.API_TOKEN } : {}),
  ...(callbackTokenSecret ? { callbackTokenSecret } : {}),
});
