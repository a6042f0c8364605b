/** Job types: stored as `TYPE#<name>` items and listed through one due-index partition. */
import type { QueueContext } from '../context.js';
import { ConflictError, NotFoundError } from '../../domain/errors.js';
import { putJobTypeParams, setJobTypePausedParams } from '../../store/catalog.js';
import { itemToJobType } from '../../store/items.js';
import { getItem, putItem, updateItem } from '../../store/send.js';
import { listIndexedItems } from '../../store/listing.js';
import { JOB_TYPES_PARTITION, jobTypeKey } from '../../store/keys.js';
import { jobTypeOf, type JobType, type JobTypeDefinition } from '../../domain/job-type.js';
import { newSigningSecret } from '../../domain/signing.js';
import { beforeJobTypesChange } from '../wake/ensure-awake.js';
import { directoryFromMsOfNewType } from '../lanes/bucket-directory.js';

/**
 * How long a process may act on a job type as it read it: pollers list types again this often, so a new,
 * changed or paused type is served within it.
 */
export const JOB_TYPES_REFRESH_MS = 5_000;

export async function getJobType(ctx: QueueContext, name: string): Promise<JobType | undefined> {
  const item = await getItem(ctx, jobTypeKey(name), { consistentRead: true });
  return item ? itemToJobType(item) : undefined;
}

export async function requireJobType(ctx: QueueContext, name: string): Promise<JobType> {
  const jobType = await getJobType(ctx, name);
  if (!jobType) throw new NotFoundError(`job type "${name}" does not exist`);
  return jobType;
}

/** A replacement that raced another change of the type reads the type again and retries, at most this often. */
const PUT_JOB_TYPE_TRIES = 5;

/**
 * Creates or replaces a job type; `created` tells which. Jobs already enqueued keep the attempts and strategy
 * they were enqueued with. An http target keeps the type's signing secret; `newSigningSecret` is set only when
 * this call generated one, the one time the caller gets to see it. A paused type stays paused unless the body
 * says `paused`. The write is conditional on the type being as it was read (its `updatedAtMs`), so a pause
 * or another replacement landing in between is never silently undone.
 */
export async function putJobType(
  ctx: QueueContext,
  name: string,
  definition: JobTypeDefinition,
): Promise<{ jobType: JobType; created: boolean; newSigningSecret?: string }> {
  for (let tries = 1; ; tries++) {
    const nowMs = ctx.nowMs();
    const existing = await getJobType(ctx, name);
    const jobType = jobTypeOf(
      name,
      definition,
      { createdAtMs: existing?.createdAtMs ?? nowMs, updatedAtMs: nowMs },
      existing?.paused ?? false,
    );
    // A replacement keeps what the type said, or that it said nothing: writes before may not have recorded.
    const directoryFromMs = existing ? existing.directoryFromMs : await directoryFromMsOfNewType(ctx, nowMs);
    if (directoryFromMs !== undefined) jobType.directoryFromMs = directoryFromMs;
    let generated: string | undefined;
    if (existing?.signingSecret !== undefined) jobType.signingSecret = existing.signingSecret;
    else if (jobType.target.kind === 'http') jobType.signingSecret = generated = newSigningSecret();
    await beforeJobTypesChange(ctx);
    const written = await putItem(ctx, putJobTypeParams(jobType, existing));
    if (!written.ok) {
      if (tries >= PUT_JOB_TYPE_TRIES) throw new ConflictError(`job type "${name}" kept changing while it was replaced; try again`);
      continue;
    }
    return { jobType, created: existing === undefined, ...(generated !== undefined ? { newSigningSecret: generated } : {}) };
  }
}

/**
 * Pauses or resumes a type: one UpdateItem, so nothing else about the type changes. Pollers read types
 * every JOB_TYPES_REFRESH_MS, so a pause stops new claims within that; claims already made run on.
 */
export async function setJobTypePaused(ctx: QueueContext, name: string, paused: boolean): Promise<JobType> {
  await beforeJobTypesChange(ctx);
  const result = await updateItem(ctx, setJobTypePausedParams(name, paused, ctx.nowMs()));
  if (!result.ok) throw new NotFoundError(`job type "${name}" does not exist`);
  return itemToJobType(result.item ?? {});
}

export async function listJobTypes(ctx: QueueContext): Promise<JobType[]> {
  const jobTypes = (await listIndexedItems(ctx, JOB_TYPES_PARTITION, jobTypeKey)).map(itemToJobType);
  return jobTypes.sort((a, b) => a.name.localeCompare(b.name));
}
