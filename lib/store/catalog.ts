/**
 * The writes of the small families beside the jobs: job types, API keys, the
 * roster of live processes and the per-minute metrics, as pure builders.
 */
import type { JobType, Throttle, ThrottleLimit } from '../domain/job-type.js';
import { API_KEYS_PARTITION, apiKeyKey, JOB_TYPES_PARTITION, jobTypeKey, rosterKey, TTL_ATTRIBUTE, type ItemKey } from './keys.js';
import { listedUnder } from './keys.js';
import type { Item, PutParams, UpdateParams } from './send.js';

/**
 * Creates the type, or replaces it only while it is as it was read (its `updatedAtMs` and paused state), so a
 * pause or another replacement landing in between is never silently undone.
 */
export function putJobTypeParams(jobType: JobType, read: Pick<JobType, 'updatedAtMs' | 'paused'> | undefined): PutParams {
  return {
    Item: {
      ...jobTypeKey(jobType.name),
      ...listedUnder(JOB_TYPES_PARTITION, jobType.name),
      ...jobType,
      ...(jobType.throttle ? { throttle: storedThrottle(jobType.throttle) } : {}),
    },
    ...(read
      ? {
          // The paused state too: a pause within the same millisecond as the replacement read leaves updatedAtMs as it was.
          ConditionExpression: 'updatedAtMs = :readUpdatedAtMs AND (paused = :readPaused OR attribute_not_exists(paused))',
          ExpressionAttributeValues: { ':readUpdatedAtMs': read.updatedAtMs, ':readPaused': read.paused },
        }
      : { ConditionExpression: 'attribute_not_exists(pk)' }),
  };
}

/**
 * The limits go to the marshaller as a Map: given a plain object, it reads the object's `constructor` member
 * to tell what kind of value it is, so a limit keyed "constructor" would make it refuse the whole item.
 */
function storedThrottle(throttle: Throttle): Omit<Throttle, 'limits'> & { limits: Map<string, ThrottleLimit> } {
  return { ...throttle, limits: new Map(Object.entries(throttle.limits)) };
}

/** An update of an item that must exist (a missing one fails the condition), answering the item as it is after. */
function updateExistingParams(key: ItemKey, updateExpression: string, values: Item): UpdateParams {
  return { Key: key, UpdateExpression: updateExpression, ConditionExpression: 'attribute_exists(pk)', ExpressionAttributeValues: values, ReturnValues: 'ALL_NEW' };
}

export function setJobTypePausedParams(name: string, paused: boolean, nowMs: number): UpdateParams {
  return updateExistingParams(jobTypeKey(name), 'SET paused = :paused, updatedAtMs = :now', { ':paused': paused, ':now': nowMs });
}

/** A new API key, with the hash of its secret. */
export function putApiKeyParams(id: string, key: Item, secretHashHex: string): PutParams {
  return {
    Item: { ...apiKeyKey(id), ...listedUnder(API_KEYS_PARTITION, id), ...key, secretHash: secretHashHex },
    ConditionExpression: 'attribute_not_exists(pk)',
  };
}

/** Conditional, so concurrent requests of one key write once; the loser's write is simply not needed. */
export function touchApiKeyParams(id: string, nowMs: number, staleBeforeMs: number): UpdateParams {
  return {
    Key: apiKeyKey(id),
    UpdateExpression: 'SET lastUsedAtMs = :now',
    ConditionExpression: 'attribute_exists(pk) AND (attribute_not_exists(lastUsedAtMs) OR lastUsedAtMs <= :stale)',
    ExpressionAttributeValues: { ':now': nowMs, ':stale': staleBeforeMs },
  };
}

/** Revokes once: revoking again keeps the first revocation time. */
export function revokeApiKeyParams(id: string, nowMs: number, purgeAtS: number): UpdateParams {
  return updateExistingParams(
    apiKeyKey(id),
    'SET revokedAtMs = if_not_exists(revokedAtMs, :now), purgeAtS = if_not_exists(purgeAtS, :purgeAtS)',
    { ':now': nowMs, ':purgeAtS': purgeAtS },
  );
}

/** Sets every attribute of `values` on the item at `key`, creating it if need be. */
function setAllParams(key: ItemKey, values: Item): UpdateParams {
  const names = Object.keys(values);
  return {
    Key: key,
    UpdateExpression: `SET ${names.map((_, i) => `#a${i} = :v${i}`).join(', ')}`,
    ExpressionAttributeNames: Object.fromEntries(names.map((name, i) => [`#a${i}`, name])),
    ExpressionAttributeValues: Object.fromEntries(names.map((name, i) => [`:v${i}`, values[name]])),
  };
}

/**
 * A roster entry as seen now. An UpdateItem rather than a PutItem: the worker's role may only update items,
 * and an update of an entry whose index keys stay the same writes nothing to the index.
 */
export function recordRosterEntryParams(entryName: string, rosterPartition: string, entry: Item, purgeAtS: number): UpdateParams {
  return setAllParams(rosterKey(entryName), { ...listedUnder(rosterPartition, entryName), ...entry, [TTL_ATTRIBUTE]: purgeAtS });
}
