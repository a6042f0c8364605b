import { queueFromEnvironment } from '../shared/environment.js';
import { registry } from '../worker/handlers/index.js';
import { createApiHandler } from './app.js';

export const handler = createApiHandler({ ctx: queueFromEnvironment(), registry });
