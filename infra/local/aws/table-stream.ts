/**
 * Lambda's event source mapping on the table's stream, done locally on DynamoDB Local's own stream: each shard
 * polled about four times a second from the latest record when it starts (StartingPosition LATEST), records kept
 * by the mapping's filters, handed to the function in batches of at most `batchSize`, in order per shard. A batch
 * that fails is handed again (at least once, as Lambda does) up to `retryAttempts` times, then dropped, as the
 * stack's mapping drops it; `delayMs` holds each record back that much longer, and `duplicate` hands a batch twice,
 * to show what a late or repeated delivery does. The mapping's own reads of the stream are checked against the
 * function's role, as Lambda reads with it.
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

export function startTableStream(options: TableStreamOptions): TableStream {
  let markReady!: () => void;
  let failReady!: (error: unknown) => void;
  const ready = new Promise<void>((resolve, reject) => {
    markReady = resolve;
    failReady = reject;
  });
  const stopped = run(options, () => markReady()).catch((error: unknown) => {
    failReady(error);
    if (!options.signal.aborted) throw error;
  });
  return { ready, stopped };
}

async function run(options: TableStreamOptions, onReady: () => void): Promise<void> {
  const { signal } = options;
  const { Table } = await options.tables.send(new DescribeTableCommand({ TableName: options.tableName }));
  const streamArn = Table?.LatestStreamArn;
  if (!streamArn) throw new Error(`table ${options.tableName} has no stream: ensureTable turns it on`);
  /** Each shard's next iterator; undefined once the shard ended, or for one that ended before the mapping began. */
  const iterators = new Map<string, string | undefined>();
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
        const kept = (Records ?? []).filter((record) => options.filters.some((pattern) => matchesFilter(pattern, record)));
        if (kept.length > 0 && options.delayMs) await abortableSleep(options.delayMs, signal);
        for (let start = 0; start < kept.length && !signal.aborted; start += options.batchSize) {
          await handOver(options, kept.slice(start, start + options.batchSize).map(asLambdaRecord));
        }
      }
    } catch (error) {
      // A read that failed is read again at the next poll, from the same iterator, as Lambda's poller does.
      options.onError(error, 'read');
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

/** Hands a batch over until it succeeds or its retries run out; the shard waits meanwhile, as Lambda's does. */
async function handOver(options: TableStreamOptions, records: unknown[]): Promise<void> {
  const times = (options.random ?? Math.random)() < (options.duplicate ?? 0) ? 2 : 1;
  for (let delivery = 0; delivery < times; delivery++) {
    for (let attempt = 0; attempt <= options.retryAttempts && !options.signal.aborted; attempt++) {
      try {
        await options.handle({ Records: records });
        break;
      } catch (error) {
        options.onError(error, 'handle');
        await abortableSleep(RETRY_PAUSE_MS, options.signal);
      }
    }
  }
}
