/**
 * Orders two actors' calls without timing: a middleware holds one DynamoDB call of a client until another actor
 * is done (interleave), or runs the other actor just before a chosen call (beforeCall), so a race test lands the
 * other actor exactly between two calls of the first.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { FinalizeHandler, FinalizeHandlerArguments, MetadataBearer } from '@smithy/types';
import type { DynamoCall } from './faults.js';

/**
 * A call held: `reached` resolves when the call comes (never, if fewer calls come); `disarm()` lets every later
 * call through.
 */
interface HeldCall {
  reached: Promise<void>;
  held: boolean;
  disarm(): void;
}

/**
 * Holds the `index`-th call (from 0, counted from now, each SDK try once) that `client` sends until `until`
 * settles, either way.
 */
function holdCall(client: DynamoDBClient, index: number, until: Promise<unknown>): HeldCall {
  let reach!: () => void;
  let armed = true;
  let calls = 0;
  const gate: HeldCall = { reached: new Promise((resolve) => (reach = resolve)), held: false, disarm: () => void (armed = false) };
  client.middlewareStack.addRelativeTo(
    (next: FinalizeHandler<object, MetadataBearer>) => async (args: FinalizeHandlerArguments<object>) => {
      if (calls++ === index && armed) {
        gate.held = true;
        reach();
        await until.catch(() => undefined);
      }
      return next(args);
    },
    { relation: 'after', toMiddleware: 'retryMiddleware', name: 'holdCall' },
  );
  return gate;
}

/**
 * Runs `first`, and `second` exactly before `first`'s call number `holdAt` (of `client`, which `first` sends
 * through): that call waits until `second` is done. When `first` makes fewer calls, `second` runs after it.
 */
export async function interleave<A, B>(
  client: DynamoDBClient,
  holdAt: number,
  first: () => Promise<A>,
  second: () => Promise<B>,
): Promise<{ first: PromiseSettledResult<A>; second: PromiseSettledResult<B>; order: string }> {
  let secondDone!: () => void;
  const gate = holdCall(client, holdAt, new Promise<void>((resolve) => (secondDone = resolve)));
  // Once `first` is done without reaching the call, the hold is off: `second` may send through the same client.
  const firstRun = first().finally(() => gate.disarm());
  const secondRun = Promise.race([gate.reached, firstRun.then(() => undefined, () => undefined)])
    .then(second)
    .finally(secondDone);
  const [firstSettled, secondSettled] = await Promise.allSettled([firstRun, secondRun]);
  const order = gate.held ? `second before call ${holdAt} of first` : 'second after first';
  return { first: firstSettled, second: secondSettled, order };
}

/** Runs `before` once, just before the first call `picked` chooses is sent (each SDK try counted): another actor's move lands there. */
export function beforeCall(client: DynamoDBClient, picked: (call: DynamoCall) => boolean, before: () => Promise<unknown>): void {
  let done = false;
  client.middlewareStack.addRelativeTo(
    (next: FinalizeHandler<object, MetadataBearer>, context: { commandName?: string }) => async (args: FinalizeHandlerArguments<object>) => {
      if (!done && picked({ commandName: context.commandName ?? '', input: args.input as Record<string, unknown> })) {
        done = true;
        await before();
      }
      return next(args);
    },
    { relation: 'after', toMiddleware: 'retryMiddleware', name: 'beforeCall' },
  );
}
