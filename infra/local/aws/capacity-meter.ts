/**
 * Counts the capacity units every DynamoDB call consumes, by asking for
 * `ReturnConsumedCapacity: TOTAL` on each request: measured, not estimated.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';

export interface CapacityTotals {
  /** Write and read capacity units, summed. */
  writeUnits: number;
  readUnits: number;
  /** Calls and units per command name, e.g. `UpdateItemCommand`. */
  byCommand: Record<string, { calls: number; writeUnits: number; readUnits: number }>;
  /** Records of the bucket directory written (1 WRU each): one per lane bucket and process, however many jobs it holds. */
  directoryWrites: number;
}

interface ConsumedCapacityShape {
  WriteCapacityUnits?: number;
  ReadCapacityUnits?: number;
  CapacityUnits?: number;
}

const WRITE_COMMANDS = new Set([
  'PutItemCommand',
  'UpdateItemCommand',
  'DeleteItemCommand',
  'BatchWriteItemCommand',
  'TransactWriteItemsCommand',
]);

/**
 * Adds the counting middleware to `client` (the base client the document client wraps); returns the live totals,
 * `into` when given, so one tally can count the calls of several clients (each function has its own).
 */
export function trackConsumedCapacity(client: DynamoDBClient, into?: CapacityTotals): CapacityTotals {
  const totals: CapacityTotals = into ?? { writeUnits: 0, readUnits: 0, byCommand: {}, directoryWrites: 0 };
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as Record<string, unknown>;
      if (!('ReturnConsumedCapacity' in input)) input.ReturnConsumedCapacity = 'TOTAL';
      const result = await next(args);
      const command = context.commandName ?? 'unknown';
      // Marshalled or not, depending on where the document client's middleware runs.
      const pk = (input.Item as { pk?: string | { S?: string } } | undefined)?.pk;
      if (command === 'PutItemCommand' && (typeof pk === 'string' ? pk : pk?.S)?.startsWith('DIR#')) totals.directoryWrites++;
      const output = result.output as { ConsumedCapacity?: ConsumedCapacityShape | ConsumedCapacityShape[] };
      const consumed = [output.ConsumedCapacity ?? []].flat();
      const entry = (totals.byCommand[command] ??= { calls: 0, writeUnits: 0, readUnits: 0 });
      entry.calls++;
      for (const c of consumed) {
        const units = c.CapacityUnits ?? 0;
        const write = c.WriteCapacityUnits ?? (WRITE_COMMANDS.has(command) ? units : 0);
        const read = c.ReadCapacityUnits ?? (WRITE_COMMANDS.has(command) ? 0 : units);
        entry.writeUnits += write;
        entry.readUnits += read;
        totals.writeUnits += write;
        totals.readUnits += read;
      }
      return result;
    },
    { step: 'initialize', name: 'trackConsumedCapacity' },
  );
  return totals;
}
