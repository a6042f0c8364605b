/**
 * A throttle key with no room for its next job (full, limited below the job's weight, or out of rate tokens) can
 * hold more due entries at the head of a lane shard than one poll reads (CLAIM_PAGE_SIZE), and then hid every
 * other key's later jobs there. A poller now remembers, per type and shard, the leading run of such entries: the
 * last one and the keys in it. It reads past the run for as long as none of those keys has room, so a blocked
 * backlog is read once rather than every poll, and forgets it as soon as one of them has room (or when its
 * invocation ends, about a minute on AWS). A key held back by its rate has room again at every refill: the run is
 * kept, and the key read from its own place in it. Claims are untouched: this only chooses where a read begins.
 */
import type { JobType } from '../../domain/job-type.js';
import { throttleKeyRatePerS } from '../../domain/rate.js';
import { slotsFor, throttleKeyLimit } from '../../domain/slots.js';
import { readInFlight } from '../../store/counters.js';
import type { DueEntry } from '../../store/due-index.js';
import { laneBucketOf } from '../../store/keys.js';
import type { QueueContext } from '../context.js';
import type { ScanAfter } from '../lanes/lane-walk.js';
import { mayHoldToken, type RateBucketCache } from '../limits/rate-tokens.js';

export interface BlockedRun extends ScanAfter {
  /** The run's last entry: the next read of the shard begins just after it. */
  entry: DueEntry;
  bucket: number;
  /** Each key in the run, with the lightest weight of its jobs there: the key has room again once that fits. */
  keys: Map<string, number>;
  /**
   * Where each key of the run held back by its rate is read from once its bucket refills: just before the first
   * of its jobs this poller has not seen claimed (null: from the lane's cursor). Later polls read past the run,
   * so the key's oldest jobs are found there, not behind another key's backlog.
   */
  rateFrom: Map<string, ScanAfter | null>;
}

/** A poller's blocked runs, by type and shard (`blockedRunKey`). */
export type BlockedRuns = Map<string, BlockedRun>;

export const blockedRunKey = (type: string, shard: number): string => `${type}#${shard}`;

/** A key of a blocked run whose bucket may hold a token again, with where its jobs are read from. */
export interface RefilledKey {
  key: string;
  from: ScanAfter | null;
}

/** A shard's blocked run with the keys in it whose buckets refilled. */
export interface RefilledRun {
  shard: number;
  run: BlockedRun;
  keys: RefilledKey[];
}

/**
 * The runs of `jobType` still blocked, by shard: a run of which some key now has room for its lightest job (its
 * jobs finished, or its limit was raised) is forgotten, so the next read starts from the lane's cursor again. A key
 * with a rate (`rate_per_s`) is short of tokens again after each refill, so its run is kept and read past; once its
 * bucket may hold a token (as this poller last saw it) and its limit, if any, has room, it is in `refilled`, to be
 * read from its place in the run.
 */
export async function stillBlockedRuns(
  ctx: QueueContext,
  jobType: JobType,
  shards: number[],
  runs: BlockedRuns,
  rateBuckets: RateBucketCache,
): Promise<{ blocked: Map<number, BlockedRun>; refilled: RefilledRun[] }> {
  const held = shards.flatMap((shard) => {
    const run = runs.get(blockedRunKey(jobType.name, shard));
    return run ? [{ shard, run }] : [];
  });
  if (held.length === 0) return { blocked: new Map(), refilled: [] };
  const limitOf = (key: string): number | undefined => throttleKeyLimit(jobType, key);
  // A key whose limit is below its lightest job (a key held at 0) has room only once its limit is raised, which
  // the job type shows: the counters are read only for keys that are full for now.
  const full = held.flatMap(({ run }) => [...run.keys].filter(([key, weight]) => (limitOf(key) ?? -Infinity) >= weight).map(([key]) => key));
  const inFlight = full.length > 0 ? (await readInFlight(ctx, jobType.name, [...new Set(full)])).keys : new Map<string, number>();
  const limitHasRoom = (key: string, weight: number): boolean => (limitOf(key) ?? Infinity) - (inFlight.get(key) ?? 0) >= weight;
  const tokenDue = (key: string): boolean => {
    const ratePerS = throttleKeyRatePerS(jobType, key);
    return ratePerS !== undefined && mayHoldToken(ctx, { type: jobType.name, key }, ratePerS, rateBuckets);
  };
  const blocked = new Map<number, BlockedRun>();
  const refilled: RefilledRun[] = [];
  for (const { shard, run } of held) {
    const keys = [...run.keys];
    if (keys.some(([key, weight]) => throttleKeyRatePerS(jobType, key) === undefined && limitHasRoom(key, weight))) {
      runs.delete(blockedRunKey(jobType.name, shard));
      continue;
    }
    blocked.set(shard, run);
    const due = keys.filter(([key, weight]) => limitHasRoom(key, weight) && tokenDue(key)).map(([key]) => ({ key, from: run.rateFrom.get(key) ?? null }));
    if (due.length > 0) refilled.push({ shard, run, keys: due });
  }
  return { blocked, refilled };
}

/** Lane order of places to read from: the cursor (null) first. */
function placeOrder(a: ScanAfter | null, b: ScanAfter | null): number {
  if (!a || !b) return (a ? 1 : 0) - (b ? 1 : 0);
  return a.bucket - b.bucket || (a.entry.gsi1sk < b.entry.gsi1sk ? -1 : a.entry.gsi1sk > b.entry.gsi1sk ? 1 : 0);
}

/** The places refilled keys are read from, oldest first, at most `most`: keys at one place share its read. */
export function placesToRead(refilled: RefilledKey[], most: number): { from: ScanAfter | null; keys: string[] }[] {
  const places = new Map<string, { from: ScanAfter | null; keys: string[] }>();
  for (const { key, from } of refilled) {
    const id = from ? `${from.entry.pk}\u0000${from.entry.gsi1sk}` : '';
    places.set(id, { from, keys: [...(places.get(id)?.keys ?? []), key] });
  }
  return [...places.values()].sort((a, b) => placeOrder(a.from, b.from)).slice(0, most);
}

/**
 * Where a key is read from next, after a page read from `from`: just before the first of its entries there not
 * seen claimed (or moved), else past the page.
 */
export function nextPlaceOfKey(read: DueEntry[], key: string, from: ScanAfter | null, seenClaimed: (entry: DueEntry) => boolean): ScanAfter | null {
  let previous = from;
  for (const entry of read) {
    if (entry.throttleKey === key && !seenClaimed(entry)) return previous;
    const bucket = laneBucketOf(entry.gsi1pk)?.bucket;
    if (bucket !== undefined) previous = { entry, bucket };
  }
  return previous;
}

/**
 * `run` (if any) extended by the leading entries of `read` (one shard's page, oldest first) whose key had no room
 * in this poll (`fullKeys`); `wholePage` when every entry read joined it, so the next page should be read now.
 */
export function extendBlockedRun(
  jobType: JobType,
  run: BlockedRun | undefined,
  read: DueEntry[],
  fullKeys: ReadonlySet<string>,
): { run: BlockedRun | undefined; wholePage: boolean } {
  let extended = run;
  let joined = 0;
  // The page was read from just after the run, or from the cursor when there was none.
  let previous: ScanAfter | null = run ?? null;
  for (const entry of read) {
    const weight = entry.weight ?? 1;
    const slots = slotsFor(jobType, { weight, ...(entry.throttleKey !== undefined ? { throttleKey: entry.throttleKey } : {}) });
    // A key's rate holds back every job of the key, of weight 0 too; its in-flight limit only jobs taking a slot.
    const key = slots?.key ?? (entry.throttleKey !== undefined && throttleKeyRatePerS(jobType, entry.throttleKey) !== undefined ? entry.throttleKey : undefined);
    const bucket = laneBucketOf(entry.gsi1pk)?.bucket;
    if (key === undefined || !fullKeys.has(key) || bucket === undefined) break;
    const keys = new Map(extended?.keys);
    keys.set(key, Math.min(keys.get(key) ?? Infinity, weight));
    const rateFrom = new Map(extended?.rateFrom);
    if (!rateFrom.has(key) && throttleKeyRatePerS(jobType, key) !== undefined) rateFrom.set(key, previous);
    extended = { entry, bucket, keys, rateFrom };
    previous = { entry, bucket };
    joined++;
  }
  return { run: extended, wholePage: joined === read.length };
}
