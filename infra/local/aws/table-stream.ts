/**
 * Lambda's event source mapping on the table's stream, done locally on DynamoDB Local's own stream: each shard
 * polled about four times a second from the latest record when it starts (StartingPosition LATEST), records kept
 * by the mapping's filters, handed to the function in batches of at most `batchSize`, in order per shard. A batch
 * that fails is handed again (at least once, as Lambda does) up to `retryAttempts` times, then dropped, as the
 * stack's mapping drops it, and so is a record older than `maxRecordAgeS` when it would be handed. `delayMs` holds
 * each record back that much longer, `duplicate` hands a batch twice, and `pause` stops the handing until `resume`
 * (a mapping disabled, or Lambda's pollers down): to show what a late, repeated or interrupted delivery does. The
 * mapping's own reads of the stream are checked against the function's role, as Lambda reads with it.
 */
import {
  DescribeStreamCommand,
  DynamoDBStreamsClient,
  GetRecordsCommand,
  GetShardIteratorCommand,
  type GetRecordsCommandOutput,
  type _Record as StreamRecord,
} from '@aws-sdk/client-dynamodb-streams';
import { DescribeTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { abortableSleep } from '../../../lib/domain/sleep.js';

/** Lambda polls each shard of a DynamoDB stream four times a second. */
export const STREAM_POLL_INTERVAL_MS = 250;
/** Between a failed batch and its retry. */
const RETRY_PAUSE_MS = 1_000;

export interface TableStreamOptions {
  /** DynamoDB Local's table client: the stream's ARN is read from the table. */
  tables: DynamoDBClient;
  streams: DynamoDBStreamsClient;
  tableName: string;
  /** The mapping's filters: a record matching any is handed over. */
  filters: readonly Record<string, unknown>[];
  batchSize: number;
  retryAttempts: number;
  /** Each poll, before it reads: the mapping's reads authorized as the function's role. */
  authorize: () => Promise<void>;
  /** The function, with a batch of records as Lambda's event carries them. */
  handle: (event: { Records: unknown[] }) => Promise<unknown>;
  /** A read of the stream, or a batch's handling, failed: the read is made again, the batch handed again. */
  onError: (error: unknown, during: 'read' | 'handle') => void;
  signal: AbortSignal;
  /**
   * Records older than this are dropped rather than handed over, as the stack's mapping drops them (its
   * MaximumRecordAgeInSeconds). Aged from when the mapping read them: DynamoDB Local dates a record to the minute
   * only, and shows it on its stream about a second after its write.
   */
  maxRecordAgeS?: number;
  /** Records dropped for their age, by batch. */
  onExpired?: (records: number) => void;
  /** Each record is handed over no earlier than this long after it was read. */
  delayMs?: number;
  /** Hands this share of batches twice (0 to 1). */
  duplicate?: number;
  random?: () => number;
}

export interface TableStream {
  /** Resolves once every shard is read from its latest record: writes after it are handed over. */
  ready: Promise<void>;
  /** Resolves when the polling ended (after the signal). */
  stopped: Promise<void>;
  /**
   * Stops handing records over, once the batch under way is handled: they wait on the stream, ageing, as behind a
   * mapping disabled or pollers down.
   */
  pause(): void;
  /** Hands records over again from where it stopped, those past maxRecordAgeS dropped. */
  resume(): void;
}

/** Whether `value` matches a filter pattern as Lambda's event filtering does: every key of the pattern, a leaf being a list of choices. */
export function matchesFilter(pattern: unknown, value: unknown): boolean {
  if (Array.isArray(pattern)) return pattern.some((choice) => matchesChoice(choice, value));
  if (typeof pattern !== 'object' || pattern === null) throw new Error(`an event filter's leaves are lists, got ${JSON.stringify(pattern)}`);
  if (typeof value !== 'object' || value === null) return false;
  return Object.entries(pattern).every(([key, inner]) => Object.hasOwn(value, key) && matchesFilter(inner, (value as Record<string, unknown>)[key]));
}

function matchesChoice(choice: unknown, value: unknown): boolean {
  if (typeof choice === 'string' || typeof choice === 'number' || typeof choice === 'boolean' || choice === null) return choice === value;
  if (typeof choice === 'object' && Object.keys(choice).length === 1 && typeof (choice as { prefix?: unknown }).prefix === 'string') {
    return typeof value === 'string' && value.startsWith((choice as { prefix: string }).prefix);
  }
  throw new Error(`the local event filter knows exact values and prefixes only, got ${JSON.stringify(choice)}`);
}

/** A record as Lambda hands it to the function: the stream's, with its source named. */
const asLambdaRecord = (record: StreamRecord): Record<string, unknown> => ({ ...record, eventSource: 'aws:dynamodb' });

/** A record the mapping read, waiting to be handed over. */
interface ReadRecord {
  record: Record<string, unknown>;
  readAtMs: number;
}

export function startTableStream(options: TableStreamOptions): TableStream {
  const handing = { paused: false };
  let markReady!: () => void;
  let failReady!: (error: unknown) => void;
  const ready = new Promise<void>((resolve, reject) => {
    markReady = resolve;
    failReady = reject;
  });
  const stopped = run(options, handing, () => markReady()).catch((error: unknown) => {
    failReady(error);
    if (!options.signal.aborted) throw error;
  });
  return {
    ready,
    stopped,
    pause: () => void (handing.paused = true),
    resume: () => void (handing.paused = false),
  };
}

async function run(options: TableStreamOptions, handing: { paused: boolean }, onReady: () => void): Promise<void> {
  const { signal } = options;
  const { Table } = await options.tables.send(new DescribeTableCommand({ TableName: options.tableName }));
  const streamArn = Table?.LatestStreamArn;
  if (!streamArn) throw new Error(`table ${options.tableName} has no stream: ensureTable turns it on`);
  /** Each shard's next iterator; undefined once the shard ended, or for one that ended before the mapping began. */
  const iterators = new Map<string, string | undefined>();
  /**
   * Each shard's records read and not handed over yet, oldest first. Reading goes on while they wait (a delay, a
   * pause), so each is aged from about when it was written.
   */
  const waiting = new Map<string, ReadRecord[]>();
  /** Shards open now are read from their latest record; shards that appear later (a split, a rollover) from their first. */
  const followShards = async (position: 'LATEST' | 'TRIM_HORIZON'): Promise<void> => {
    const { StreamDescription } = await options.streams.send(new DescribeStreamCommand({ StreamArn: streamArn }));
    for (const shard of StreamDescription?.Shards ?? []) {
      const shardId = shard.ShardId!;
      if (iterators.has(shardId)) continue;
      const ended = shard.SequenceNumberRange?.EndingSequenceNumber !== undefined;
      if (position === 'LATEST' && ended) {
        iterators.set(shardId, undefined);
        continue;
      }
      const { ShardIterator } = await options.streams.send(new GetShardIteratorCommand({ StreamArn: streamArn, ShardId: shardId, ShardIteratorType: position }));
      iterators.set(shardId, ShardIterator);
    }
  };
  await followShards('LATEST');
  onReady();
  while (!signal.aborted) {
    try {
      await options.authorize();
      await followShards('TRIM_HORIZON');
      for (const [shardId, iterator] of iterators) {
        if (iterator === undefined) continue;
        const read = await readShard(options.streams, iterator);
        // An iterator DynamoDB no longer honours is made again from the shard's oldest record: some records may come
        // twice, as Lambda's at-least-once allows, and none is skipped.
        if (read === 'stale') {
          iterators.delete(shardId);
          continue;
        }
        const { Records, NextShardIterator } = read;
        iterators.set(shardId, NextShardIterator);
        const readAtMs = Date.now();
        const kept = (Records ?? []).filter((record) => options.filters.some((pattern) => matchesFilter(pattern, record)));
        if (kept.length > 0) waiting.set(shardId, [...(waiting.get(shardId) ?? []), ...kept.map((record) => ({ record: asLambdaRecord(record), readAtMs }))]);
      }
    } catch (error) {
      // A read that failed is read again at the next poll, from the same iterator, as Lambda's poller does.
      options.onError(error, 'read');
    }
    for (const [shardId, records] of waiting) {
      await handReady(options, handing, records);
      if (records.length === 0) waiting.delete(shardId);
    }
    await abortableSleep(STREAM_POLL_INTERVAL_MS, signal);
  }
}

/** Errors that say an iterator is no longer honoured; DynamoDB Local also answers the first for a shard it moved on. */
const STALE_ITERATOR_ERRORS = new Set(['TrimmedDataAccessException', 'ExpiredIteratorException']);

async function readShard(streams: DynamoDBStreamsClient, iterator: string): Promise<GetRecordsCommandOutput | 'stale'> {
  try {
    return await streams.send(new GetRecordsCommand({ ShardIterator: iterator }));
  } catch (error) {
    if (error instanceof Error && STALE_ITERATOR_ERRORS.has(error.name)) return 'stale';
    throw error;
  }
}

/** Hands over a shard's records that waited out `delayMs`, in batches, in order, until a pause; each is taken from `records` as it goes. */
async function handReady(options: TableStreamOptions, handing: { paused: boolean }, records: ReadRecord[]): Promise<void> {
  while (!handing.paused && !options.signal.aborted) {
    const readBeforeMs = Date.now() - (options.delayMs ?? 0);
    let ready = 0;
    while (ready < Math.min(records.length, options.batchSize) && records[ready]!.readAtMs <= readBeforeMs) ready++;
    if (ready === 0) return;
    await handOver(options, records.splice(0, ready));
  }
}

/** Hands a batch over until it succeeds or its retries run out; the shard waits meanwhile, as Lambda's does. */
async function handOver(options: TableStreamOptions, batch: ReadRecord[]): Promise<void> {
  let records = batch;
  const times = (options.random ?? Math.random)() < (options.duplicate ?? 0) ? 2 : 1;
  for (let delivery = 0; delivery < times; delivery++) {
    for (let attempt = 0; attempt <= options.retryAttempts && !options.signal.aborted; attempt++) {
      // Lambda drops a record past the mapping's maximum age at any try, a retry's included.
      records = withinAge(options, records);
      if (records.length === 0) return;
      try {
        await options.handle({ Records: records.map(({ record }) => record) });
        break;
      } catch (error) {
        options.onError(error, 'handle');
        await abortableSleep(RETRY_PAUSE_MS, options.signal);
      }
    }
  }
}

function withinAge(options: TableStreamOptions, records: ReadRecord[]): ReadRecord[] {
  if (options.maxRecordAgeS === undefined) return records;
  const readAfterMs = Date.now() - options.maxRecordAgeS * 1000;
  const fresh = records.filter(({ readAtMs }) => readAtMs >= readAfterMs);
  if (fresh.length < records.length) options.onExpired?.(records.length - fresh.length);
  return fresh;
}
