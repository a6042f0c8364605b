import { queueFromEnvironment } from '../shared/environment.js';
import { registry } from '../worker/handlers/index.js';
import { createSweeperHandler } from './app.js';

export const handler = createSweeperHandler({ ctx: queueFromEnvironment(), registry });
