import { REQUEST_PATH_DYNAMODB_CALL_LIMITS } from '../../lib/dynamodb.js';
import { queueFromEnvironment } from '../shared/environment.js';
import { createAuthorizer } from './app.js';

export const handler = createAuthorizer({
  ctx: queueFromEnvironment(process.env, REQUEST_PATH_DYNAMODB_CALL_LIMITS),
  ...(process.env.API_TOKEN ? { staticAdminToken: process.env.API_TOKEN } : {}),
  ...(process.env.CALLBACK_TOKEN_SECRET ? { callbackTokenSecret: process.env.CALLBACK_TOKEN_SECRET } : {}),
});
