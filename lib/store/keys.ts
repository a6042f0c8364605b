/**
 * Every key of the single table is built and parsed here, from generic `pk`/`sk`
 * and `gsi1pk`/`gsi1sk` attributes: item keys, due-index keys, and the sort
 * keys whose text holds a time. The stack and the local runtime create the
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

/** The shards poller partition `partition` owns: every `partitions`-th shard, so partitions never share one. */
export function shardsOfPartition(partition: number, partitions: number, shards: number): number[] {
  return Array.from({ length: shards }, (_, shard) => shard).filter((shard) => shard % partitions === partition);
}

export type ItemKey = { pk: string; sk: string };
export type IndexKey = { gsi1pk: string; gsi1sk: string };

/** How the due index is laid out: the width of a ready-time bucket and the shards per bucket of each lane. */
export interface IndexLayout {
  bucketMs: number;
  /** Shards of each type's queue lane (and finished lanes and tags). */
  shards: number;
  /** Shards of the claim lane: every type's claims share it, so it may need more than one type's lane. */
  claimShards: number;
}

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
  schedule: 'SCHED#',
  operation: 'OP#',
  start: 'START#',
  tag: 'TAG#',
  dedup: 'DEDUP#',
  debounce: 'DEBOUNCE#',
  wake: 'WAKE#',
} as const;

export type PartitionFamily = keyof typeof PARTITION_PREFIX;

export function jobKey(type: string, id: string): ItemKey {
  return { pk: `${PARTITION_PREFIX.job}${type}#${id}`, sk: 'JOB' };
}

export function jobTypeKey(name: string): ItemKey {
  return { pk: `${PARTITION_PREFIX.jobType}${name}`, sk: 'TYPE' };
}

/** The start record of a group of claims (domain/claim-seats.ts): which of its seats a worker took up. */
export function startRecordKey(group: string): ItemKey {
  return { pk: `${PARTITION_PREFIX.start}${group}`, sk: 'START' };
}

/** The index entry that lists a member of a family under its name. */
export function listedUnder(partition: string, name: string): IndexKey {
  return { gsi1pk: partition, gsi1sk: name };
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

/** Every shard of a lane: SHARDS of them for a type's queue lane, CLAIM_SHARDS for the claim lane. */
export function laneShards(layout: Pick<IndexLayout, 'shards' | 'claimShards'>, lane: Lane): number[] {
  return Array.from({ length: lane.kind === 'claims' ? layout.claimShards : layout.shards }, (_, shard) => shard);
}

export function queuedSortKey(readyAtMs: number, id: string): string {
  return `${padEpochMs(readyAtMs)}#${id}`;
}

/** The time a lane or listing sort key starts with: a queued entry's ready time, a claim's deadline, a finish. */
export function sortKeyTimeMs(sortKey: string): number {
  return Number(sortKey.slice(0, sortKey.indexOf('#')));
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

/**
 * A type's jobs with one tag, newest first: `TAG#<type>#<shard>#<tag>`, one small item per job sorted by
 * `<createdAtMs>#<id>`. Sharded by job id as the lanes are, so one tag takes SHARDS times a partition's writes.
 */
export function tagPartition(type: string, tag: string, shard: number): string {
  return `${PARTITION_PREFIX.tag}${type}#${shard}#${tag}`;
}

export function tagEntryKey(layout: Pick<IndexLayout, 'shards'>, job: { type: string; id: string; createdAtMs: number }, tag: string): ItemKey {
  return { pk: tagPartition(job.type, tag, shardOf(job.id, layout.shards)), sk: `${padEpochMs(job.createdAtMs)}#${job.id}` };
}

/** The job a tag entry's sort key names, and when it was enqueued. */
export function parseTagSortKey(sk: string): { createdAtMs: number; id: string } {
  const separator = sk.indexOf('#');
  if (separator < 0) throw new Error(`not a tag entry sort key: ${sk}`);
  return { createdAtMs: Number(sk.slice(0, separator)), id: sk.slice(separator + 1) };
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

/** The lane and bucket of a `due` index partition, or undefined for partitions that are not lanes. */
export function laneBucketOf(partition: string): { lane: Lane; bucket: number; shard: number } | undefined {
  const parts = partition.split('#');
  if (parts[0] === 'Q' && parts.length === 4) return { lane: { kind: 'queued', type: parts[1] ?? '' }, bucket: Number(parts[2]), shard: Number(parts[3]) };
  if (parts[0] === 'C' && parts.length === 3) return { lane: { kind: 'claims' }, bucket: Number(parts[1]), shard: Number(parts[2]) };
  return undefined;
}

/** The due-index keys of a job waiting to run at `runAfterMs`; a job due in the past lands in the current bucket, never behind the cursor. */
export function queuedIndexKeys(layout: Pick<IndexLayout, 'bucketMs' | 'shards'>, job: { type: string; id: string }, runAfterMs: number, nowMs: number): IndexKey {
  const bucket = bucketOf(Math.max(runAfterMs, nowMs), layout.bucketMs);
  return {
    gsi1pk: lanePartition({ kind: 'queued', type: job.type }, bucket, shardOf(job.id, layout.shards)),
    gsi1sk: queuedSortKey(runAfterMs, job.id),
  };
}

/** The claim lane's keys of a claim held until `claimedUntilMs`, where the sweeper finds it once it lapses. */
export function claimIndexKeys(layout: Pick<IndexLayout, 'bucketMs' | 'claimShards'>, job: { type: string; id: string }, claimedUntilMs: number): IndexKey {
  return {
    gsi1pk: lanePartition({ kind: 'claims' }, bucketOf(claimedUntilMs, layout.bucketMs), shardOf(job.id, layout.claimShards)),
    gsi1sk: claimSortKey(claimedUntilMs, job.type, job.id),
  };
}

/** The listing keys of a job that finished in `status` at `finishedAtMs`. */
export function finishedIndexKeys(layout: Pick<IndexLayout, 'shards'>, job: { type: string; id: string }, status: string, finishedAtMs: number): IndexKey {
  return {
    gsi1pk: finishedPartition(job.type, status, shardOf(job.id, layout.shards)),
    gsi1sk: finishedSortKey(finishedAtMs, job.id),
  };
}

export function cursorKey(lane: Lane, shard: number): ItemKey {
  return { pk: `${PARTITION_PREFIX.cursor}${laneName(lane)}#${shard}`, sk: 'CURSOR' };
}

/**
 * A correlation key's pointers sit in one partition, one item per job type holding the key (`TYPE#<type>`):
 * keys are unique per type, so a type's key can be neither taken nor probed through another type, and the
 * correlation callback finds the holders among the caller's types with one query.
 */
export function correlationPartition(correlationKey: string): string {
  return `${PARTITION_PREFIX.correlation}${correlationKey}`;
}

/** Points at the job of `type` that holds a correlation key (see `enqueueJob`). */
export function correlationItemKey(type: string, correlationKey: string): ItemKey {
  return { pk: correlationPartition(correlationKey), sk: `TYPE#${type}` };
}

/**
 * Where the pointer was kept when keys were unique across types, naming its job's type inside. No write makes
 * one any more; those a table still holds are honoured until their jobs finish and a new holder of the key
 * in their type is written beside them.
 */
export function untypedCorrelationItemKey(correlationKey: string): ItemKey {
  return { pk: correlationPartition(correlationKey), sk: 'CORR' };
}

/**
 * Points at the job of `type` whose dedup window for `key` is open (queue/enqueue/dedup.ts). A partition of its own per
 * type and key: a burst of enqueues with one key meets only its own item, and other types' keys stay apart.
 */
export function dedupItemKey(type: string, key: string): ItemKey {
  return { pk: `${PARTITION_PREFIX.dedup}${type}#${key}`, sk: 'DEDUP' };
}

/** Points at the job of `type` that enqueues with the debounce `key` fold into while it waits (queue/enqueue/debounce.ts). */
export function debounceItemKey(type: string, key: string): ItemKey {
  return { pk: `${PARTITION_PREFIX.debounce}${type}#${key}`, sk: 'DEBOUNCE' };
}

/** Where the bucket directory records a lane's buckets ahead of now (see queue/lanes/bucket-directory.ts). */
export function directoryKey(lane: Lane, bucket: number): ItemKey {
  return { pk: `${PARTITION_PREFIX.directory}${laneName(lane)}`, sk: padEpochMs(bucket) };
}

export type WakeRole = 'poller' | 'sweeper';

/** Who is awake among the pollers of `partition` (or the sweepers: partition 0), until when, and what they were asked to wait for. */
export function wakeKey(role: WakeRole, partition: number): ItemKey {
  return { pk: `${PARTITION_PREFIX.wake}${role}#${partition}`, sk: 'WAKE' };
}

const TYPE_COUNTER_SORT_KEY = 'INFLIGHT';
const KEY_COUNTER_PREFIX = 'KEY#';

/** A type's in-flight weight: kept apart from the type's own item, which a PUT of the type replaces whole. */
export function typeCounterKey(type: string): ItemKey {
  return { pk: `${PARTITION_PREFIX.jobType}${type}`, sk: TYPE_COUNTER_SORT_KEY };
}

export function keyCounterKey(type: string, throttleKey: string): ItemKey {
  return { pk: `${PARTITION_PREFIX.jobType}${type}`, sk: `${KEY_COUNTER_PREFIX}${throttleKey}` };
}

/** Which counter an item of a type's partition is: the type's own, or a throttle key's. */
export function parseCounterSortKey(sk: string): { type: true } | { key: string } | undefined {
  if (sk === TYPE_COUNTER_SORT_KEY) return { type: true };
  return sk.startsWith(KEY_COUNTER_PREFIX) ? { key: sk.slice(KEY_COUNTER_PREFIX.length) } : undefined;
}

const RATE_BUCKET_SORT_KEY = 'RATE';

/** A type's token bucket for `rate_limit_per_s`. */
export function rateBucketKey(type: string): ItemKey {
  return { pk: `${PARTITION_PREFIX.jobType}${type}`, sk: RATE_BUCKET_SORT_KEY };
}

/** A throttle key's token bucket for its `rate_per_s`: not under `KEY#`, which are the in-flight counters. */
export function keyRateBucketKey(type: string, throttleKey: string): ItemKey {
  return { pk: `${PARTITION_PREFIX.jobType}${type}`, sk: `${RATE_BUCKET_SORT_KEY}#${throttleKey}` };
}

export function scheduleKey(name: string): ItemKey {
  return { pk: `${PARTITION_PREFIX.schedule}${name}`, sk: 'SCHEDULE' };
}

/** The schedule's name from its item's (or index entry's) `pk`. */
export function parseSchedulePk(pk: string): string {
  return pk.slice(PARTITION_PREFIX.schedule.length);
}

/**
 * Schedules sit in one due-index partition sorted by next fire time, so a poller finds the due ones with one
 * query, never a scan. Paused and ended schedules sort after every time (letters after digits): listed, never due.
 */
export const SCHEDULES_PARTITION = 'SCHEDULES';

export function scheduleIndexKeys(name: string, nextFireAtMs: number | null, paused: boolean): IndexKey {
  const sortKey = paused ? `PAUSED#${name}` : nextFireAtMs === null ? `ENDED#${name}` : `${padEpochMs(nextFireAtMs)}#${name}`;
  return { gsi1pk: SCHEDULES_PARTITION, gsi1sk: sortKey };
}

export function operationKey(id: string): ItemKey {
  return { pk: `${PARTITION_PREFIX.operation}${id}`, sk: 'OP' };
}

export function parseOperationPk(pk: string): string {
  return pk.slice(PARTITION_PREFIX.operation.length);
}

/** Running bulk operations sit in one due-index partition, oldest first, so a sweeper finds them with one query; a finished one leaves it. */
export const OPERATIONS_PARTITION = 'OPS';

export function runningOperationIndexKeys(createdAtMs: number, id: string): IndexKey {
  return { gsi1pk: OPERATIONS_PARTITION, gsi1sk: `${padEpochMs(createdAtMs)}#${id}` };
}

export function parseMetricsMinuteSortKey(sk: string): number {
  return Number(sk.slice(sk.indexOf('#') + 1));
}

/** How long a finished job stays before DynamoDB TTL removes it: the value of TTL_ATTRIBUTE. */
export function purgeAtS(finishedAtMs: number, retentionDays: number): number {
  return Math.floor(finishedAtMs / 1000) + retentionDays * 86_400;
}

/**
 * The due-index partitions whose items someone must act on, and so the stream's filter lets through: every lane
 * partition starts with one of these prefixes (`Q#<type>#…`, `C#…`), and schedules, running bulk operations and
 * job types (one resumed has work due at once) have one partition each.
 */
export const WAKING_PARTITION_PREFIXES = ['Q#', 'C#'] as const;
export const WAKING_PARTITIONS = [SCHEDULES_PARTITION, OPERATIONS_PARTITION, JOB_TYPES_PARTITION] as const;

/** What an item's due-index keys ask of whoever acts on them, and when; undefined for keys that ask nothing. */
export type WakingEntry =
  | { kind: 'lane'; lane: Lane; shard: number; dueAtMs: number; partition: string }
  | { kind: 'schedule'; dueAtMs: number; partition: string }
  | { kind: 'operation' }
  | { kind: 'jobType' };

/** Where an item's index keys put it (a lane entry and when it falls due or, a claim, lapses; a schedule's next firing; a bulk operation running; a job type). */
export function wakingEntryOf(keys: { gsi1pk?: unknown; gsi1sk?: unknown }): WakingEntry | undefined {
  const { gsi1pk: partition, gsi1sk: sortKey } = keys;
  if (typeof partition !== 'string' || typeof sortKey !== 'string') return undefined;
  if (partition === OPERATIONS_PARTITION) return { kind: 'operation' };
  if (partition === JOB_TYPES_PARTITION) return { kind: 'jobType' };
  const dueAtMs = sortKeyTimeMs(sortKey);
  if (!Number.isFinite(dueAtMs)) return undefined;
  if (partition === SCHEDULES_PARTITION) return { kind: 'schedule', dueAtMs, partition };
  const found = laneBucketOf(partition);
  return found ? { kind: 'lane', lane: found.lane, shard: found.shard, dueAtMs, partition } : undefined;
}
