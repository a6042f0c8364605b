/**
 * The journal behind the index-lag emulation (index-lag.ts): how each item
 * written through the local functions' clients stood in the `due` index before
 * and after each write, and a query on the index answered from DynamoDB Local
 * and corrected to the index as it stood `lagMs` ago.
 */
import {
  compareEntries,
  filterOf,
  indexEntryOf,
  INDEX_PK,
  INDEX_SK,
  itemId,
  keyConditionOf,
  keyConditionQuery,
  projectionOf,
  sameEntry,
  tableKeyOf,
  type IndexQuery,
  type Item,
} from './index-expressions.js';

export interface IndexQueryPage {
  Items?: Item[] | undefined;
  Count?: number | undefined;
  ScannedCount?: number | undefined;
  LastEvaluatedKey?: Item | undefined;
  [other: string]: unknown;
}

/** Reads the items under `keys` consistently; an item that does not exist is absent from the answer. */
export type ItemReader = (keys: Item[]) => Promise<Item[]>;

interface ItemHistory {
  /** The item's index entry before the changes below (undefined: not in the index). */
  settled: Item | undefined;
  changes: { atMs: number; entry: Item | undefined }[];
  /** Writes sent and not yet read back: until then the item may have changed unseen. */
  writing: number;
}

/** Where the journal sends the pages of a corrected query: through the client the code called, as it would have gone. */
export type PageSender = (query: IndexQuery) => Promise<IndexQueryPage>;

export class IndexJournal {
  private readonly items = new Map<string, ItemHistory>();
  private readonly learning = new Map<string, Promise<void>>();
  private lastSweepMs = 0;
  /** What the lag changed in the answers so far: current entries held back, and past entries served in their place. */
  readonly corrected = { heldBack: 0, servedFromPast: 0 };

  constructor(
    readonly lagMs: number,
    private readonly readItems: ItemReader,
    private readonly nowMs: () => number = Date.now,
  ) {}

  /** Before writes to `keys` are sent: learns how each item stood, and marks it as changing. */
  async beginWrites(keys: Item[]): Promise<void> {
    // Checked again after each wait: a sweep meanwhile may have forgotten an item known before it.
    for (;;) {
      const unknown = keys.filter((key) => !this.items.has(itemId(key)));
      if (unknown.length === 0) break;
      await this.learn(unknown);
    }
    for (const key of keys) this.items.get(itemId(key))!.writing++;
  }

  /** After writes to `keys` returned (or failed: a write may have landed whose answer was lost): records how each item stands now. */
  async endWrites(keys: Item[]): Promise<void> {
    let entries: Map<string, Item | undefined> | undefined;
    try {
      entries = await this.entriesOf(keys);
    } catch {
      entries = undefined;
    }
    const atMs = this.nowMs();
    for (const key of keys) {
      const id = itemId(key);
      const history = this.items.get(id)!;
      history.writing--;
      // Unread, the item's place is unknown: forgetting it shows it as DynamoDB Local has it, the best there is.
      if (!entries) history.changes = [];
      else if (!sameEntry(entries.get(id), this.latest(history))) history.changes.push({ atMs, entry: entries.get(id) });
    }
    this.sweep(atMs);
  }

  /** `query` answered as the index stood `lagMs` ago, its pages sent with `send`. */
  async query(query: IndexQuery, send: PageSender): Promise<IndexQueryPage> {
    const cutoffMs = this.nowMs() - this.lagMs;
    const inKeyCondition = keyConditionOf(query);
    const filter = filterOf(query);
    const project = projectionOf(query);
    const forward = query.ScanIndexForward !== false;
    const order = (a: Item, b: Item): number => (forward ? compareEntries(a, b) : compareEntries(b, a));
    const start = query.ExclusiveStartKey;
    const limit = query.Limit;
    const base = keyConditionQuery(query);
    const read: Item[] = [];
    let changing = this.changingAt(cutoffMs);
    let fetched: Item[] = [];
    let startKey = start;
    let lastPage: IndexQueryPage;
    let exhausted = false;
    do {
      lastPage = await send({ ...base, ...(limit === undefined ? {} : { Limit: limit + changing.size }), ...(startKey ? { ExclusiveStartKey: startKey } : {}) });
      read.push(...(lastPage.Items ?? []));
      startKey = lastPage.LastEvaluatedKey;
      exhausted = startKey === undefined;
      // Taken again once the answer is in: any write it reflects was begun before it came, so is known by now.
      changing = this.changingAt(cutoffMs);
      fetched = read.filter((entry) => !changing.has(itemId(entry)));
    } while (!exhausted && (limit === undefined || fetched.length < limit));
    this.corrected.heldBack += read.length - fetched.length;
    const lagging = [...changing.values()].filter((entry): entry is Item => entry !== undefined && inKeyCondition(entry) && (!start || order(entry, start) > 0));

    // Past the last entry fetched, DynamoDB Local's unread entries would interleave with the lagging ones.
    const lastFetched = fetched.at(-1);
    const reachable = exhausted ? lagging : lagging.filter((entry) => lastFetched !== undefined && order(entry, lastFetched) < 0);
    const merged = [...fetched, ...reachable].sort(order);
    const evaluated = limit === undefined ? merged : merged.slice(0, limit);
    this.corrected.servedFromPast += evaluated.filter((entry) => changing.has(itemId(entry))).length;
    const more = !exhausted || merged.length > evaluated.length;
    const lastEvaluated = evaluated.at(-1);
    const matching = evaluated.filter(filter);
    const { Items: _items, LastEvaluatedKey: _last, Count: _count, ScannedCount: _scanned, ...metadata } = lastPage;
    return {
      ...metadata,
      ...(query.Select === 'COUNT' ? {} : { Items: matching.map(project) }),
      Count: matching.length,
      ScannedCount: evaluated.length,
      ...(more && lastEvaluated ? { LastEvaluatedKey: { ...tableKeyOf(lastEvaluated), [INDEX_PK]: lastEvaluated[INDEX_PK], [INDEX_SK]: lastEvaluated[INDEX_SK] } } : {}),
    };
  }

  /** The items whose entry may have changed after `cutoffMs`, each with the entry it had then. */
  private changingAt(cutoffMs: number): Map<string, Item | undefined> {
    const changing = new Map<string, Item | undefined>();
    for (const [id, history] of this.items) {
      if (history.writing > 0 || history.changes.some((change) => change.atMs > cutoffMs)) changing.set(id, this.entryAt(history, cutoffMs));
    }
    return changing;
  }

  /** How many items the journal holds: those written within the lag or being written. */
  get size(): number {
    return this.items.size;
  }

  private async learn(keys: Item[]): Promise<void> {
    const waits = new Set<Promise<void>>();
    const toRead: Item[] = [];
    for (const key of keys) {
      const pending = this.learning.get(itemId(key));
      if (pending) waits.add(pending);
      else toRead.push(key);
    }
    if (toRead.length > 0) {
      const reading = this.entriesOf(toRead).then((entries) => {
        for (const key of toRead) {
          const id = itemId(key);
          if (!this.items.has(id)) this.items.set(id, { settled: entries.get(id), changes: [], writing: 0 });
        }
      });
      const done = reading.finally(() => {
        for (const key of toRead) this.learning.delete(itemId(key));
      });
      for (const key of toRead) this.learning.set(itemId(key), done);
      waits.add(done);
    }
    await Promise.all(waits);
  }

  private async entriesOf(keys: Item[]): Promise<Map<string, Item | undefined>> {
    const items = await this.readItems(keys.map(tableKeyOf));
    const byId = new Map<string, Item | undefined>(keys.map((key) => [itemId(key), undefined]));
    for (const item of items) byId.set(itemId(item), indexEntryOf(item));
    return byId;
  }

  private latest(history: ItemHistory): Item | undefined {
    return history.changes.length > 0 ? history.changes.at(-1)!.entry : history.settled;
  }

  private entryAt(history: ItemHistory, atMs: number): Item | undefined {
    let entry = history.settled;
    for (const change of history.changes) if (change.atMs <= atMs) entry = change.entry;
    return entry;
  }

  /** Folds changes older than the lag into the settled entry, and forgets items the index has caught up with. */
  private sweep(nowMs: number): void {
    if (nowMs - this.lastSweepMs < Math.min(this.lagMs, 1_000)) return;
    this.lastSweepMs = nowMs;
    const cutoffMs = nowMs - this.lagMs;
    for (const [id, history] of this.items) {
      const old = history.changes.filter((change) => change.atMs <= cutoffMs);
      if (old.length > 0) {
        history.settled = old.at(-1)!.entry;
        history.changes = history.changes.slice(old.length);
      }
      if (history.writing === 0 && history.changes.length === 0 && !this.learning.has(id)) this.items.delete(id);
    }
  }
}
