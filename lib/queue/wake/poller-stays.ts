/**
 * What a poller invocation looks for before it stays or sleeps (queue/wake/lease-keeper.ts): the earliest of a
 * schedule's next firing, when it fires them, and an entry of an active type's lane, from where its walks stand.
 */
import { randomUUID } from 'node:crypto';
import { claimsJobs, type JobType } from '../../domain/job-type.js';
import { queryDue, readLaneCursor } from '../../store/due-index.js';
import { bucketOf, SCHEDULES_PARTITION, sortKeyTimeMs, type Lane } from '../../store/keys.js';
import { readWakeState, type Walked, type WakeState } from '../../store/wake.js';
import { newsOf, startAwake, type AwakeRound, type AwakeWork, type SleepReason, type WakeNews } from './lease-keeper.js';
import type { QueueContext } from '../context.js';
import { listJobTypes } from '../catalog/job-types.js';
import { cursorCacheKey, type CursorCache } from '../poll/poll-state.js';
import type { PollerLoopOptions, PollRound } from '../poll/poller-loop.js';
import type { StartKind } from '../../domain/invocations.js';
import { earliestEntryDueAtMs, type LaneInReach } from './work-in-reach.js';

/** What the poll loop last knew: the types it polls and where their walks stand. */
export interface PollerView {
  jobTypes: readonly JobType[];
  cursors: CursorCache;
  /** When types had last changed, as the wake item told the loop before it listed `jobTypes`. */
  typesChangedAtMs: number;
}

const laneOf = (jobType: JobType): Lane => ({ kind: 'queued', type: jobType.name });

export interface PollerWorkOptions {
  shards: number[];
  firesSchedules: boolean;
  /** The wake item as the invocation found it: where the last holder left every walk. */
  state: WakeState;
  /** The loop's latest view; undefined before its first poll. */
  view: () => PollerView | undefined;
}

export function pollerWork(ctx: QueueContext, options: PollerWorkOptions): AwakeWork {
  const { shards, state } = options;
  const startBucketOf = (jobType: JobType): number => bucketOf(jobType.createdAtMs, ctx.settings.bucketMs);

  /** Where every walk stood, read from the cursors by a tick that found it unknown. */
  let walkedAtTick: Walked | undefined;

  /** Each lane from where the last holder said every walk stood, or, not known since a type changed, from its cursors. */
  async function lanesAsLeft(jobTypes: readonly JobType[]): Promise<LaneInReach[]> {
    const lanes = await Promise.all(
      jobTypes.map(async (jobType) => {
        const lane = laneOf(jobType);
        const walked = state.walkedFromBucket;
        const cursors = await Promise.all(shards.map(async (shard) => (walked === undefined ? (await readLaneCursor(ctx, lane, shard)).bucket : walked)));
        const fromBuckets = new Map(shards.map((shard, at) => [shard, Math.max(cursors[at] ?? -Infinity, startBucketOf(jobType))]));
        return { lane, shards, fromBucketOf: (shard: number) => fromBuckets.get(shard) ?? startBucketOf(jobType) };
      }),
    );
    if (state.walkedFromBucket === undefined && lanes.length > 0) {
      walkedAtTick = { bucket: Math.min(...lanes.flatMap((lane) => shards.map(lane.fromBucketOf))), typesChangedAtMs: state.typesChangedAtMs };
    }
    return lanes;
  }

  /** Each lane from its cursors as the loop holds them. */
  function lanesAsPolled(view: PollerView): LaneInReach[] {
    return view.jobTypes.filter(claimsJobs).map((jobType) => ({
      lane: laneOf(jobType),
      shards,
      fromBucketOf: (shard: number) => {
        const key = cursorCacheKey(jobType.name, shard);
        const known = view.cursors.has(key) ? view.cursors.get(key) : state.walkedFromBucket;
        return Math.max(known ?? -Infinity, startBucketOf(jobType));
      },
    }));
  }

  /** When the next schedule to fire by `untilMs` fires, from the index's schedules partition. */
  async function scheduleDueAtMs(untilMs: number): Promise<number | undefined> {
    if (!options.firesSchedules) return undefined;
    const [next] = await queryDue(ctx, SCHEDULES_PARTITION, untilMs, 1);
    return next ? sortKeyTimeMs(next.gsi1sk) : undefined;
  }

  async function lanes(): Promise<LaneInReach[]> {
    const view = options.view();
    return view ? lanesAsPolled(view) : lanesAsLeft((await listJobTypes(ctx)).filter(claimsJobs));
  }

  return {
    async earliestDueAtMs(untilMs) {
      const found = await Promise.all([scheduleDueAtMs(untilMs), (async () => earliestEntryDueAtMs(ctx, await lanes(), untilMs))()]);
      const dueAtMs = found.filter((atMs) => atMs !== undefined);
      return dueAtMs.length > 0 ? Math.min(...dueAtMs) : undefined;
    },
    walkedFromBucket() {
      const view = options.view();
      if (!view) return walkedAtTick;
      let walked = Infinity;
      for (const jobType of view.jobTypes.filter(claimsJobs)) {
        for (const shard of shards) {
          const key = cursorCacheKey(jobType.name, shard);
          if (!view.cursors.has(key)) return undefined;
          walked = Math.min(walked, view.cursors.get(key) ?? startBucketOf(jobType));
        }
      }
      return Number.isFinite(walked) ? { bucket: walked, typesChangedAtMs: view.typesChangedAtMs } : undefined;
    },
  };
}

export type PollerAwake =
  | { stays: false; reason: SleepReason }
  | {
      stays: true;
      afterRound: ((round: PollRound) => Promise<AwakeRound>) | undefined;
      /** The wake item's news as the lease found it, before the loop lists types. */
      news?: WakeNews;
      /** While the loop waits between polls: the wake item's news now. */
      newsNow?: () => Promise<WakeNews>;
      /** Why the wake item could not be read or written, when the invocation polls its whole run for that. */
      wakeItemError?: unknown;
    };

/**
 * Whether a poller invocation of `shards` stays, and how its loop keeps its lease. When the wake item cannot be
 * read or written, the invocation polls its whole run, as every one did before pollers slept.
 */
export async function startPollerAwake(ctx: QueueContext, options: { shards: number[]; endsAtMs: number; kind: StartKind }): Promise<PollerAwake> {
  const { shards } = options;
  const partition = (shards[0] ?? 0) % ctx.settings.pollerPartitions;
  let view: PollerView | undefined;
  try {
    const state = await readWakeState(ctx, 'poller', partition);
    const work = pollerWork(ctx, { shards, firesSchedules: shards.includes(0), state, view: () => view });
    const start = await startAwake(ctx, { role: 'poller', partition, ownerId: randomUUID(), endsAtMs: options.endsAtMs, kind: options.kind, work, state });
    if (!start.awake) return { stays: false, reason: start.reason };
    const { keeper } = start;
    // The loop lists types again once told they changed: a list is as new as what the keeper knew before it.
    let typesKnownChangedAtMs = start.state.typesChangedAtMs;
    return {
      stays: true,
      news: newsOf(start.state),
      afterRound: async (round) => {
        const listedUnderMs = view !== undefined && view.jobTypes === round.jobTypes ? view.typesChangedAtMs : typesKnownChangedAtMs;
        view = { ...round, typesChangedAtMs: listedUnderMs };
        const next = await keeper.afterRound(round.busy);
        typesKnownChangedAtMs = next.typesChangedAtMs;
        return next;
      },
      newsNow: async () => {
        const news = await keeper.news();
        typesKnownChangedAtMs = news.typesChangedAtMs;
        return news;
      },
    };
  } catch (error) {
    return { stays: true, afterRound: undefined, wakeItemError: error };
  }
}

/** The poll loop's options that keep a staying invocation's lease: the one place a lease is wired to the loop. */
export function leaseLoopOptions(awake: Extract<PollerAwake, { stays: true }>): Pick<PollerLoopOptions, 'afterRound' | 'news' | 'newsNow'> {
  return {
    ...(awake.afterRound ? { afterRound: awake.afterRound } : {}),
    ...(awake.news ? { news: awake.news } : {}),
    ...(awake.newsNow ? { newsNow: awake.newsNow } : {}),
  };
}
