import { requiredSetting } from '../../lib/config.js';
import { queueFromEnvironment } from '../shared/environment.js';
import { registry } from '../worker/handlers/index.js';
import { createApiHandler } from './app.js';

const callbackTokenSecret = process.env.CALLBACK_TOKEN_SECRET;

export const handler = createApiHandler({
  ctx: queueFromEnvironment(),
  registry,
  adminToken: requiredSetting(process.env, 'API_TOKEN'),
  ...(callbackTokenSecret ? { callbackTokenSecret } : {}),
});
