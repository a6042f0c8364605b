/**
 * Every key of the single table is built here, from generic `pk`/`sk` and
 * `gsi1pk`/`gsi1sk` attributes. The stack and the local runtime create the
 * table from the same names (see `table.ts`).
 */
import { createHash } from 'node:crypto';

export const DUE_INDEX = 'due';
export const TTL_ATTRIBUTE = 'purgeAtS';

/** Sort keys hold epoch milliseconds padded so that string order is time order. */
const EPOCH_MS_DIGITS = 15;

export function padEpochMs(epochMs: number): string {
  return Math.max(0, Math.floor(epochMs)).toString().padStart(EPOCH_MS_DIGITS, '0');
}

export function bucketOf(epochMs: number, bucketMs: number): number {
  return Math.floor(epochMs / bucketMs);
}

export function bucketStartMs(bucket: number, bucketMs: number): number {
  return bucket * bucketMs;
}

/** Stable shard of a job id: the same id always lands in the same shard. */
export function shardOf(id: string, shards: number): number {
  const digest = createHash('sha1').update(id).digest();
  return digest.readUInt32BE(0) % shards;
}

export type ItemKey = { pk: string; sk: string };

/**
 * The first segment of every base-table partition key, by family. The stack
 * grants each function only the families it touches (`dynamodb:LeadingKeys`),
 * so every key builder starts with one of these.
 */
export const PARTITION_PREFIX = {
  job: 'JOB#',
  jobType: 'TYPE#',
  apiKey: 'KEY#',
  roster: 'ROSTER#',
  metrics: 'METRICS#',
  cursor: 'CURSOR#',
  correlation: 'CORR#',
  directory: 'DIR#',
} as const;

export type PartitionFamily = keyof typeof PARTITION_PREFIX;

export function jobKey(type: string, id: string): ItemKey {
  return { pk: `${PARTITION_PREFIX.job}${type}#${id}`, sk: 'JOB' };
}

export function jobTypeKey(name: string): ItemKey {
  return { pk: `${PARTITION_PREFIX.jobType}${name}`, sk: 'TYPE' };
}

/** Job types also sit in the due index under one partition, so a poller lists them with a query, never a scan. */
export const JOB_TYPES_PARTITION = 'TYPES';

export function apiKeyKey(id: string): ItemKey {
  return { pk: `${PARTITION_PREFIX.apiKey}${id}`, sk: 'KEY' };
}

/** API keys sit in the due index under one partition too, so they are listed without a scan. */
export const API_KEYS_PARTITION = 'KEYS';

/** A running poller or worker process, named `<role>#<id>`. */
export function rosterEntryName(role: string, id: string): string {
  return `${role}#${id}`;
}

export function rosterKey(entryName: string): ItemKey {
  return { pk: `${PARTITION_PREFIX.roster}${entryName}`, sk: 'ROSTER' };
}

/** The roster sits in the due index under one partition, each entry under `<role>#<id>`, listed without a scan. */
export const ROSTER_PARTITION = 'ROSTER';

/** One job type's counts for one minute (epoch minutes), written by every poller and worker with ADD. */
export function metricsKey(type: string, epochMinute: number): ItemKey {
  return { pk: `${PARTITION_PREFIX.metrics}${type}`, sk: metricsMinuteSortKey(epochMinute) };
}

export function metricsMinuteSortKey(epochMinute: number): string {
  return `MINUTE#${padEpochMs(epochMinute)}`;
}

/**
 * A lane is a family of due-index partitions walked bucket by bucket:
 * the waiting jobs of one type, or the claims of every type.
 */
export type Lane = { kind: 'queued'; type: string } | { kind: 'claims' };

export function laneName(lane: Lane): string {
  return lane.kind === 'queued' ? `Q#${lane.type}` : 'C';
}

export function lanePartition(lane: Lane, bucket: number, shard: number): string {
  return `${laneName(lane)}#${bucket}#${shard}`;
}

export function queuedSortKey(readyAtMs: number, id: string): string {
  return `${padEpochMs(readyAtMs)}#${id}`;
}

export function claimSortKey(claimedUntilMs: number, type: string, id: string): string {
  return `${padEpochMs(claimedUntilMs)}#${type}#${id}`;
}

/** Upper bound (inclusive) for sort keys of entries due at or before `nowMs`. */
export function dueUpToSortKey(nowMs: number): string {
  return `${padEpochMs(nowMs)}#\uffff`;
}

/**
 * Finished jobs, listed by status newest first: `F#<type>#<status>#<shard>`, sorted by `<finishedAtMs>#<id>`.
 * No poller or sweeper walks these partitions; the job's TTL removes its entry with it.
 */
export function finishedPartition(type: string, status: string, shard: number): string {
  return `F#${type}#${status}#${shard}`;
}

export function finishedSortKey(finishedAtMs: number, id: string): string {
  return `${padEpochMs(finishedAtMs)}#${id}`;
}

export function parseJobPk(pk: string): { type: string; id: string } {
  const [prefix, type, ...rest] = pk.split('#');
  if (prefix !== 'JOB' || type === undefined || rest.length === 0) {
    throw new Error(`not a job key: ${pk}`);
  }
  return { type, id: rest.join('#') };
}

export function parseClaimSortKey(sk: string): { claimedUntilMs: number; type: string; id: string } {
  const [until, type, ...rest] = sk.split('#');
  if (until === undefined || type === undefined || rest.length === 0) {
    throw new Error(`not a claim sort key: ${sk}`);
  }
  return { claimedUntilMs: Number(until), type, id: rest.join('#') };
}

export function cursorKey(lane: Lane, shard: number): ItemKey {
  return { pk: `${PARTITION_PREFIX.cursor}${laneName(lane)}#${shard}`, sk: 'CURSOR' };
}

/** Points at the job that holds a correlation key (see `enqueueJob`). */
export function correlationItemKey(correlationKey: string): ItemKey {
  return { pk: `${PARTITION_PREFIX.correlation}${correlationKey}`, sk: 'CORR' };
}
