/**
 * One poll: finds the due jobs of every active type lane by lane, claims them
 * with bounded parallelism, and hands them to workers in batches as they fill.
 */
import pLimit from 'p-limit';
import { DEFAULT_PRIORITY } from '../../domain/job.js';
import { claimsJobs, type JobType, type PriorityOrder } from '../../domain/job-type.js';
import { abortableSleep } from '../../domain/sleep.js';
import { recordGap, type DueEntry } from '../../store/due-index.js';
import { bucketOf, jobKey, laneBucketOf, queuedSortKey, sortKeyTimeMs, type Lane } from '../../store/keys.js';
import { createBatcher } from './worker-batches.js';
import { type WorkerBatch } from '../../domain/invocations.js';
import { blockedRunKey, extendBlockedRun, nextPlaceOfKey, placesToRead, stillBlockedRuns, type BlockedRun, type RefilledRun } from './blocked-runs.js';
import { claimDueEntries, throwFirstRejection, type ClaimSink } from './claim-due-entries.js';
import { handBackable, type ClaimResult } from '../attempt/claim.js';
import { releaseClaim } from '../attempt/end-attempt.js';
import type { QueueContext } from '../context.js';
import { scanLane, type ScanAfter } from '../lanes/lane-walk.js';
import { advanceLaneCursor, readWalkCursor } from '../lanes/bucket-directory.js';
import { returnPollTokens, takePollTokens } from '../limits/rate-tokens.js';
import { hasKeyRates } from '../../domain/rate.js';
import { emptyPollResult, cursorCacheKey, type Poll, type PollOptions, type PollResult, type RecentClaims } from './poll-state.js';

function readyAtMsOf(entry: DueEntry): number {
  return sortKeyTimeMs(entry.gsi1sk);
}

/**
 * The order a type's due jobs are claimed in: critical jobs (weight 0) first,
 * then by ready time and priority as the type says (lower priority first).
 */
export function orderDueEntries(entries: DueEntry[], order: PriorityOrder): DueEntry[] {
  const rank = (entry: DueEntry): [number, number, number] => {
    const critical = entry.weight === 0 ? 0 : 1;
    const priority = entry.priority ?? DEFAULT_PRIORITY;
    return order === 'priority_first' ? [critical, priority, readyAtMsOf(entry)] : [critical, readyAtMsOf(entry), priority];
  };
  return entries
    .map((entry) => ({ entry, rank: rank(entry) }))
    .sort((a, b) => a.rank[0] - b.rank[0] || a.rank[1] - b.rank[1] || a.rank[2] - b.rank[2] || a.entry.pk.localeCompare(b.entry.pk))
    .map(({ entry }) => entry);
}

const entryId = (entry: Pick<DueEntry, 'pk' | 'gsi1sk'>): string => `${entry.pk}\u0000${entry.gsi1sk}`;

/**
 * Until when a claimed entry is skipped: the index lag the queue tolerates is the cursor's safety margin, past
 * which an entry the index still shows could be behind a cursor anyway; and never past the claim's end, after
 * which the sweeper may hand the job back under the same sort key.
 */
function skipClaimedUntilMs(ctx: QueueContext, nowMs: number, claimEndsByMs: number): number {
  return Math.min(nowMs + ctx.settings.cursorSafetyMarginMs, claimEndsByMs);
}

/**
 * Jobs falling due within this long of each other are claimed together, when the last of them falls due:
 * a job starts at most this late for the timer's sake, and a worker batch carries what fell due in it.
 */
export const CLAIM_AHEAD_SLICE_MS = 25;

/**
 * The due entries of one lane shard, moving its cursor past settled empty buckets, or after a blocked run (see
 * blocked-runs.ts); `full` when it read a whole page.
 */
async function scanShard(
  poll: Poll,
  jobType: JobType,
  shard: number,
  upToMs: number,
  after?: ScanAfter,
): Promise<{ entries: DueEntry[]; full: boolean; readAfterFromBucket: number | undefined }> {
  const { ctx, options, result } = poll;
  const { settings } = ctx;
  const lane: Lane = { kind: 'queued', type: jobType.name };
  const cacheKey = cursorCacheKey(jobType.name, shard);
  let cursor: number | undefined;
  let directoryFromBucket = options.directoryFromBuckets?.get(cacheKey);
  if (options.cursors.has(cacheKey)) cursor = options.cursors.get(cacheKey);
  else {
    const read = await readWalkCursor(ctx, lane, shard, jobType.directoryFromMs);
    cursor = read.bucket;
    directoryFromBucket = read.directoryFromBucket;
    if (directoryFromBucket !== undefined) options.directoryFromBuckets?.set(cacheKey, directoryFromBucket);
    if (read.gap) options.settledGaps?.set(cacheKey, { gap: read.gap, recordedUntilBucket: read.gap.untilBucket });
  }
  const known = options.settledGaps?.get(cacheKey);
  const gap = known?.gap;
  // Between polls of every lane, the buckets behind the current one found empty lately are not read again (a late
  // write there waits for the next poll of every lane, within JOB_TYPES_REFRESH_MS); nor while a gap is walked.
  const readFromBucket = options.types && !after && !gap ? options.quietBefore?.get(cacheKey) : undefined;
  const scan = await scanLane(ctx, lane, shard, {
    cursor,
    startBucket: bucketOf(jobType.createdAtMs, settings.bucketMs),
    limit: settings.claimPageSize,
    upToMs,
    // A run that begins behind the cursor (its jobs were since cancelled or moved) is not read from.
    ...(after && (cursor === undefined || after.bucket >= cursor) ? { after } : {}),
    ...(gap ? { gap } : {}),
    directoryFromBucket,
    stopAtMs: options.stopWalksAtMs,
    readFromBucket,
  });
  if (scan.quietBefore !== undefined) options.quietBefore?.set(cacheKey, scan.quietBefore);
  else if (!after) options.quietBefore?.delete(cacheKey);
  options.cursors.set(cacheKey, cursor);
  if (!scan.gap) options.settledGaps?.delete(cacheKey);
  else if (options.settledGaps) {
    let recordedUntilBucket = known?.recordedUntilBucket;
    if (scan.gap.untilBucket > (recordedUntilBucket ?? -Infinity)) {
      // At most once per bucket that settles while the cursor is held; a refusal means the cursor moved on.
      if (!(await recordGap(ctx, lane, shard, cursor, scan.gap))) options.cursors.delete(cacheKey);
      recordedUntilBucket = scan.gap.untilBucket;
    }
    options.settledGaps.set(cacheKey, { gap: scan.gap, recordedUntilBucket });
  }
  if (scan.advanceTo !== undefined) {
    const moved = await advanceLaneCursor(ctx, lane, shard, { from: cursor, to: scan.advanceTo, directoryFromBucket });
    if (moved) options.cursors.set(cacheKey, scan.advanceTo);
    else options.cursors.delete(cacheKey);
  }
  for (const entry of scan.entries) result.oldestDueLagMs = Math.max(result.oldestDueLagMs, Math.max(0, poll.nowMs - readyAtMsOf(entry)));
  // A walk stopped short while its cursor is held (a backlog) goes on over the next polls through its gap, paced.
  if (!scan.caughtUp && scan.advanceTo !== undefined) result.behind = true;
  if (scan.entries.length > 0 || !scan.caughtUp) result.typesWithWork.add(jobType.name);
  return { entries: scan.entries, full: scan.entries.length >= settings.claimPageSize, readAfterFromBucket: scan.readAfterFromBucket };
}

/**
 * Claims `entries` (due by now) within the type's rate and its keys' rates. The tokens a claim used are counted
 * as claims are recorded; the rest go back, unless a claim threw: it may have landed, and which entries' claims
 * threw is not known, so the poll keeps all its tokens, which only slows the type or key for a moment.
 */
async function claimWithinRate(poll: Poll, sink: ClaimSink, jobType: JobType, entries: DueEntry[], fullKeys: Set<string>): Promise<void> {
  const { ctx, rateBuckets } = poll;
  const tokens = await takePollTokens(ctx, jobType, entries, rateBuckets);
  let total = 0;
  const byKey = new Map<string, number>();
  const counting: ClaimSink = {
    limit: sink.limit,
    record(claim, recordedType, entry) {
      const used = sink.record(claim, recordedType, entry);
      if (used) {
        total++;
        if (entry.throttleKey !== undefined && tokens.keyTokens.has(entry.throttleKey)) byKey.set(entry.throttleKey, (byKey.get(entry.throttleKey) ?? 0) + 1);
      }
      return used;
    },
  };
  await claimDueEntries(ctx, counting, jobType, tokens.entries, tokens.typeTokens, fullKeys);
  await returnPollTokens(ctx, jobType, tokens, { total, byKey }, rateBuckets);
  // Only now: a key short of tokens still claims with those it got. Then it holds back only its own jobs, as a
  // full key does, and the poll reads on past them.
  for (const key of tokens.shortKeys) fullKeys.add(key);
}

/**
 * Rate tokens are taken once per poll, for what is due now, so a type with a rate of its own or of a key does
 * not claim ahead. Concurrency limits are reserved per claim slice (queue/poll/claim-due-entries.ts), so limited types claim
 * ahead like unlimited ones.
 */
function mayClaimAhead(jobType: JobType): boolean {
  return jobType.rateLimitPerS === null && !hasKeyRates(jobType);
}

/**
 * The entries not yet due, in slices of CLAIM_AHEAD_SLICE_MS by ready time: each slice is claimed once its last
 * entry is due (a claim before `run_after` fails its condition), and handed to a worker at once. The claims of
 * one slice may still be in flight when the next falls due: waiting for them would let the slices fall behind.
 */
async function claimAhead(poll: Poll, sink: ClaimSink, jobType: JobType, ahead: DueEntry[]): Promise<void> {
  const sleep = poll.options.sleep ?? abortableSleep;
  const byReadyTime = [...ahead].sort((a, b) => readyAtMsOf(a) - readyAtMsOf(b));
  const claims: Promise<void>[] = [];
  while (byReadyTime.length > 0) {
    const sliceEndMs = readyAtMsOf(byReadyTime[0]!) + CLAIM_AHEAD_SLICE_MS;
    const count = byReadyTime.findIndex((entry) => readyAtMsOf(entry) >= sliceEndMs);
    const slice = byReadyTime.splice(0, count === -1 ? byReadyTime.length : count);
    const dueAtMs = readyAtMsOf(slice.at(-1)!);
    // A timer may fire a little before the clock reads its time, and a claim before run_after fails.
    while (poll.ctx.nowMs() < dueAtMs && !poll.options.signal?.aborted) await sleep(dueAtMs - poll.ctx.nowMs());
    if (poll.options.signal?.aborted) break;
    claims.push(claimDueEntries(poll.ctx, sink, jobType, orderDueEntries(slice, jobType.priorityOrder), slice.length).then(poll.flush));
  }
  throwFirstRejection(await Promise.allSettled(claims));
}

type ShardScan = PromiseSettledResult<Awaited<ReturnType<typeof scanShard>>>;

/** Claims what the shards' scans found: what is due now, then what falls due within the claim-ahead window. */
async function claimFound(poll: Poll, sink: ClaimSink, jobType: JobType, scans: ShardScan[], fullKeys: Set<string>): Promise<void> {
  const recent = poll.options.recentClaims;
  const found = scans.flatMap((scan) => (scan.status === 'fulfilled' ? scan.value.entries : [])).filter((entry) => !recent?.has(entryId(entry)));
  const dueNow = orderDueEntries(found.filter((entry) => readyAtMsOf(entry) <= poll.nowMs), jobType.priorityOrder);
  if (dueNow.length > 0) await claimWithinRate(poll, sink, jobType, dueNow, fullKeys);
  const ahead = found.filter((entry) => readyAtMsOf(entry) > poll.nowMs);
  if (ahead.length > 0) {
    // What was claimed now goes to a worker before the poll waits for what falls due later.
    poll.flush();
    await claimAhead(poll, sink, jobType, ahead);
  }
  const full = scans.some((scan) => scan.status === 'fulfilled' && scan.value.full);
  if (full && (poll.movedByType.get(jobType.name) ?? 0) > 0) poll.result.saturated = true;
}

/**
 * How many pages past blocked keys or entries already claimed one poll reads in a shard at most (10 000 entries
 * at the default page): a larger blocked backlog is read past over the next polls.
 */
export const MAX_PAGES_PAST_BLOCKED_KEYS = 100;

/** Where the next page of a shard begins when every entry of a whole page was one `recentClaims` skips. */
function pastClaimedPage(scan: ShardScan, recent: RecentClaims | undefined): ScanAfter | undefined {
  if (!recent || scan.status !== 'fulfilled' || !scan.value.full || !scan.value.entries.every((entry) => recent.has(entryId(entry)))) return undefined;
  const last = scan.value.entries.at(-1);
  const bucket = last && laneBucketOf(last.gsi1pk)?.bucket;
  return last && bucket !== undefined ? { entry: last, bucket } : undefined;
}

/** How many places of refilled keys one poll reads in a shard's blocked run at most; the rest wait for the next polls. */
export const MAX_REFILLED_KEY_READS = 4;

/**
 * Claims the jobs of the keys of a shard's blocked run whose buckets refilled: each is read from its place in the
 * run (one page a place, oldest first; keys at one place share the read), and its place moves past its jobs
 * claimed. A key's oldest jobs are claimed first, and never wait for another key's backlog ahead of them.
 */
async function claimRefilledKeys(poll: Poll, sink: ClaimSink, jobType: JobType, { shard, run, keys: refilled }: RefilledRun, upToMs: number): Promise<void> {
  const seenClaimed = (entry: DueEntry): boolean => poll.attempted.has(entryId(entry)) || (poll.options.recentClaims?.has(entryId(entry)) ?? false);
  for (const { from, keys } of placesToRead(refilled, MAX_REFILLED_KEY_READS)) {
    const scan = await scanShard(poll, jobType, shard, upToMs, from ?? undefined);
    await claimFound(poll, sink, jobType, [{ status: 'fulfilled', value: scan }], new Set());
    for (const key of keys) run.rateFrom.set(key, nextPlaceOfKey(scan.entries, key, from, seenClaimed));
  }
}

async function pollType(poll: Poll, sink: ClaimSink, jobType: JobType): Promise<void> {
  const upToMs = mayClaimAhead(jobType) ? poll.nowMs + poll.claimAheadMs : poll.nowMs;
  poll.options.readUpTo?.set(jobType.name, upToMs);
  const runs = jobType.throttle ? poll.options.blockedRuns : undefined;
  const { blocked: after, refilled } = runs ? await stillBlockedRuns(poll.ctx, jobType, poll.shards, runs, poll.rateBuckets) : { blocked: new Map<number, BlockedRun>(), refilled: [] };
  const refills = await Promise.allSettled(refilled.map((refill) => claimRefilledKeys(poll, sink, jobType, refill, upToMs)));
  throwFirstRejection(refills);
  // Under index lag, claimed entries can fill whole pages at the head of a lane: the jobs due behind them are
  // read in the same poll rather than once the index lets go of them. Only for this poll: a job enqueued or
  // retried later may land before them.
  const pastClaimed = new Map<number, ScanAfter>();
  let shards = poll.shards;
  for (let page = 0; shards.length > 0 && page < MAX_PAGES_PAST_BLOCKED_KEYS; page++) {
    const fullKeys = new Set<string>();
    // Settled, not all-or-nothing: one lane's failure must not keep the other lanes' jobs from being claimed.
    const scans = await Promise.allSettled(shards.map((shard) => scanShard(poll, jobType, shard, upToMs, pastClaimed.get(shard) ?? after.get(shard))));
    const claimedPages = scans.map((scan) => pastClaimedPage(scan, poll.options.recentClaims));
    await claimFound(poll, sink, jobType, scans, fullKeys);
    const readOn: number[] = [];
    scans.forEach((scan, at) => {
      const shard = shards[at];
      const claimedPage = claimedPages[at];
      if (claimedPage && shard !== undefined) {
        pastClaimed.set(shard, claimedPage);
        readOn.push(shard);
        return;
      }
      // A blocked run is made of entries read one after another from where it began.
      if (!runs || scan.status !== 'fulfilled' || shard === undefined || pastClaimed.has(shard)) return;
      const extended = extendBlockedRun(jobType, after.get(shard), scan.value.entries, fullKeys);
      const { wholePage } = extended;
      const { readAfterFromBucket } = scan.value;
      // Past an unchanged run, a bucket found settled and empty after it is not read again.
      const run = extended.run && extended.run === after.get(shard) && readAfterFromBucket !== undefined ? { ...extended.run, readFromBucket: readAfterFromBucket } : extended.run;
      if (!run) return;
      runs.set(blockedRunKey(jobType.name, shard), run);
      after.set(shard, run);
      // A whole page of blocked keys: what lies after it may be another key's, due as long.
      if (wholePage && scan.value.full) readOn.push(shard);
    });
    throwFirstRejection(scans);
    shards = readOn;
  }
  if (runs && poll.shards.some((shard) => runs.has(blockedRunKey(jobType.name, shard)))) poll.result.typesWithWork.add(jobType.name);
}

/**
 * Hands a batch to a worker. One whose invoke failed has its claims handed back at once rather than after the
 * visibility timeout; since Lambda may have queued it all the same (a timeout, a lost answer), its seats are first
 * taken away from any worker (queue/attempt/claim.ts, handBackable), so a copy that still arrives runs none of its jobs.
 * A release that fails leaves the claim to lapse; the sweeper then hands it back.
 */
async function dispatch(poll: Poll, batch: WorkerBatch): Promise<void> {
  try {
    await poll.options.invoker.invoke(batch);
    poll.result.dispatched += batch.jobs.length;
  } catch {
    const backable = await handBackable(poll.ctx, batch.jobs);
    const released = await Promise.allSettled(backable.map((job) => releaseClaim(poll.ctx, job)));
    poll.result.released += released.filter((outcome) => outcome.status === 'fulfilled' && outcome.value).length;
    // Handed back under the sort key it was claimed from: the next poll must not skip it.
    for (const job of backable) poll.options.recentClaims?.delete(entryId({ pk: jobKey(job.type, job.id).pk, gsi1sk: queuedSortKey(job.runAfterMs, job.id) }));
  }
}

export async function pollOnce(ctx: QueueContext, options: PollOptions): Promise<PollResult> {
  const dispatches: Promise<void>[] = [];
  // A batch goes to a worker as soon as it is full, so early claims do not wait out the slow ones.
  const batcher = createBatcher(ctx.settings.workerBatchSize, (batch) => dispatches.push(dispatch(poll, batch)));
  const poll: Poll = {
    ctx,
    options,
    result: emptyPollResult(),
    nowMs: ctx.nowMs(),
    claimAheadMs: options.claimAheadMs ?? 0,
    flush: () => batcher.close(),
    rateBuckets: options.rateBuckets ?? new Map(),
    movedByType: new Map(),
    attempted: new Set(),
    shards: options.shards ?? Array.from({ length: ctx.settings.shards }, (_, shard) => shard),
  };
  const { result } = poll;
  for (const [entry, skipUntilMs] of options.recentClaims ?? []) {
    if (skipUntilMs <= poll.nowMs) options.recentClaims?.delete(entry);
  }
  const sink: ClaimSink = {
    limit: pLimit(ctx.settings.claimConcurrency),
    record(claim: ClaimResult, jobType: JobType, entry: DueEntry): boolean {
      poll.attempted.add(entryId(entry));
      if (claim.kind === 'claimed' || claim.kind === 'expired') poll.movedByType.set(jobType.name, (poll.movedByType.get(jobType.name) ?? 0) + 1);
      // Another poller's claim, lost to, was made before now: unless its worker extends it, it lapses within the
      // type's visibility timeout from now.
      const claimEndsByMs = claim.kind === 'claimed' ? (claim.job.claimedUntilMs ?? poll.nowMs) : poll.nowMs + jobType.visibilityTimeoutS * 1_000;
      const skipUntilMs = skipClaimedUntilMs(ctx, poll.nowMs, claimEndsByMs);
      options.recentClaims?.set(entryId(entry), skipUntilMs);
      if (claim.kind === 'claimed') {
        result.claimed++;
        const { job } = claim;
        if (job.runAfterMs <= (options.readUpToBefore?.get(job.type) ?? -Infinity)) result.arrivals++;
        // Claimed from an entry the index kept from before the job was moved: its current one lingers as well.
        options.recentClaims?.set(entryId({ pk: entry.pk, gsi1sk: queuedSortKey(job.runAfterMs, job.id) }), skipUntilMs);
        batcher.add(job, jobType);
        return true;
      }
      if (claim.kind === 'expired') result.expired++;
      else if (claim.kind === 'lost') result.lostRaces++;
      return false;
    },
  };
  // A paused type (paused, or concurrency 0) keeps its jobs queued; nothing is claimed.
  const activeTypes = options.jobTypes.filter((jobType) => claimsJobs(jobType) && (options.types?.has(jobType.name) ?? true));
  // Settled too: what one type claimed is dispatched whatever happened to another.
  // In a poll of every lane, the types with work go first: they do not wait behind the idle types' reads.
  const { firstTypes } = options;
  const first = firstTypes ? activeTypes.filter((jobType) => firstTypes.has(jobType.name)) : activeTypes;
  const rest = firstTypes ? activeTypes.filter((jobType) => !firstTypes.has(jobType.name)) : [];
  const typeOutcomes = await Promise.allSettled(first.map((jobType) => pollType(poll, sink, jobType)));
  if (rest.length > 0) typeOutcomes.push(...(await Promise.allSettled(rest.map((jobType) => pollType(poll, sink, jobType)))));
  batcher.close();
  await Promise.all(dispatches);
  // Reported only now, after everything claimed was handed over or released.
  throwFirstRejection(typeOutcomes);
  return result;
}
