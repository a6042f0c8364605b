/**
 * How claimed jobs travel to workers: in batches of a bounded count and size,
 * each carrying the configuration of its own jobs' types, without secrets.
 */
import { jsonBytes } from '../../domain/json-size.js';
import type { Job } from '../../domain/job.js';
import { withoutSecrets, type JobType, type JobTypeWithoutSecrets } from '../../domain/job-type.js';
import type { WorkerBatch } from '../../domain/invocations.js';

/**
 * The largest message the worker's on-failure destination takes: an SQS queue (infra/queue-stack.ts), whose
 * MaximumMessageSize goes from 1 KiB up to 1 MiB. The stack sets it explicitly: SQS's own default was 256 KiB
 * (CreateQueue, https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_CreateQueue.html)
 * before it became 1 MiB, and the room of a failure record must not depend on which one a queue was made with.
 */
export const FAILURE_DESTINATION_MAX_BYTES = 1_048_576;

/**
 * The most a failed worker invocation answers with, as Lambda puts it in the record's `responsePayload`. The
 * worker handles every job's error itself (runWorkerBatch never throws), so what fails an invocation is Lambda's
 * (a timeout, a runtime that exited: a message of about 100 bytes) or a throw before the batch runs (Node's
 * `errorType`, `errorMessage` and a `trace` of at most Error.stackTraceLimit, 10, frames): a few KiB at most,
 * counted as 64.
 */
export const MAX_WORKER_ERROR_RESPONSE_BYTES = 64 * 1024;

/**
 * Everything of a failure record but its two payloads: version, timestamp, requestContext (request id, function
 * ARN, condition, invoke count), responseContext (status code, version, function error) and the keys
 * (https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-retain-records.html): under 1 KiB, counted as 4.
 */
export const FAILURE_RECORD_ENVELOPE_BYTES = 4 * 1024;

/**
 * A batch's payload at most. Two limits: Lambda's async invoke refuses a payload over 1 MiB, and a batch whose
 * invocation fails reaches the dead-letter queue as a record carrying the payload, the worker's error and the
 * envelope; a record over the queue's limit is not delivered (Lambda counts DestinationDeliveryFailures) and
 * its jobs would be nowhere. 900 KiB (921 600 bytes) + 64 KiB of error (65 536) + 4 KiB of envelope (4 096) =
 * 991 232 bytes, within 1 048 576 with 56 KiB to spare. A job too big to share a batch travels alone, and one
 * job is far under this (its data at most 256 KiB, its item at most DynamoDB's 400 KB), so no batch is over it.
 */
export const MAX_BATCH_BYTES = 900 * 1024;

/** The size of the on-failure record of a batch whose payload is `batchBytes`, at most. */
export function maxFailureRecordBytes(batchBytes: number): number {
  return batchBytes + MAX_WORKER_ERROR_RESPONSE_BYTES + FAILURE_RECORD_ENVELOPE_BYTES;
}

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

