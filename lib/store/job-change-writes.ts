/**
 * The write of a `PATCH` to a waiting job, as a pure builder: one UpdateItem that moves the job in the due
 * index (when its ready time changes) and records the change, conditioned on the job being exactly as read.
 */
import type { Job, JobChangeRecord } from '../domain/job.js';
import { jobKey, type IndexKey } from './keys.js';
import type { UpdateParams } from './send.js';

/** The job as the change read it: its ready time, index entry, attempt and change version. */
export interface SeenQueuedJob {
  job: Pick<Job, 'type' | 'id' | 'attempt' | 'changeCount'>;
  index: IndexKey;
}

export interface ChangeWrite {
  nowMs: number;
  runAfterMs: number;
  priority: number;
  expiresAtMs: number | undefined;
  /** The index entry of the new ready time; undefined: the entry stays where it is. */
  index: IndexKey | undefined;
  changes: JobChangeRecord[];
}

/**
 * Still queued, at the attempt, index entry (partition and ready time) and change version that were read:
 * a claim, a release, a straggler's move or another change landing in between fails the condition, so the
 * old entry is never claimed after the move and no change is recorded against values it did not see.
 */
export function changeQueuedJobParams(seen: SeenQueuedJob, write: ChangeWrite): UpdateParams {
  const { job } = seen;
  const seenCount = job.changeCount ?? 0;
  const values: Record<string, unknown> = {
    ':queued': 'queued',
    ':attempt': job.attempt,
    ':seenPk': seen.index.gsi1pk,
    ':seenSk': seen.index.gsi1sk,
    ':runAfter': write.runAfterMs,
    ':priority': write.priority,
    ':now': write.nowMs,
    ':changes': write.changes,
    ':count': seenCount + 1,
  };
  // The entry's sort key starts with the ready time: the entry as read is the ready time as read.
  const conditions = ['#status = :queued', 'attempt = :attempt', 'gsi1pk = :seenPk', 'gsi1sk = :seenSk'];
  if (seenCount === 0) conditions.push('attribute_not_exists(changeCount)');
  else {
    conditions.push('changeCount = :seenCount');
    values[':seenCount'] = seenCount;
  }
  const sets = ['runAfterMs = :runAfter', 'priority = :priority', 'updatedAtMs = :now', 'changes = :changes', 'changeCount = :count'];
  if (write.index) {
    sets.push('gsi1pk = :gsi1pk', 'gsi1sk = :gsi1sk');
    Object.assign(values, { ':gsi1pk': write.index.gsi1pk, ':gsi1sk': write.index.gsi1sk });
  }
  if (write.expiresAtMs !== undefined) {
    sets.push('expiresAtMs = :expiresAt');
    values[':expiresAt'] = write.expiresAtMs;
  }
  return {
    Key: jobKey(job.type, job.id),
    ConditionExpression: conditions.join(' AND '),
    UpdateExpression: `SET ${sets.join(', ')}${write.expiresAtMs === undefined ? ' REMOVE expiresAtMs' : ''}`,
    ExpressionAttributeNames: { '#status': 'status' },
    ExpressionAttributeValues: values,
  };
}
