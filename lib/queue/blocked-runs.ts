/**
 * A throttle key with no room for its next job (full, or limited below the job's weight) can hold more due
 * entries at the head of a lane shard than one poll reads (CLAIM_PAGE_SIZE), and then hid every other key's
 * later jobs there. A poller now remembers, per type and shard, the leading run of such entries: the last one
 * and the keys in it. It reads past the run for as long as none of those keys has room, so a blocked backlog is
 * read once rather than every poll, and forgets it as soon as one of them has room (or when its invocation
 * ends, about a minute on AWS). Claims are untouched: this only chooses where a read begins.
 */
import type { JobType } from '../domain/job-type.js';
import { slotsFor, throttleKeyLimit } from '../domain/slots.js';
import { readInFlight } from '../store/counters.js';
import type { DueEntry } from '../store/due-index.js';
import { laneBucketOf } from '../store/keys.js';
import type { QueueContext } from './context.js';
import type { ScanAfter } from './lanes.js';

export interface BlockedRun extends ScanAfter {
  /** The run's last entry: the next read of the shard begins just after it. */
  entry: DueEntry;
  bucket: number;
  /** Each key in the run, with the lightest weight of its jobs there: the key has room again once that fits. */
  keys: Map<string, number>;
}

/** A poller's blocked runs, by type and shard (`blockedRunKey`). */
export type BlockedRuns = Map<string, BlockedRun>;

export const blockedRunKey = (type: string, shard: number): string => `${type}#${shard}`;

/**
 * The runs of `jobType` still blocked, by shard: a run of which some key now has room for its lightest job (its
 * jobs finished, or its limit was raised) is forgotten, so the next read starts from the lane's cursor again.
 */
export async function stillBlockedRuns(ctx: QueueContext, jobType: JobType, shards: number[], runs: BlockedRuns): Promise<Map<number, BlockedRun>> {
  const held = shards.flatMap((shard) => {
    const run = runs.get(blockedRunKey(jobType.name, shard));
    return run ? [{ shard, run }] : [];
  });
  if (held.length === 0) return new Map();
  const limitOf = (key: string): number => throttleKeyLimit(jobType, key) ?? Infinity;
  // A key whose limit is below its lightest job (a key held at 0) has room only once its limit is raised, which
  // the job type shows: the counters are read only for keys that are full for now.
  const full = held.flatMap(({ run }) => [...run.keys].filter(([key, weight]) => limitOf(key) >= weight).map(([key]) => key));
  const inFlight = full.length > 0 ? (await readInFlight(ctx, jobType.name, [...new Set(full)])).keys : new Map<string, number>();
  const hasRoom = (key: string, weight: number): boolean => limitOf(key) - (inFlight.get(key) ?? 0) >= weight;
  const blocked = new Map<number, BlockedRun>();
  for (const { shard, run } of held) {
    if ([...run.keys].some(([key, weight]) => hasRoom(key, weight))) runs.delete(blockedRunKey(jobType.name, shard));
    else blocked.set(shard, run);
  }
  return blocked;
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
  for (const entry of read) {
    const slots = slotsFor(jobType, { weight: entry.weight ?? 1, ...(entry.throttleKey !== undefined ? { throttleKey: entry.throttleKey } : {}) });
    const bucket = laneBucketOf(entry.gsi1pk)?.bucket;
    if (slots?.key === undefined || !fullKeys.has(slots.key) || bucket === undefined) break;
    const keys = new Map(extended?.keys);
    keys.set(slots.key, Math.min(keys.get(slots.key) ?? Infinity, slots.weight));
    extended = { entry, bucket, keys };
    joined++;
  }
  return { run: extended, wholePage: joined === read.length };
}
