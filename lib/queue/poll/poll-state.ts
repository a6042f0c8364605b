/**
 * What one poll works with and answers: its options, the caches the loop keeps across polls (cursors, the
 * bucket directory, settled gaps, recent claims), and the counts it reports.
 */
import type { JobType } from '../../domain/job-type.js';
import type { WorkerInvoker } from '../../domain/invocations.js';
import type { SettledGap } from '../../store/due-index.js';
import type { BlockedRuns } from './blocked-runs.js';
import type { RateBucketCache } from '../limits/rate-tokens.js';
import type { QueueContext } from '../context.js';

export interface PollResult {
  claimed: number;
  lostRaces: number;
  expired: number;
  dispatched: number;
  released: number;
  /**
   * Some lane returned a full page and its type claimed (or expired) jobs in this poll: more may be due right
   * now. A full page of which nothing could be claimed (a type at its concurrency, a key at its limit) is not
   * saturation: polling again at once would only read the same page again.
   */
  saturated: boolean;
  /**
   * Jobs claimed that were due within what the previous round of polls read of their type: they arrived due
   * after it read (or a race or a limit kept it from them). The loop paces its polls by them.
   */
  arrivals: number;
  /** Age of the oldest due job seen, in ms. */
  oldestDueLagMs: number;
  /**
   * Some lane's walk ran out of queries (lanes.ts) after moving its cursor: the rest of it is far behind, and
   * the loop polls again at once to catch up.
   */
  behind: boolean;
  /**
   * The types whose lanes this poll found an entry in (due, ahead, or held back by a limit), whose walk is behind,
   * or that keep a blocked run: polled again at the next poll, where the rest wait for a lane hold (store/wake.ts).
   */
  typesWithWork: Set<string>;
}

/** Cursors this poller has read or moved, so a steady loop does not re-read them every poll. */
export type CursorCache = Map<string, number | undefined>;

/** A lane shard's key in a CursorCache (and the caches kept beside it). */
export const cursorCacheKey = (type: string, shard: number): string => `${type}#${shard}`;

/** Where the bucket directory is complete from, by the cursor's cache key, as read with the cursor (lanes.ts). */
export type DirectoryFromBuckets = Map<string, number>;

/**
 * Settled empty buckets ahead of each lane shard's cursor (store/due-index.ts), by the cursor's cache key, with
 * how far the gap recorded on the cursor reaches: a longer one is recorded for the pollers that come next.
 */
export type SettledGaps = Map<string, { gap: SettledGap; recordedUntilBucket: number | undefined }>;

export interface PollOptions {
  jobTypes: JobType[];
  invoker: WorkerInvoker;
  cursors: CursorCache;
  /** Token buckets this poller has seen; a fresh map costs one failed write per rate-limited type. */
  rateBuckets?: RateBucketCache;
  shards?: number[];
  /** Poll only the lanes of these types; undefined: of every active type. */
  types?: ReadonlySet<string>;
  /**
   * Read and claim these types' lanes first, the other types' once they are done (their claims ahead included): a
   * poll of every lane reads the idle types' too, and the types with work must not wait behind those reads.
   */
  firstTypes?: ReadonlySet<string>;
  /**
   * Also read the jobs that fall due within this long, and claim each when it falls due, from a timer inside
   * the poll (types without concurrency, throttle or rate limits). The loop passes its poll interval, so a job
   * enqueued ahead starts on time whatever the interval. @default 0
   */
  claimAheadMs?: number;
  /** Waits for the timers of claims ahead; tests pass one that moves their clock. */
  sleep?: (ms: number) => Promise<void>;
  /** Stops waiting for claims ahead: what is left is found again by the next poll. */
  signal?: AbortSignal;
  /**
   * When the poller's run must end: a lane's walk stops there, so what the poll claimed reaches a worker before
   * the invocation's timeout. The rest of the walk is the next run's.
   */
  stopWalksAtMs?: number;
  /**
   * Entries claimed lately, by this poller or by another (a race this poller lost), by entry (job key and sort
   * key), with until when each is skipped: the index may still show an entry long after its claim moved it.
   */
  recentClaims?: RecentClaims;
  /** Leading runs of entries whose throttle keys had no room, read past while they stay blocked (blocked-runs.ts). */
  blockedRuns?: BlockedRuns;
  /** Settled empty buckets this poller found ahead of cursors held back, to go past unread. */
  settledGaps?: SettledGaps;
  /** Kept with `cursors`: a cursor taken from the cache is walked with the directory it was read with. */
  directoryFromBuckets?: DirectoryFromBuckets;
  /**
   * Where each lane shard's buckets behind the current one were last found empty, late enough that writes into
   * them have landed (lanes/lane-walk.ts's `quietBefore`): a poll of only some types begins there.
   */
  quietBefore?: Map<string, number>;
  /** How far the previous round of polls read each type's lanes, by type name, for `arrivals`. */
  readUpToBefore?: ReadonlyMap<string, number>;
  /** Where this poll records how far it read each type's lanes. */
  readUpTo?: Map<string, number>;
}

/**
 * Due entries known to be claimed, with until when (epoch ms) a poll skips them. Under index lag a claimed entry
 * stays at the head of its lane: a limited type reserved room for it on every poll and lost the race, and the
 * jobs behind it waited for the index to catch up. A retry comes back under another sort key, so it is never
 * skipped; a job handed back under the same one is skipped no longer than its claim could have lasted (the
 * sweeper hands a claim back only once it lapsed), and at once again when this poller handed it back itself.
 */
export type RecentClaims = Map<string, number>;

/** What one poll shares between its types and lanes. */
export interface Poll {
  ctx: QueueContext;
  options: PollOptions;
  result: PollResult;
  nowMs: number;
  /** How far ahead of now types that may claim ahead read their lanes. */
  claimAheadMs: number;
  /** Hands over the jobs claimed so far, so those claimed from a timer reach a worker at once. */
  flush: () => void;
  rateBuckets: RateBucketCache;
  shards: number[];
  /** Jobs each type claimed or found expired in this poll: what moved out of its lanes. */
  movedByType: Map<string, number>;
  /** The entries this poll tried to claim (claimed, expired, or lost to another poller), by entryId. */
  attempted: Set<string>;
}

export function emptyPollResult(): PollResult {
  return { claimed: 0, lostRaces: 0, expired: 0, dispatched: 0, released: 0, saturated: false, arrivals: 0, oldestDueLagMs: 0, behind: false, typesWithWork: new Set() };
}
