/**
 * Records every write a function's DynamoDB client makes, attributed to the partitions it lands in: the base
 * table's `pk`, and the `due` index partitions (`gsi1pk`) whose entries it removes, adds or changes. DynamoDB
 * throttles each partition at 1 000 write units a second, so these are what set a deployment's ceiling.
 *
 * Each write's items are read (consistently, through a client of the test's own) just before and just after it,
 * which shows which index entries moved. The units are DynamoDB's: ReturnConsumedCapacity INDEXES gives a call's
 * table and index units, shared out over its items and entries in proportion to their sizes (one unit per KB
 * started, as DynamoDB bills: https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/on-demand-capacity-mode.html).
 * An index entry's size is its projected item's: the table's and the index's keys, the projected attributes and
 * 100 bytes (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/GSI.html).
 */
import { GetItemCommand, type AttributeValue, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { TABLE_SCHEMA } from '../../lib/store/table.js';
import { parseJobPk, parseTagSortKey, PARTITION_PREFIX } from '../../lib/store/keys.js';

export interface PartitionWrite {
  index: 'table' | 'due';
  /** The base table's pk, or the index's gsi1pk. */
  partition: string;
  units: number;
  /** The job whose item (or tag entry) the write was to, when it was one job's. */
  job?: { type: string; id: string };
  /** A write DynamoDB refused on its condition: billed all the same. */
  refused?: boolean;
}

type RawItem = Record<string, AttributeValue>;
const UNIT_BYTES = 1024;
const INDEX_ENTRY_OVERHEAD_BYTES = 100;

function attributeBytes(value: AttributeValue): number {
  if (value.S !== undefined) return Buffer.byteLength(value.S);
  if (value.N !== undefined) return Math.ceil(value.N.replace(/^-|\.|e.*$/gi, '').replace(/^0+/, '').length / 2) + 1;
  if (value.B !== undefined) return value.B.length;
  if (value.BOOL !== undefined || value.NULL !== undefined) return 1;
  if (value.L !== undefined) return 3 + value.L.reduce((sum, item) => sum + 1 + attributeBytes(item), 0);
  if (value.M !== undefined) return 3 + Object.entries(value.M).reduce((sum, [name, item]) => sum + 1 + Buffer.byteLength(name) + attributeBytes(item), 0);
  if (value.SS !== undefined) return value.SS.reduce((sum, s) => sum + Buffer.byteLength(s), 0);
  if (value.NS !== undefined) return value.NS.reduce((sum, n) => sum + attributeBytes({ N: n }), 0);
  return 0;
}

function itemBytes(item: RawItem): number {
  return Object.entries(item).reduce((sum, [name, value]) => sum + Buffer.byteLength(name) + attributeBytes(value), 0);
}

const INDEX_ATTRIBUTES = ['pk', 'sk', 'gsi1pk', 'gsi1sk', ...TABLE_SCHEMA.dueIndex.projectedAttributes];

/** The item's entry in the `due` index, as the index holds it; undefined when the item is not in the index. */
function indexEntry(item: RawItem | undefined): RawItem | undefined {
  if (item?.gsi1pk?.S === undefined || item.gsi1sk?.S === undefined) return undefined;
  return Object.fromEntries(INDEX_ATTRIBUTES.flatMap((name) => (item[name] ? [[name, item[name]]] : [])));
}

const unitsOf = (bytes: number): number => Math.max(1, Math.ceil(bytes / UNIT_BYTES));
const entryUnits = (entry: RawItem): number => unitsOf(itemBytes(entry) + INDEX_ENTRY_OVERHEAD_BYTES);

/** The index writes one item's change makes: none, an entry changed in place, or one removed and one added. */
function indexWrites(before: RawItem | undefined, after: RawItem | undefined): { partition: string; units: number }[] {
  const old = indexEntry(before);
  const next = indexEntry(after);
  if (old && next && old.gsi1pk?.S === next.gsi1pk?.S && old.gsi1sk?.S === next.gsi1sk?.S) {
    if (JSON.stringify(old) === JSON.stringify(next)) return [];
    return [{ partition: String(next.gsi1pk?.S), units: Math.max(entryUnits(old), entryUnits(next)) }];
  }
  return [...(old ? [{ partition: String(old.gsi1pk?.S), units: entryUnits(old) }] : []), ...(next ? [{ partition: String(next.gsi1pk?.S), units: entryUnits(next) }] : [])];
}

/** The job a base-table item belongs to: a job's own item, or one of its tag entries. */
function jobOf(key: { pk: string; sk: string }): PartitionWrite['job'] {
  if (key.pk.startsWith(PARTITION_PREFIX.job)) return parseJobPk(key.pk);
  if (key.pk.startsWith(PARTITION_PREFIX.tag)) {
    const type = key.pk.slice(PARTITION_PREFIX.tag.length).split('#')[0] ?? '';
    return { type, id: parseTagSortKey(key.sk).id };
  }
  return undefined;
}

const text = (value: unknown): string | undefined =>
  typeof value === 'string' ? value : typeof value === 'object' && value !== null && typeof (value as { S?: unknown }).S === 'string' ? (value as { S: string }).S : undefined;

function keyOf(record: unknown): { pk: string; sk: string } | undefined {
  const { pk, sk } = (record ?? {}) as { pk?: unknown; sk?: unknown };
  const pkText = text(pk);
  const skText = text(sk);
  return pkText !== undefined && skText !== undefined ? { pk: pkText, sk: skText } : undefined;
}

/** The items one write command writes, and whether it is a transaction (billed twice per item). */
function writtenKeys(command: string, input: Record<string, unknown>): { keys: { pk: string; sk: string }[]; transaction: boolean } | undefined {
  const one = (key: { pk: string; sk: string } | undefined) => ({ keys: key ? [key] : [], transaction: false });
  if (command === 'PutItemCommand') return one(keyOf(input.Item));
  if (command === 'UpdateItemCommand' || command === 'DeleteItemCommand') return one(keyOf(input.Key));
  if (command === 'TransactWriteItemsCommand') {
    const items = (input.TransactItems ?? []) as Record<string, { Item?: unknown; Key?: unknown }>[];
    const keys = items.flatMap((item) => {
      const action = item.Put ?? item.Update ?? item.Delete ?? item.ConditionCheck;
      return keyOf(action?.Item ?? action?.Key) ?? [];
    });
    return { keys, transaction: true };
  }
  if (command === 'BatchWriteItemCommand') {
    const requests = Object.values((input.RequestItems ?? {}) as Record<string, { PutRequest?: { Item?: unknown }; DeleteRequest?: { Key?: unknown } }[]>).flat();
    return { keys: requests.flatMap((request) => keyOf(request.PutRequest?.Item ?? request.DeleteRequest?.Key) ?? []), transaction: false };
  }
  return undefined;
}

interface ConsumedShape {
  CapacityUnits?: number;
  Table?: { CapacityUnits?: number };
  GlobalSecondaryIndexes?: Record<string, { CapacityUnits?: number }>;
}

/** Shares `total` out over `weights` in proportion; the weights themselves when DynamoDB reported no total. */
function shareOut(weights: number[], total: number | undefined): number[] {
  const sum = weights.reduce((a, b) => a + b, 0);
  if (total === undefined || sum === 0) return weights;
  return weights.map((weight) => (weight * total) / sum);
}

/**
 * Adds the recording middleware to `client` (a function's base client); `inspector` reads the items before and
 * after each write and must not be recorded itself.
 */
export function recordPartitionWrites(client: DynamoDBClient, inspector: DynamoDBClient, tableName: string, into: PartitionWrite[]): void {
  const read = async (key: { pk: string; sk: string }): Promise<RawItem | undefined> =>
    (await inspector.send(new GetItemCommand({ TableName: tableName, Key: { pk: { S: key.pk }, sk: { S: key.sk } }, ConsistentRead: true }))).Item;
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as Record<string, unknown>;
      const written = writtenKeys(context.commandName ?? '', input);
      if (!written || written.keys.length === 0) return next(args);
      input.ReturnConsumedCapacity = 'INDEXES';
      const before = await Promise.all(written.keys.map(read));
      const factor = written.transaction ? 2 : 1;
      let result;
      try {
        result = await next(args);
      } catch (error) {
        // A refused condition is billed as the write would have been, on the table only (nothing changed in the index).
        written.keys.forEach((key, i) => {
          const job = jobOf(key);
          into.push({ index: 'table', partition: key.pk, units: factor * unitsOf(before[i] ? itemBytes(before[i]) : 0), refused: true, ...(job ? { job } : {}) });
        });
        throw error;
      }
      const after = await Promise.all(written.keys.map(read));
      const consumed = [(result.output as { ConsumedCapacity?: ConsumedShape | ConsumedShape[] }).ConsumedCapacity ?? []].flat();
      const tableTotal = consumed.length > 0 ? consumed.reduce((sum, c) => sum + (c.Table?.CapacityUnits ?? 0), 0) : undefined;
      const indexTotal = consumed.length > 0 ? consumed.reduce((sum, c) => sum + (c.GlobalSecondaryIndexes?.due?.CapacityUnits ?? 0), 0) : undefined;
      const tableWeights = written.keys.map((_, i) => factor * unitsOf(Math.max(itemBytes(before[i] ?? {}), itemBytes(after[i] ?? {}))));
      shareOut(tableWeights, tableTotal).forEach((units, i) => {
        const key = written.keys[i]!;
        const job = jobOf(key);
        into.push({ index: 'table', partition: key.pk, units, ...(job ? { job } : {}) });
      });
      const entries = written.keys.flatMap((key, i) => indexWrites(before[i], after[i]).map((entry) => ({ ...entry, units: factor * entry.units, job: jobOf(key) })));
      shareOut(
        entries.map((entry) => entry.units),
        indexTotal,
      ).forEach((units, i) => {
        const { partition, job } = entries[i]!;
        into.push({ index: 'due', partition, units, ...(job ? { job } : {}) });
      });
      return result;
    },
    { step: 'initialize', name: 'recordPartitionWrites' },
  );
}
