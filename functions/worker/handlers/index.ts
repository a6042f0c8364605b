/**
 * The worker's registry, from the handler module: `#handler-module`, which package.json maps to this
 * repository's built-in handlers and a deployment's bundler aliases to the module its DelayedJobQueue names.
 */
import * as handlerModule from '#handler-module';
import { ConfigError } from '../../../lib/domain/errors.js';
import type { JobHandler, WorkerRegistry } from '../../../lib/queue/attempt/run-batch.js';
import type { CustomRetryPolicies, CustomRetryPolicy } from '../../../lib/domain/retry.js';

/** The own enumerable entries of `value`, which must all be functions. */
function functionsOf<T>(value: unknown, exportName: string): Record<string, T> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ConfigError(`the handler module's ${exportName} export must be an object of functions by name, got ${Array.isArray(value) ? 'an array' : typeof value}`);
  }
  const entries = Object.entries(value);
  const notFunction = entries.find(([, entry]) => typeof entry !== 'function');
  if (notFunction) throw new ConfigError(`the handler module's ${exportName}.${notFunction[0]} must be a function, got ${typeof notFunction[1]}`);
  return Object.fromEntries(entries) as Record<string, T>;
}

/**
 * The registry a handler module's exports make: `handlers` (required) and `retryPolicies` (optional),
 * refused with a ConfigError naming the export when they are not objects of functions.
 */
export function registryOf(module: Readonly<Record<string, unknown>>): WorkerRegistry {
  if (!Object.hasOwn(module, 'handlers')) throw new ConfigError('the handler module must export handlers: an object of handler functions by name');
  const retryPolicies = Object.hasOwn(module, 'retryPolicies') && module.retryPolicies !== undefined ? module.retryPolicies : {};
  return {
    handlers: functionsOf<JobHandler>(module.handlers, 'handlers'),
    retryPolicies: functionsOf<CustomRetryPolicy>(retryPolicies, 'retryPolicies') as CustomRetryPolicies,
  };
}

export const registry: WorkerRegistry = registryOf(handlerModule);
