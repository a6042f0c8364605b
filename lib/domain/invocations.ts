/**
 * What one function hands another: a batch of claimed jobs for a worker, a wake for a sleeping poller or sweeper.
 * The queue makes them; lib/aws delivers them deployed and the local runtime in process.
 */
import type { JobTypeWithoutSecrets } from './job-type.js';
import type { Job } from './job.js';

/**
 * What one worker invocation receives: the claimed jobs and the configuration of their types, those types only
 * and without their secrets, since a batch that fails is kept in the dead-letter queue as it was sent.
 */
export interface WorkerBatch {
  jobs: Job[];
  jobTypes: Record<string, JobTypeWithoutSecrets>;
}

/** Hands a batch to a worker: an async Lambda invoke in AWS, an in-process call locally. */
export interface WorkerInvoker {
  invoke(batch: WorkerBatch): Promise<void>;
}

/** What a wake starts: the poller of the partition owning `shards`, or the sweeper. */
export type WakeRequest = { role: 'poller'; shards: number[] } | { role: 'sweeper' };

/** The event a woken function receives: its minute tick's, marked as a wake. */
export type WakeEvent = { wake: true; shards?: number[] };

export interface WakeInvoker {
  /** Starts the function asynchronously; resolves once the start was accepted, throws when it was refused. */
  wake(request: WakeRequest): Promise<void>;
}

export function wakeEventOf(request: WakeRequest): WakeEvent {
  return request.role === 'poller' ? { wake: true, shards: request.shards } : { wake: true };
}

/** What started an invocation: its minute tick, or a wake. */
export type StartKind = 'tick' | 'wake';

/** A minute tick's event (`{ shards }` or `{}`), or a wake's (wakeEventOf). */
export function startKindOf(event: unknown): StartKind {
  return typeof event === 'object' && event !== null && (event as { wake?: unknown }).wake === true ? 'wake' : 'tick';
}

/**
 * A wake at a time: the poller of a partition, or the sweeper, started about when work falls due there. Deployed a
 * delayed SQS message; the waker function turns it into a wake when it arrives.
 */
export interface WakeTimer {
  role: 'poller' | 'sweeper';
  partition: number;
  dueAtMs: number;
  /**
   * The lane partitions (index keys) of the entries it was armed for: when none of them holds an entry due by then
   * (claimed, renewed, ended, moved), it wakes no one. Without them, it always wakes.
   */
  lanePartitions?: string[];
}

/** A timer names at most this many lane partitions; one armed for more names none, and always wakes. */
export const MAX_TIMER_LANE_PARTITIONS = 25;

export interface WakeTimers {
  /** Sends each timer to arrive `delayS` seconds from now; throws when any was refused, so its caller retries. */
  arm(timers: readonly { timer: WakeTimer; delayS: number }[]): Promise<void>;
}

/** A timer as a message body carries it; undefined for anything else. */
export function parseWakeTimer(body: string): WakeTimer | undefined {
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const { role, partition, dueAtMs, lanePartitions } = value as Record<string, unknown>;
  if (role !== 'poller' && role !== 'sweeper') return undefined;
  if (!Number.isInteger(partition) || (partition as number) < 0 || typeof dueAtMs !== 'number' || !Number.isFinite(dueAtMs)) return undefined;
  const timer: WakeTimer = { role, partition: partition as number, dueAtMs };
  if (lanePartitions === undefined) return timer;
  const named = Array.isArray(lanePartitions) && lanePartitions.length <= MAX_TIMER_LANE_PARTITIONS && lanePartitions.every((name) => typeof name === 'string');
  return named ? { ...timer, lanePartitions: lanePartitions as string[] } : undefined;
}
