/**
 * The worker's code: a handler under each name of HANDLER_NAMES (functions/shared/handler-names.ts), and
 * the custom retry policies (functions/shared/retry-policies.ts). Add your handlers here and their names there.
 */
import type { JobHandler, WorkerRegistry } from '../../../lib/queue/worker.js';
import type { HandlerName } from '../../shared/handler-names.js';
import { retryPolicies } from '../../shared/retry-policies.js';
import { awaitCallback, echo, fail, sleep } from './builtin.js';

const handlers: Record<HandlerName, JobHandler> = { echo, sleep, fail, await_callback: awaitCallback };

export const registry: WorkerRegistry = { handlers, retryPolicies };
