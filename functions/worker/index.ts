import { queueFromEnvironment, targetClientsFromEnvironment, workerIdentity } from '../shared/environment.js';
import { createWorkerHandler } from './app.js';
import { registry } from './handlers/index.js';

export const handler = createWorkerHandler({
  ctx: queueFromEnvironment(),
  registry,
  worker: workerIdentity(),
  targets: targetClientsFromEnvironment(),
});
