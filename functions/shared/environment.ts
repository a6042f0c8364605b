/** Cold-start wiring for the Lambda entry points: settings validated once, clients created once. */
import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import { createQueueContext, readQueueSettings, type QueueContext } from '../../lib/config.js';
import { createDynamoClients } from '../../lib/dynamodb.js';
import type { WorkerIdentity } from '../../lib/model.js';

export function queueFromEnvironment(env: NodeJS.ProcessEnv = process.env): QueueContext {
  const settings = readQueueSettings(env);
  const { db } = createDynamoClients(env.DYNAMODB_ENDPOINT ? { endpoint: env.DYNAMODB_ENDPOINT } : {});
  return createQueueContext(db, settings);
}

/** Who ran an attempt: this process on this host, as the history records it. */
export function workerIdentity(): WorkerIdentity {
  return { id: `${process.pid}-${randomUUID().slice(0, 8)}`, host: hostname() };
}
