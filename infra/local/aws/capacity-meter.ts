/**
 * Counts the capacity units every DynamoDB call consumes, by asking for
 * `ReturnConsumedCapacity: TOTAL` on each request: measured, not estimated.
 * DynamoDB Local's TOTAL counts the due index's writes with the table's (a put
 * with index keys 2 WRU, an update moving them 3, one writing no index
 * attribute 1: checked on 2026-11-29 against INDEXES, which splits the same
 * totals into table and index). What it leaves out that AWS bills (an empty
 * query, a failed conditional write) the meter adds (./meter.ts).
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

/** The units a call's answer says it consumed, as write or read units by what the command does when the answer does not say. */
export function consumedUnitsOf(command: string, output: unknown): { writeUnits: number; readUnits: number } {
  const { ConsumedCapacity } = output as { ConsumedCapacity?: ConsumedCapacityShape | ConsumedCapacityShape[] };
  let writeUnits = 0;
  let readUnits = 0;
  for (const consumed of [ConsumedCapacity ?? []].flat()) {
    const units = consumed.CapacityUnits ?? 0;
    writeUnits += consumed.WriteCapacityUnits ?? (WRITE_COMMANDS.has(command) ? units : 0);
    readUnits += consumed.ReadCapacityUnits ?? (WRITE_COMMANDS.has(command) ? 0 : units);
  }
  return { writeUnits, readUnits };
}

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
      const { writeUnits, readUnits } = consumedUnitsOf(command, result.output);
      const entry = (totals.byCommand[command] ??= { calls: 0, writeUnits: 0, readUnits: 0 });
      entry.calls++;
      entry.writeUnits += writeUnits;
      entry.readUnits += readUnits;
      totals.writeUnits += writeUnits;
      totals.readUnits += readUnits;
      return result;
    },
    { step: 'initialize', name: 'trackConsumedCapacity' },
  );
  return totals;
}
