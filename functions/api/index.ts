import { REQUEST_PATH_DYNAMODB_CALL_LIMITS } from '../../lib/domain/limits.js';
import { queueFromEnvironment } from '../shared/environment.js';
import { registry } from '../worker/handlers/index.js';
import { createApiHandler } from './app.js';

export const handler = createApiHandler({ ctx: queueFromEnvironment(process.env, REQUEST_PATH_DYNAMODB_CALL_LIMITS), registry });
