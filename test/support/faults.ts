/**
 * Fault injection for the DynamoDB client: a middleware inside the SDK's retry
 * loop that fails a share of calls the way DynamoDB and networks do, either
 * before the request is sent or after it was applied (the response lost).
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { FinalizeHandler, FinalizeHandlerArguments, MetadataBearer } from '@smithy/types';

export const FAULT_KINDS = [
  'ProvisionedThroughputExceededException',
  'ThrottlingException',
  'InternalServerError',
  'ConnectionResetBeforeSend',
  'ConnectionResetAfterApply',
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

export interface FaultCounts {
  calls: number;
  injected: number;
  byKind: Record<FaultKind, number>;
}

export function faultError(kind: FaultKind): Error {
  switch (kind) {
    case 'ProvisionedThroughputExceededException':
    case 'ThrottlingException':
      return Object.assign(new Error(`injected ${kind}`), { name: kind, $fault: 'client', $metadata: { httpStatusCode: 400 } });
    case 'InternalServerError':
      return Object.assign(new Error('injected 500'), { name: kind, $fault: 'server', $metadata: { httpStatusCode: 500 } });
    case 'ConnectionResetBeforeSend':
    case 'ConnectionResetAfterApply':
      return Object.assign(new Error('socket hang up (injected)'), { name: 'Error', code: 'ECONNRESET', $metadata: {} });
  }
}

/** Fails `rate` of all calls, spread over the kinds; `random` makes a run repeatable. */
export function injectFaults(client: DynamoDBClient, options: { rate: number; random?: () => number }): FaultCounts {
  const random = options.random ?? Math.random;
  const counts: FaultCounts = {
    calls: 0,
    injected: 0,
    byKind: Object.fromEntries(FAULT_KINDS.map((kind) => [kind, 0])) as Record<FaultKind, number>,
  };
  client.middlewareStack.addRelativeTo(
    (next: FinalizeHandler<object, MetadataBearer>) => async (args: FinalizeHandlerArguments<object>) => {
      counts.calls++;
      if (random() >= options.rate) return next(args);
      const kind = FAULT_KINDS[Math.floor(random() * FAULT_KINDS.length)] ?? 'ThrottlingException';
      counts.injected++;
      counts.byKind[kind]++;
      if (kind === 'ConnectionResetAfterApply') await next(args);
      throw faultError(kind);
    },
    { relation: 'after', toMiddleware: 'retryMiddleware', name: 'injectFaults' },
  );
  return counts;
}

/** A repeatable random source (mulberry32), so a failing fault run can be replayed from its seed. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** One call as the fault middleware sees it: the command's name and its input, marshalled as it goes on the wire. */
export interface DynamoCall {
  commandName: string;
  input: Record<string, unknown>;
}

const refusal = (): Error =>
  Object.assign(new Error('injected: the call is refused'), { name: 'InternalFailure', $fault: 'client', $metadata: { httpStatusCode: 400 } });

/**
 * Fails every try of every call `refused` picks, by default with an error the
 * SDK does not retry, the way a broken item or a table that refuses it fails
 * every time; returns how many tries were refused so far.
 */
export function refuseCalls(client: DynamoDBClient, refused: (call: DynamoCall) => boolean, error: () => Error = refusal): { count: number } {
  const refusals = { count: 0 };
  client.middlewareStack.addRelativeTo(
    (next: FinalizeHandler<object, MetadataBearer>, context: { commandName?: string }) => async (args: FinalizeHandlerArguments<object>) => {
      if (!refused({ commandName: context.commandName ?? '', input: args.input as Record<string, unknown> })) return next(args);
      refusals.count++;
      throw error();
    },
    { relation: 'after', toMiddleware: 'retryMiddleware', name: 'refuseCalls' },
  );
  return refusals;
}

/** A write (put, update, delete or transaction) that touches the item whose partition key is `pk`. */
export const writesTo =
  (pk: string) =>
  ({ commandName, input }: DynamoCall): boolean =>
    /^(PutItem|UpdateItem|DeleteItem|TransactWriteItems)Command$/.test(commandName) && JSON.stringify(input).includes(JSON.stringify(pk));

/**
 * Applies the first `times` calls `picked` chooses and then loses their answers, as a timed-out request whose
 * write had landed: the SDK tries the call again, and the second try meets the item as the first left it.
 */
export function loseAnswers(client: DynamoDBClient, picked: (call: DynamoCall) => boolean, times = 1): { lost: number } {
  const answers = { lost: 0 };
  client.middlewareStack.addRelativeTo(
    (next: FinalizeHandler<object, MetadataBearer>, context: { commandName?: string }) => async (args: FinalizeHandlerArguments<object>) => {
      if (answers.lost >= times || !picked({ commandName: context.commandName ?? '', input: args.input as Record<string, unknown> })) return next(args);
      await next(args);
      answers.lost++;
      throw faultError('ConnectionResetAfterApply');
    },
    { relation: 'after', toMiddleware: 'retryMiddleware', name: 'loseAnswers' },
  );
  return answers;
}

/**
 * Whether `error` is one of the faults injected here (or wraps one, as a cause or in an AggregateError): what a
 * scenario under injected faults expects its components to report, and nothing else.
 */
export function isInjected(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  if (/injected/.test(error.message)) return true;
  if (error instanceof AggregateError && error.errors.some(isInjected)) return true;
  return error.cause !== undefined && isInjected(error.cause);
}
