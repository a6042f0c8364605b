/**
 * The `due` index as AWS serves it: eventually consistent. A global secondary
 * index on AWS is updated after the write that changes it, usually within a
 * second, sometimes much later; DynamoDB Local updates it with the write. With a
 * lag of L ms, a query on the index here answers as the index stood L ms ago: an
 * entry written within the last L ms is not there yet, and one moved or removed
 * within them is still at its old place, with its old projected attributes.
 *
 * A journal, shared by every local function's client, learns how each item
 * written through those clients stood in the index before and after each write
 * (it reads the item itself, on a client of its own, so the code under test
 * sends and pays for nothing more; its writes only take those reads longer).
 * A query on the index is sent as the code sent it, without its filter and
 * projection, and its answer corrected from the journal: entries of items written within L ms are taken out, and those items'
 * entries as they stood L ms ago are put back where the key condition, the
 * order and the start key place them; then Limit, the filter, the projection and
 * Select COUNT are applied as DynamoDB applies them.
 *
 * Approximations:
 * - an item's change is dated when the journal's read after the write returns,
 *   a little after the write, and from the moment its write is sent until then
 *   the item shows its old entry: a little more lag, never less;
 * - writes by clients without the journal (a test's own setup) are seen at once;
 * - a query without Limit is answered in one page, however large;
 * - entries with equal index sort keys are ordered by their table key.
 * Expressions the correction cannot evaluate fail loudly rather than answer wrong.
 */
import { BatchGetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { DUE_INDEX } from '../../../lib/store/keys.js';
import type { SdkClient } from './iam/iam-check.js';
import { ENTRY_ATTRIBUTES, itemId, tableKeyOf, type IndexQuery, type Item } from './index-expressions.js';
import type { IndexJournal, IndexQueryPage, ItemReader } from './index-journal.js';

export const INDEX_LAG_SETTING = 'LOCAL_INDEX_LAG_MS';

const ATTRIBUTE_VALUE_TYPES = new Set(['S', 'N', 'B', 'SS', 'NS', 'BS', 'M', 'L', 'NULL', 'BOOL']);

/** Whether a key or values map is in DynamoDB's wire form (a DynamoDBClient command) rather than the document client's. */
const isWireForm = (record: Item | undefined): boolean =>
  Object.values(record ?? {}).some((value) => {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
    const types = Object.keys(value);
    return types.length === 1 && ATTRIBUTE_VALUE_TYPES.has(types[0]!);
  });

const fromWire = (record: Item): Item => unmarshall(record as Parameters<typeof unmarshall>[0]);
const toWire = (record: Item): Item => marshall(record, { removeUndefinedValues: true });

type WriteInput = {
  Key?: Item;
  Item?: Item;
  TableName?: string;
  TransactItems?: Record<string, { TableName?: string; Key?: Item; Item?: Item } | undefined>[];
  RequestItems?: Record<string, { PutRequest?: { Item?: Item }; DeleteRequest?: { Key?: Item } }[] | unknown>;
};

/** The table keys (document form) of the items a write command changes in `tableName`. */
export function writtenKeys(commandName: string, input: WriteInput, tableName: string): Item[] {
  const keyOf = (source: Item | undefined): Item[] => {
    if (!source) return [];
    return [tableKeyOf(isWireForm(tableKeyOf(source)) ? fromWire(tableKeyOf(source)) : source)];
  };
  switch (commandName) {
    case 'PutItemCommand':
    case 'UpdateItemCommand':
    case 'DeleteItemCommand':
      return input.TableName === tableName ? keyOf(input.Key ?? input.Item) : [];
    case 'TransactWriteItemsCommand':
      return (input.TransactItems ?? []).flatMap((entry) => {
        const write = entry.Put ?? entry.Update ?? entry.Delete;
        return write?.TableName === tableName ? keyOf(write.Key ?? write.Item) : [];
      });
    case 'BatchWriteItemCommand': {
      const requests = input.RequestItems?.[tableName];
      if (!Array.isArray(requests)) return [];
      return (requests as { PutRequest?: { Item?: Item }; DeleteRequest?: { Key?: Item } }[]).flatMap((request) =>
        keyOf(request.PutRequest?.Item ?? request.DeleteRequest?.Key),
      );
    }
    default:
      return [];
  }
}

const BATCH_GET_LIMIT = 100;

/** Reads items consistently on `db`, a client of the emulation's own: the code under test neither sends nor pays for it. */
export function consistentReader(db: DynamoDBDocumentClient, tableName: string): ItemReader {
  const projection = ENTRY_ATTRIBUTES.map((_, index) => `#a${index}`).join(', ');
  const names = Object.fromEntries(ENTRY_ATTRIBUTES.map((name, index) => [`#a${index}`, name]));
  return async (keys) => {
    const items: Item[] = [];
    const unique = [...new Map(keys.map((key) => [itemId(key), key])).values()];
    for (let from = 0; from < unique.length; from += BATCH_GET_LIMIT) {
      let pending: Item[] = unique.slice(from, from + BATCH_GET_LIMIT);
      while (pending.length > 0) {
        const { Responses, UnprocessedKeys } = await db.send(
          new BatchGetCommand({ RequestItems: { [tableName]: { Keys: pending, ConsistentRead: true, ProjectionExpression: projection, ExpressionAttributeNames: names } } }),
        );
        items.push(...(Responses?.[tableName] ?? []));
        pending = UnprocessedKeys?.[tableName]?.Keys ?? [];
      }
    }
    return items;
  };
}

/**
 * Makes `client`'s queries on the `due` index of `tableName` answer with `journal`'s lag, and its writes to
 * that table feed the journal. It runs after the local IAM check and AWS rules, so a refused call never reaches it.
 */
export function lagIndexOf<Client extends SdkClient>(client: Client, journal: IndexJournal, tableName: string): Client {
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const commandName = String(context.commandName);
      const input = args.input as IndexQuery & WriteInput;
      if (commandName === 'QueryCommand' && input.IndexName === DUE_INDEX && input.TableName === tableName) {
        const wire = isWireForm(input.ExpressionAttributeValues);
        const query = wire ? queryFromWire(input) : input;
        let response: unknown;
        const output = await journal.query(query, async (page) => {
          const answer = (await next({ ...args, input: wire ? queryToWire(page) : page })) as { output: IndexQueryPage; response: unknown };
          response = answer.response;
          return wire ? pageFromWire(answer.output) : answer.output;
        });
        return { output: wire ? pageToWire(output) : output, response };
      }
      const keys = writtenKeys(commandName, input, tableName);
      if (keys.length === 0) return next(args);
      await journal.beginWrites(keys);
      try {
        return await next(args);
      } finally {
        await journal.endWrites(keys);
      }
    },
    { step: 'initialize', priority: 'low', name: 'localIndexLag', override: true },
  );
  return client;
}

const mapRecord = (record: Item | undefined, convert: (item: Item) => Item): Item | undefined => (record ? convert(record) : undefined);

function queryFromWire(query: IndexQuery): IndexQuery {
  return { ...query, ExpressionAttributeValues: mapRecord(query.ExpressionAttributeValues, fromWire), ExclusiveStartKey: mapRecord(query.ExclusiveStartKey, fromWire) };
}

function queryToWire(query: IndexQuery): IndexQuery {
  return { ...query, ExpressionAttributeValues: mapRecord(query.ExpressionAttributeValues, toWire), ExclusiveStartKey: mapRecord(query.ExclusiveStartKey, toWire) };
}

function pageFromWire(page: IndexQueryPage): IndexQueryPage {
  return { ...page, Items: page.Items?.map(fromWire), LastEvaluatedKey: mapRecord(page.LastEvaluatedKey, fromWire) };
}

function pageToWire(page: IndexQueryPage): IndexQueryPage {
  return { ...page, Items: page.Items?.map(toWire), LastEvaluatedKey: mapRecord(page.LastEvaluatedKey, toWire) };
}
