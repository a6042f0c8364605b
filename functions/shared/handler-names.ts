/**
 * The names of the worker's handlers, which a job type's `target: {kind: "handler", name}` can name: the
 * keys of the handler module's `handlers`. The api refuses a job type naming any other. It learns them by
 * loading the handler module, so the module's top-level code runs in the api too (keep it cheap).
 */
import { registry } from '../worker/handlers/index.js';

export const HANDLER_NAMES: readonly string[] = Object.keys(registry.handlers);
