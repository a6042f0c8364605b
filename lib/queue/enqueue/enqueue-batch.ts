/** Batch enqueue: many jobs of one type in one request, each idempotent on its own (type, id). */
import pLimit from 'p-limit';
import type { QueueContext } from '../context.js';
import { enqueueJob } from './enqueue.js';
import type { Job, BatchJob } from '../../domain/job.js';
import type { JobType } from '../../domain/job-type.js';


/** Enqueues of one batch in flight at once: enough to finish 100 in a few round trips, few enough not to burst a partition. */
export const BATCH_CONCURRENCY = 10;


export type BatchOutcome =
  | { index: number; id: string; ok: true; job: Job; created: boolean }
  /** `error` is whatever enqueueJob threw: a domain error, or a dependency failure after which the job may or may not exist. */
  | { index: number; id: string; ok: false; error: unknown };

/**
 * Jobs that share an id, a correlation key, a dedup key or a debounce key, in request order: they are
 * enqueued one after another, so the first of them is the one created and the rest are answered as repeats,
 * conflicts, duplicates or folds of it (a debounced job keeps the last one's data), the same on every run.
 */
function groupsSharingKeys(jobs: BatchJob[]): BatchJob[][] {
  const parent = jobs.map((_, position) => position);
  const root = (position: number): number => {
    while (parent[position] !== position) position = parent[position]!;
    return position;
  };
  const firstWithKey = new Map<string, number>();
  jobs.forEach((job, position) => {
    const { correlationKey, dedup, debounce } = job.input;
    const keys = [
      `id:${job.id}`,
      ...(correlationKey !== undefined ? [`correlation:${correlationKey}`] : []),
      ...(dedup ? [`dedup:${dedup.key}`] : []),
      ...(debounce ? [`debounce:${debounce.key}`] : []),
    ];
    for (const key of keys) {
      const first = firstWithKey.get(key);
      if (first === undefined) firstWithKey.set(key, position);
      else parent[root(position)] = root(first);
    }
  });
  const groups = new Map<number, BatchJob[]>();
  jobs.forEach((job, position) => {
    const group = groups.get(root(position)) ?? [];
    group.push(job);
    groups.set(root(position), group);
  });
  return [...groups.values()].map((group) => group.sort((a, b) => a.index - b.index));
}

/**
 * Enqueues every job with bounded parallelism and answers one outcome per job,
 * in request order. A job that fails, for any reason, fails alone: the others
 * still get their own outcome.
 */
export async function enqueueBatch(ctx: QueueContext, jobType: JobType, jobs: BatchJob[]): Promise<BatchOutcome[]> {
  const limit = pLimit(BATCH_CONCURRENCY);
  const enqueueOne = async (job: BatchJob): Promise<BatchOutcome> => {
    try {
      const { job: stored, created } = await enqueueJob(ctx, jobType, job.id, job.input);
      return { index: job.index, id: job.id, ok: true, job: stored, created };
    } catch (error) {
      return { index: job.index, id: job.id, ok: false, error };
    }
  };
  const perGroup = await Promise.all(
    groupsSharingKeys(jobs).map((group) =>
      limit(async () => {
        const outcomes: BatchOutcome[] = [];
        for (const job of group) outcomes.push(await enqueueOne(job));
        return outcomes;
      }),
    ),
  );
  return perGroup.flat().sort((a, b) => a.index - b.index);
}
