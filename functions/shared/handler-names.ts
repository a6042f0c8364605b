/**
 * The names of the worker's handlers, which a job type's `target: {kind: "handler", name}` can name. The
 * api refuses a job type naming any other, and must know them without bundling the handlers' code; the
 * worker's registry (functions/worker/handlers/index.ts) has to register a handler under each, and no other.
 */
export const HANDLER_NAMES = ['echo', 'sleep', 'fail', 'await_callback'] as const;

export type HandlerName = (typeof HANDLER_NAMES)[number];
