/** Watching and slowing one function's DynamoDB calls, for tests that count what a walk costs. */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { TestClock } from './queue.js';

/** Counts the queries `client` sends from now on. */
export function countQueries(client: DynamoDBClient): { count: number } {
  const counted = { count: 0 };
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName === 'QueryCommand') counted.count++;
      return next(args);
    },
    { step: 'initialize' },
  );
  return counted;
}

/** The keys of the GetItem calls (or of `command`'s) `client` sends from now on, as JSON. */
export function recordGetKeys(client: DynamoDBClient, command: 'GetItemCommand' | 'UpdateItemCommand' = 'GetItemCommand'): string[] {
  const keys: string[] = [];
  client.middlewareStack.add((next, context) => (args) => {
    if (context.commandName === command) keys.push(JSON.stringify((args.input as { Key?: unknown }).Key));
    return next(args);
  });
  return keys;
}

/** Moves the test's clock `latencyMs` for every call `client` makes, as DynamoDB's latency moves a real one. */
export function withLatency(client: DynamoDBClient, clock: TestClock, latencyMs: number): void {
  client.middlewareStack.add(
    (next) => async (args) => {
      clock.advance(latencyMs);
      return next(args);
    },
    { step: 'initialize' },
  );
}

/** The number of items each query of a partition starting with `pkPrefix` answered, from now on, in order. */
export function recordQueryItemCounts(client: DynamoDBClient, pkPrefix: string): number[] {
  const counts: number[] = [];
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const result = await next(args);
      // Marshalled or not, as the document client's middleware may or may not have run yet.
      const pk: unknown = (args.input as { ExpressionAttributeValues?: Record<string, unknown> }).ExpressionAttributeValues?.[':pk'];
      const pkText = typeof pk === 'string' ? pk : (pk as { S?: string } | undefined)?.S;
      if (context.commandName === 'QueryCommand' && pkText?.startsWith(pkPrefix)) counts.push(((result.output as { Items?: unknown[] }).Items ?? []).length);
      return result;
    },
    { step: 'initialize' },
  );
  return counts;
}

/** Every call `client` sends from now on: its command's name and its input, as JSON. */
export function recordCalls(client: DynamoDBClient): { command: string; input: string }[] {
  const calls: { command: string; input: string }[] = [];
  client.middlewareStack.add(
    (next, context) => async (args) => {
      calls.push({ command: context.commandName ?? '', input: JSON.stringify(args.input) });
      return next(args);
    },
    { step: 'initialize' },
  );
  return calls;
}
