/**
 * How claimed jobs travel to workers: in batches of a bounded count and size,
 * each carrying the configuration of its own jobs' types, without secrets.
 */
import { jsonBytes } from '../domain/json-size.js';
import type { Job } from '../domain/job.js';
import { withoutSecrets, type JobType, type JobTypeWithoutSecrets } from '../domain/job-type.js';

/**
 * What one worker invocation receives: the claimed jobs and the configuration of their types, those types only
 * and without their secrets, since a batch that fails is kept in the dead-letter queue as it was sent.
 */
export interface WorkerBatch {
  jobs: Job[];
  jobTypes: Record<string, JobTypeWithoutSecrets>;
}

/** Hands a batch to a worker: an async Lambda invoke in AWS, an in-process call locally. */
export interface WorkerInvoker {
  invoke(batch: WorkerBatch): Promise<void>;
}

/** Lambda's async invoke accepts 1 MB; keep every payload well under it. */
const MAX_BATCH_BYTES = 900 * 1024;

const EMPTY_BATCH_BYTES = jsonBytes({ jobs: [], jobTypes: {} } satisfies WorkerBatch);

interface TypeEntry {
  jobType: JobTypeWithoutSecrets;
  /** The size of its `"<name>":<type>` entry in the serialised batch. */
  bytes: number;
}

function typeEntry(name: string, jobType: JobType): TypeEntry {
  const stripped = withoutSecrets(jobType);
  return { jobType: stripped, bytes: jsonBytes(name) + 1 + jsonBytes(stripped) };
}

/**
 * Collects jobs, each with its type, into batches of at most `maxJobs` whose serialised payload is at most
 * `maxBytes`, handing each to `flush` as soon as it is full; a job too big for any batch travels alone. A batch
 * carries the types of its own jobs only. Its size is kept as jobs join rather than by serialising it again:
 * the empty payload, each job, each type's entry, and a comma between two jobs or two entries.
 */
export function createBatcher(maxJobs: number, flush: (batch: WorkerBatch) => void, maxBytes = MAX_BATCH_BYTES) {
  let batch: WorkerBatch = { jobs: [], jobTypes: {} };
  let typeCount = 0;
  let batchBytes = EMPTY_BATCH_BYTES;
  const flushBatch = (): void => {
    if (batch.jobs.length === 0) return;
    flush(batch);
    batch = { jobs: [], jobTypes: {} };
    typeCount = 0;
    batchBytes = EMPTY_BATCH_BYTES;
  };
  /** The batch's size with a job of `jobBytes` in, and the entry of its type when the batch lacks it. */
  const bytesWith = (jobBytes: number, entry: TypeEntry | undefined): number =>
    batchBytes + (batch.jobs.length > 0 ? 1 : 0) + jobBytes + (entry ? (typeCount > 0 ? 1 : 0) + entry.bytes : 0);
  return {
    add(job: Job, jobType: JobType): void {
      const jobBytes = jsonBytes(job);
      let entry = Object.hasOwn(batch.jobTypes, job.type) ? undefined : typeEntry(job.type, jobType);
      if (batch.jobs.length > 0 && bytesWith(jobBytes, entry) > maxBytes) {
        flushBatch();
        entry ??= typeEntry(job.type, jobType);
      }
      batchBytes = bytesWith(jobBytes, entry);
      batch.jobs.push(job);
      if (entry) {
        batch.jobTypes = { ...batch.jobTypes, [job.type]: entry.jobType };
        typeCount++;
      }
      if (batch.jobs.length >= maxJobs) flushBatch();
    },
    /** Hands over the last, partly filled batch. */
    close: flushBatch,
  };
}

