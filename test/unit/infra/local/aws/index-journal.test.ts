/**
 * The index-lag journal answers a query on the `due` index as the index stood
 * `lagMs` ago: entries appear late, linger after they move or go, keep their
 * old projected attributes meanwhile, and pages, counts and filters agree with
 * that view. DynamoDB Local is stood in for by a table in memory.
 */
import { describe, expect, test } from 'vitest';
import { IndexJournal, type IndexQueryPage } from '../../../../../infra/local/aws/index-journal.js';
import { compareEntries, indexEntryOf, keyConditionOf, type IndexQuery, type Item } from '../../../../../infra/local/aws/index-expressions.js';
import { writtenKeys } from '../../../../../infra/local/aws/index-lag.js';

const LAG_MS = 2_000;

/** A table in memory, its index always current (as DynamoDB Local's is), and a journal over it with a clock the test moves. */
function laggedTable() {
  let nowMs = 1_000_000;
  const items = new Map<string, Item>();
  const id = (key: Item) => `${String(key.pk)}|${String(key.sk)}`;
  const journal = new IndexJournal(LAG_MS, async (keys) => keys.flatMap((key) => (items.has(id(key)) ? [items.get(id(key))!] : [])), () => nowMs);
  const sent: IndexQuery[] = [];
  /** Runs as DynamoDB Local reads a page, before it answers: a write landing while the query is on its way. */
  let whileReading: (() => Promise<void>) | undefined;

  /** DynamoDB's own Query over the current index: key condition, order, start key and Limit. */
  const send = async (query: IndexQuery): Promise<IndexQueryPage> => {
    sent.push(query);
    const during = whileReading;
    whileReading = undefined;
    await during?.();
    const forward = query.ScanIndexForward !== false;
    const order = (a: Item, b: Item) => (forward ? compareEntries(a, b) : compareEntries(b, a));
    const start = query.ExclusiveStartKey;
    const matching = [...items.values()]
      .flatMap((item): Item[] => {
        const entry = indexEntryOf(item);
        return entry ? [entry] : [];
      })
      .filter(keyConditionOf(query))
      .filter((entry) => !start || order(entry, start) > 0)
      .sort(order);
    const page = query.Limit === undefined ? matching : matching.slice(0, query.Limit);
    const last = page.at(-1);
    return { Items: page, Count: page.length, ...(page.length < matching.length && last ? { LastEvaluatedKey: last } : {}) };
  };

  const write = async (key: Item, item: Item | undefined) => {
    await journal.beginWrites([key]);
    if (item) items.set(id(key), { ...key, ...item });
    else items.delete(id(key));
    await journal.endWrites([key]);
  };
  const query = (extra: Partial<IndexQuery> & { partition: string }) => {
    const { partition, ...rest } = extra;
    return journal.query(
      { IndexName: 'due', KeyConditionExpression: 'gsi1pk = :partition', ExpressionAttributeValues: { ':partition': partition }, ...rest },
      send,
    );
  };
  const names = async (partition: string, extra: Partial<IndexQuery> = {}) => ((await query({ partition, ...extra })).Items ?? []).map((entry) => entry.pk);
  return {
    journal,
    items,
    write,
    query,
    names,
    sent,
    send,
    advance: (ms: number) => (nowMs += ms),
    whileReading: (action: () => Promise<void>) => {
      whileReading = action;
    },
  };
}

const job = (name: string) => ({ pk: `JOB#${name}`, sk: 'JOB' });
const at = (partition: string, sortKey: string, extra: Item = {}) => ({ gsi1pk: partition, gsi1sk: sortKey, ...extra });

describe('entries appear late', () => {
  test('an entry written within the lag is not in the index yet', async () => {
    const table = laggedTable();
    await table.write(job('a'), at('P', '001'));
    table.advance(LAG_MS - 1);
    expect(await table.names('P')).toEqual([]);
  });

  test('an entry written longer ago than the lag is in the index', async () => {
    const table = laggedTable();
    await table.write(job('a'), at('P', '001'));
    table.advance(LAG_MS);
    expect(await table.names('P')).toEqual(['JOB#a']);
  });

  test('an entry written while the query is on its way to DynamoDB Local is not in its answer', async () => {
    const table = laggedTable();
    table.whileReading(async () => {
      await table.journal.beginWrites([job('a')]);
      table.items.set('JOB#a|JOB', { ...job('a'), ...at('P', '001') });
    });
    expect(await table.names('P')).toEqual([]);
  });

  test('an item whose write is under way keeps its old entry until the write is read back', async () => {
    const table = laggedTable();
    table.items.set('JOB#a|JOB', { ...job('a'), ...at('P', '001') });
    await table.journal.beginWrites([job('a')]);
    table.items.set('JOB#a|JOB', { ...job('a'), ...at('Q', '001') });
    table.advance(10 * LAG_MS);
    expect(await table.names('P')).toEqual(['JOB#a']);
    expect(await table.names('Q')).toEqual([]);
  });
});

describe('entries linger after they move', () => {
  test('an entry moved within the lag is still at its old place and not yet at its new one', async () => {
    const table = laggedTable();
    table.items.set('JOB#a|JOB', { ...job('a'), ...at('READY', '001') });
    await table.write(job('a'), at('CLAIMED', '500'));
    table.advance(LAG_MS - 1);
    expect(await table.names('READY')).toEqual(['JOB#a']);
    expect(await table.names('CLAIMED')).toEqual([]);
    table.advance(1);
    expect(await table.names('READY')).toEqual([]);
    expect(await table.names('CLAIMED')).toEqual(['JOB#a']);
  });

  test('a lingering entry keeps its old projected attributes', async () => {
    const table = laggedTable();
    table.items.set('JOB#a|JOB', { ...job('a'), ...at('P', '001', { status: 'queued', priority: 5 }) });
    await table.write(job('a'), at('P', '001', { status: 'running', priority: 5 }));
    expect((await table.query({ partition: 'P' })).Items).toEqual([{ ...job('a'), ...at('P', '001', { status: 'queued', priority: 5 }) }]);
  });

  test('a removed entry lingers until the lag passes', async () => {
    const table = laggedTable();
    table.items.set('JOB#a|JOB', { ...job('a'), ...at('P', '001') });
    await table.write(job('a'), undefined);
    expect(await table.names('P')).toEqual(['JOB#a']);
    table.advance(LAG_MS);
    expect(await table.names('P')).toEqual([]);
  });

  test('an item moved twice within the lag shows where it stood when the lag began', async () => {
    const table = laggedTable();
    table.items.set('JOB#a|JOB', { ...job('a'), ...at('A', '001') });
    await table.write(job('a'), at('B', '001'));
    table.advance(LAG_MS / 2);
    await table.write(job('a'), at('C', '001'));
    table.advance(LAG_MS / 2);
    expect([await table.names('A'), await table.names('B'), await table.names('C')]).toEqual([[], ['JOB#a'], []]);
  });

  test('a lingering entry is placed by the key condition on its old sort key', async () => {
    const table = laggedTable();
    table.items.set('JOB#a|JOB', { ...job('a'), ...at('P', '005') });
    await table.write(job('a'), at('P', '001'));
    const upTo = { KeyConditionExpression: 'gsi1pk = :partition AND gsi1sk <= :upTo', ExpressionAttributeValues: { ':partition': 'P', ':upTo': '003' } };
    expect(await table.names('P', upTo)).toEqual([]);
  });
});

describe('pages, counts and filters', () => {
  /** Ten entries 000..009, half of them written within the lag, and five old ones gone within it: the lagged view is 00x for even x, and the 5 lingering 10x. */
  async function mixedPartition() {
    const table = laggedTable();
    for (let index = 0; index < 10; index++) {
      const entry = { ...job(`n${index}`), ...at('P', `00${index}`, { type: index % 3 === 0 ? 'x' : 'y' }) };
      if (index % 2 === 0) table.items.set(`${entry.pk}|JOB`, entry);
      else await table.write(job(`n${index}`), at('P', `00${index}`, { type: index % 3 === 0 ? 'x' : 'y' }));
    }
    for (let index = 0; index < 5; index++) {
      table.items.set(`JOB#g${index}|JOB`, { ...job(`g${index}`), ...at('P', `10${index}`, { type: 'y' }) });
      await table.write(job(`g${index}`), undefined);
    }
    return table;
  }
  const LAGGED_VIEW = ['JOB#n0', 'JOB#n2', 'JOB#n4', 'JOB#n6', 'JOB#n8', 'JOB#g0', 'JOB#g1', 'JOB#g2', 'JOB#g3', 'JOB#g4'];

  test('pages of Limit entries, each continuing from the last one’s LastEvaluatedKey, give the lagged view once, in order', async () => {
    const table = await mixedPartition();
    const seen: unknown[] = [];
    let startKey: Item | undefined;
    do {
      const page = await table.query({ partition: 'P', Limit: 3, ...(startKey ? { ExclusiveStartKey: startKey } : {}) });
      expect(page.Items!.length).toBeLessThanOrEqual(3);
      seen.push(...page.Items!.map((entry) => entry.pk));
      startKey = page.LastEvaluatedKey;
    } while (startKey);
    expect(seen).toEqual(LAGGED_VIEW);
  });

  test('the last page has no LastEvaluatedKey', async () => {
    const table = await mixedPartition();
    expect((await table.query({ partition: 'P', Limit: LAGGED_VIEW.length })).LastEvaluatedKey).toBeUndefined();
  });

  test('pages run backwards with ScanIndexForward false', async () => {
    const table = await mixedPartition();
    const first = await table.query({ partition: 'P', Limit: 4, ScanIndexForward: false });
    const second = await table.query({ partition: 'P', Limit: 4, ScanIndexForward: false, ExclusiveStartKey: first.LastEvaluatedKey });
    expect([...first.Items!, ...second.Items!].map((entry) => entry.pk)).toEqual([...LAGGED_VIEW].reverse().slice(0, 8));
  });

  test('Select COUNT counts the lagged view and returns no items', async () => {
    const table = await mixedPartition();
    const page = await table.query({ partition: 'P', Select: 'COUNT' });
    expect(page).toMatchObject({ Count: LAGGED_VIEW.length });
    expect(page.Items).toBeUndefined();
  });

  test('a filter is applied to lingering entries too, after Limit counted the entries read', async () => {
    const table = await mixedPartition();
    const filter = { FilterExpression: '#type = :type', ExpressionAttributeNames: { '#type': 'type' }, ExpressionAttributeValues: { ':partition': 'P', ':type': 'x' } };
    expect(await table.names('P', filter)).toEqual(['JOB#n0', 'JOB#n6']);
    const page = await table.query({ partition: 'P', ...filter, Limit: 2 });
    expect(page).toMatchObject({ Count: 1, ScannedCount: 2, Items: [expect.objectContaining({ pk: 'JOB#n0' })] });
  });

  test('a projection keeps only the named attributes', async () => {
    const table = await mixedPartition();
    const page = await table.query({ partition: 'P', ProjectionExpression: 'pk', Limit: 1 });
    expect(page.Items).toEqual([{ pk: 'JOB#n0' }]);
  });

  test('DynamoDB Local is asked for the key condition alone, without the filter or its values', async () => {
    const table = await mixedPartition();
    const filter = { FilterExpression: '#type = :type', ExpressionAttributeNames: { '#type': 'type' }, ExpressionAttributeValues: { ':partition': 'P', ':type': 'x' } };
    await table.query({ partition: 'P', ...filter });
    expect(table.sent.at(-1)).toEqual({ IndexName: 'due', KeyConditionExpression: 'gsi1pk = :partition', ExpressionAttributeValues: { ':partition': 'P' } });
  });

  test('a filter the emulation cannot evaluate fails loudly', async () => {
    const table = await mixedPartition();
    await expect(table.query({ partition: 'P', FilterExpression: 'contains(#type, :type)', ExpressionAttributeNames: { '#type': 'type' } })).rejects.toThrow(
      /cannot evaluate the filter/,
    );
  });
});

describe('the journal', () => {
  test('forgets items the index has caught up with', async () => {
    const table = laggedTable();
    await table.write(job('a'), at('P', '001'));
    table.advance(LAG_MS + 1);
    await table.write(job('b'), at('P', '002'));
    expect(table.journal.size).toBe(1);
  });

  test('learns the items of a transaction in its table, not those of another table or condition checks', () => {
    const input = {
      TransactItems: [
        { Put: { TableName: 't', Item: { ...job('a'), gsi1pk: 'P', gsi1sk: '1' } } },
        { Update: { TableName: 't', Key: { pk: { S: 'JOB#b' }, sk: { S: 'JOB' } } } },
        { Delete: { TableName: 'other', Key: job('c') } },
        { ConditionCheck: { TableName: 't', Key: job('d') } },
      ],
    };
    expect(writtenKeys('TransactWriteItemsCommand', input, 't')).toEqual([job('a'), job('b')]);
  });
});
