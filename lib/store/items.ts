/** Converting between stored items and domain objects: the key attributes stay in the store layer. */
import type { BulkOperation } from '../domain/bulk.js';
import type { Job } from '../domain/job.js';
import type { JobProgress } from '../domain/progress.js';
import type { JobType } from '../domain/job-type.js';
import type { Schedule } from '../domain/schedule.js';
import type { Item } from './send.js';

const STORE_ONLY_ATTRIBUTES = ['pk', 'sk', 'gsi1pk', 'gsi1sk', 'purgeAtS'] as const;

function withoutStoreAttributes(item: Item): Item {
  const copy = { ...item };
  for (const name of STORE_ONLY_ATTRIBUTES) delete copy[name];
  return copy;
}

/**
 * A job's `data` and `result` are stored as JSON text, not as DynamoDB maps:
 * any JSON the API accepted then round-trips exactly, whatever DynamoDB's
 * rules for maps (32 levels of nesting, no empty keys, numbers within 38 digits).
 */
export function jobToItem(job: Job): Item {
  const { data, result, progress, ...rest } = job;
  return {
    ...rest,
    dataJson: JSON.stringify(data ?? null),
    ...(result !== undefined ? { resultJson: JSON.stringify(result) } : {}),
    ...(progress !== undefined ? { progressJson: progressToJson(progress) } : {}),
  };
}

/** A job's data as its item keeps it, for a write that replaces only the data (a debounced job's). */
export function dataToJson(data: unknown): string {
  return JSON.stringify(data ?? null);
}

/** A progress report holds any JSON too, so it is stored as JSON text like data and result. */
export function progressToJson(progress: JobProgress): string {
  return JSON.stringify(progress);
}

export function itemToJob(item: Item): Job {
  const { dataJson, resultJson, progressJson, ...rest } = withoutStoreAttributes(item);
  return {
    ...rest,
    data: typeof dataJson === 'string' ? JSON.parse(dataJson) : null,
    ...(typeof resultJson === 'string' ? { result: JSON.parse(resultJson) } : {}),
    ...(typeof progressJson === 'string' ? { progress: JSON.parse(progressJson) } : {}),
  } as unknown as Job;
}

/** Types stored before a setting existed read as if it had its default. */
const JOB_TYPE_DEFAULTS: Pick<JobType, 'paused' | 'rateLimitPerS' | 'priorityOrder' | 'throttle' | 'listSucceeded'> = {
  paused: false,
  rateLimitPerS: null,
  priorityOrder: 'time_first',
  throttle: null,
  listSucceeded: false,
};

export function itemToJobType(item: Item): JobType {
  return { ...JOB_TYPE_DEFAULTS, ...withoutStoreAttributes(item) } as unknown as JobType;
}

/** A schedule's `data` is stored as JSON text, as a job's is. */
export function scheduleToItem(schedule: Schedule): Item {
  const { data, ...rest } = schedule;
  return { ...rest, dataJson: JSON.stringify(data ?? null) };
}

export function itemToSchedule(item: Item): Schedule {
  const { dataJson, ...rest } = withoutStoreAttributes(item);
  return { ...rest, data: typeof dataJson === 'string' ? JSON.parse(dataJson) : null } as unknown as Schedule;
}

/** A bulk operation's item holds the operation as it is, its pending page a map. */
export function itemToOperation(item: Item): BulkOperation {
  return withoutStoreAttributes(item) as unknown as BulkOperation;
}
