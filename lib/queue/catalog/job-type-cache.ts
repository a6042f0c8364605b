/**
 * Job types as a process may act on them: read from their items and kept JOB_TYPES_REFRESH_MS, the
 * staleness pollers allow themselves, so an enqueue, a callback or a signed request costs a type read once
 * per type and period instead of once per job.
 */
import { NotFoundError } from '../../domain/errors.js';
import { createExpiringMap } from '../../domain/expiring-map.js';
import type { JobType } from '../../domain/job-type.js';
import type { SigningSecrets } from '../../targets/target.js';
import type { QueueContext } from '../context.js';
import { getJobType, JOB_TYPES_REFRESH_MS } from './job-types.js';

/** The most types a process keeps; more within one period only cost a read each. */
export const MAX_CACHED_JOB_TYPES = 1_000;

export interface JobTypeCache {
  /** The type as read within the period; undefined when it does not exist. */
  get(name: string): Promise<JobType | undefined>;
  /** The same, or NotFoundError. */
  require(name: string): Promise<JobType>;
  /** This process changed the type: it acts on the change at once, not a period later. */
  keep(jobType: JobType): void;
}

/**
 * Callers asking for one type at once share one read. A type that does not exist is not kept, so one made
 * by another process is found at once; a read that fails is not kept either, so the next caller asks again.
 */
export function createJobTypeCache(ctx: QueueContext): JobTypeCache {
  const reads = createExpiringMap<Promise<JobType | undefined>>({ ttlMs: JOB_TYPES_REFRESH_MS, maxEntries: MAX_CACHED_JOB_TYPES, nowMs: ctx.nowMs });
  const put = (name: string, jobType: Promise<JobType | undefined>) => {
    reads.set(name, jobType);
    const forget = (): void => {
      if (reads.get(name) === jobType) reads.delete(name);
    };
    jobType.then((found) => found === undefined && forget(), forget);
    return jobType;
  };
  const get = (name: string): Promise<JobType | undefined> => reads.get(name) ?? put(name, getJobType(ctx, name));
  return {
    get,
    async require(name) {
      const jobType = await get(name);
      if (!jobType) throw new NotFoundError(`job type "${name}" does not exist`);
      return jobType;
    },
    keep(jobType) {
      void put(jobType.name, Promise.resolve(jobType));
    },
  };
}

/** Signing secrets through the type cache: a worker signs with a changed secret within one period. */
export function createSigningSecretCache(ctx: QueueContext, types: JobTypeCache = createJobTypeCache(ctx)): SigningSecrets {
  return { get: async (type) => (await types.get(type))?.signingSecret };
}
