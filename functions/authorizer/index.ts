import { queueFromEnvironment } from '../shared/environment.js';
import { createAuthorizer } from './app.js';

export const handler = createAuthorizer({
  ctx: queueFromEnvironment(),
  ...(process.env.API_TOKEN ? { staticAdminToken: process.env.API_TOKEN } : {}),
  ...(process.env.CALLBACK_TOKEN_SECRET ? { callbackTokenSecret: process.env.CALLBACK_TOKEN_SECRET } : {}),
});
