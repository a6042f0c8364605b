/**
 * What each function may do to the table, by partition family: what its code
 * does and nothing more. Kept by hand so a reviewer reads the whole surface in
 * one place; drift is caught both ways by the tests. Every call a function
 * makes under test meets these grants through the local IAM check (a missing
 * grant fails that test), and test/integration/infra/table-grants.test.ts makes each
 * function use every grant it has here (an unneeded grant fails it).
 */
import type { QueueFunctionName, TableGrants } from './queue-function.js';


export const TABLE_GRANTS: Record<QueueFunctionName, TableGrants> = {
  api: {
    items: {
      // A debounce enqueue reads its key's pointer.
      // A job type made reads the claim lane's cursor: from when its lanes' bucket directory is complete.
      GetItem: ['job', 'jobType', 'correlation', 'cursor', 'schedule', 'operation', 'debounce'],
      // A correlated, dedup or debounce enqueue writes the job and its key's pointer in one transaction; a far
      // run_after records its bucket.
      // Schedules are written whole, over the revision read. A bulk operation is only recorded here; sweepers run it.
      // A tagged job's tag entries are written before it.
      PutItem: ['job', 'jobType', 'apiKey', 'correlation', 'directory', 'schedule', 'operation', 'tag', 'dedup', 'debounce'],
      // Callbacks end attempts (and give back a type's slots); key revocation; the metrics history. Cancelling a
      // running job marks its claim's seat in the group's start record, where its worker looks.
      // A job type's change is noted for awake pollers; a resumed type asks every poller for a hold.
      UpdateItem: ['job', 'jobType', 'apiKey', 'metrics', 'start', 'wake'],
      // The correlation callback drops the pointer of the job it finished; a schedule is deleted.
      DeleteItem: ['correlation', 'schedule'],
      BatchGetItem: ['job', 'jobType', 'apiKey', 'roster', 'schedule'],
      // Stats and listings look ahead through the bucket directory; the dashboard reads the metrics history; the
      // correlation callback reads a key's pointers, one per type holding it; a listing by tag reads the tag's entries.
      Query: ['directory', 'metrics', 'correlation', 'tag'],
    },
    queriesDueIndex: true,
  },
  authorizer: {
    items: { GetItem: ['apiKey'], UpdateItem: ['apiKey'] },
    queriesDueIndex: false,
  },
  poller: {
    items: {
      // A due schedule is read before it fires; overlap "skip" reads its previous job.
      // Its wake item, at a tick and before it sleeps; a partition's, before the jobs of a batch it failed to hand over go back.
      GetItem: ['job', 'cursor', 'schedule', 'wake'],
      // A claim whose visibility timeout ends beyond the next bucket records that bucket first. A schedule's fire
      // enqueues its job (after its tag entries) and moves the schedule, written whole over the revision read, to
      // its next fire time.
      PutItem: ['directory', 'job', 'schedule', 'tag'],
      // A batch whose invoke failed has its seats taken from any worker before its claims go back.
      // Its lease on the wake item.
      UpdateItem: ['job', 'jobType', 'cursor', 'metrics', 'roster', 'start', 'wake'],
      BatchGetItem: ['jobType'],
      // A lane far behind its cursor is walked through the bucket directory, past the buckets it never recorded.
      Query: ['directory'],
    },
    queriesDueIndex: true,
  },
  worker: {
    items: {
      // An http target's signing secret is read from its type's item: a batch never carries it. While jobs run, their
      // groups' start records are read for cancels.
      GetItem: ['jobType', 'start'],
      // A heartbeat, callback wait or retry that moves a job beyond the next bucket records that bucket first.
      PutItem: ['directory'],
      // A batch records the start of its claims' group before any of its jobs runs.
      UpdateItem: ['job', 'jobType', 'metrics', 'roster', 'start'],
    },
    queriesDueIndex: false,
  },
  sweeper: {
    items: {
      // Bulk operations: the operation and its type are read before each page. A lapsed claim's group start record
      // says whether a worker took it up.
      GetItem: ['job', 'cursor', 'jobType', 'operation', 'start', 'wake'],
      // A reclaimed job or straggler records its bucket before it moves there; a bulk retry enqueues replays, with
      // their tag entries.
      PutItem: ['directory', 'job', 'tag'],
      // A concurrency counter left above what its jobs hold is reconciled from the type's running jobs; a bulk cancel
      // ends queued jobs, and asks running ones to stop through their seats; each page of an operation is recorded on it.
      // Its lease on the wake item.
      UpdateItem: ['job', 'jobType', 'cursor', 'operation', 'start', 'wake'],
      // Reconciling reads the type's running jobs; a bulk operation's pages list jobs as GET /v1/jobs/{type} does.
      BatchGetItem: ['job', 'jobType'],
      // A bulk operation by tag walks the tag's entries.
      Query: ['jobType', 'directory', 'tag'],
    },
    queriesDueIndex: true,
  },
  waker: {
    // The wake item of whoever must act on an entry written: a hold asked for (queue/wake/ensure-awake.ts).
    items: { UpdateItem: ['wake'] },
    // A timer that comes back looks whether the entries it names are still due (queue/wake/wake-on-write.ts).
    queriesDueIndex: true,
  },
};
