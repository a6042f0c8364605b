/** Job types: how the jobs of a type are delivered, retried, limited and run (docs/concepts/design.md#invariants). */
import type { TimeWindow } from './windows.js';

export const DELIVERY_STRATEGIES = ['at_least_once', 'at_most_once'] as const;
export type DeliveryStrategy = (typeof DELIVERY_STRATEGIES)[number];

/** Error classes (strings) or HTTP statuses (numbers) that may be retried; absent means every retryable error. */
export type RetryOn = (string | number)[];

export type RetryPolicy =
  | { kind: 'none' }
  | { kind: 'fixed'; delayS: number; retryOn?: RetryOn }
  | { kind: 'exponential'; baseS: number; factor: number; maxS: number; jitter: number; retryOn?: RetryOn }
  | { kind: 'custom'; name: string };

/** How a worker runs a job of this type (docs/guides/targets.md). */
export type Target =
  | { kind: 'handler'; name: string }
  | {
      kind: 'http';
      url: string;
      /** Deadline of one request; the attempt as a whole is bounded by the type's `timeout_s` too. */
      requestTimeoutS: number;
      /** Link-local and cloud metadata addresses are refused unless this is set. */
      allowLinkLocal: boolean;
    }
  | { kind: 'lambda'; functionName: string }
  | { kind: 'eventbridge'; bus: string; detailType: string; source: string };

export type TargetKind = Target['kind'];

export const PRIORITY_ORDERS = ['time_first', 'priority_first'] as const;
export type PriorityOrder = (typeof PRIORITY_ORDERS)[number];

/** The throttle key `*` sets the limits of every key not named. */
export const OTHER_THROTTLE_KEYS = '*';

/**
 * What one throttle key is held to, at least one of: an in-flight weight limit, as a number of weight units
 * (`limit`) or a share of the type's concurrency (`share`), never both; and claims a second (`ratePerS`), from a
 * token bucket of the key's own.
 */
export interface ThrottleLimit {
  limit?: number;
  share?: number;
  ratePerS?: number;
}

export interface Throttle {
  /** Where a job's key comes from when it carries no `throttle_key`: a dotted path into its data. */
  keyField?: string;
  limits: Record<string, ThrottleLimit>;
}


export interface JobType {
  name: string;
  deliveryStrategy: DeliveryStrategy;
  attempts: number;
  /** null: unlimited; 0: paused. Bounds the summed weight of the type's claimed jobs. */
  concurrency: number | null;
  /**
   * Set by `POST /v1/job-types/{name}/pause`: pollers claim none of the type's jobs, which wait queued.
   * Kept apart from `concurrency`, so resuming gives back the limit the type had.
   */
  paused: boolean;
  /** Claims per second, shared by every poller; null: unlimited. */
  rateLimitPerS: number | null;
  priorityOrder: PriorityOrder;
  throttle: Throttle | null;
  /** Succeeded jobs are listed by status only when this is set: it costs a write unit per job. */
  listSucceeded: boolean;
  visibilityTimeoutS: number;
  timeoutS: number;
  retry: RetryPolicy;
  target: Target;
  /** When its jobs may start; absent: any time. A job's own windows replace these. */
  timeWindows?: TimeWindow[];
  /**
   * The HMAC key requests to an `http` target are signed with. Generated when
   * the type first gets an http target, kept across replacements, returned by
   * the API only in that one response, and never read back. Workers read it
   * from the type's item: it never travels in a batch.
   */
  signingSecret?: string;
  createdAtMs: number;
  updatedAtMs: number;
  /**
   * From when every write into the type's lanes recorded its bucket in the bucket directory first
   * (queue/lanes/bucket-directory.ts), so a walk of them trusts the directory from there whatever its cursor says:
   * set when the type is made, to its creation unless a release that did not record may still be writing. Absent
   * on a type made by a release before it was kept: its walks trust the directory from where their cursors adopted it.
   */
  directoryFromMs?: number;
}

/**
 * What defines a job type, as its producer gives it: everything but its name, the times the queue stamps, and
 * its secret. `paused` absent keeps the type as it was (a new type runs).
 */
export type JobTypeDefinition = Omit<JobType, 'name' | 'paused' | 'signingSecret' | 'createdAtMs' | 'updatedAtMs' | 'directoryFromMs'> & { paused?: boolean | undefined };

/** The type `definition` defines under `name`, stamped `times`; paused as it was when the definition says nothing. */
export function jobTypeOf(name: string, definition: JobTypeDefinition, times: { createdAtMs: number; updatedAtMs: number }, pausedBefore = false): JobType {
  const { paused, ...rest } = definition;
  return { name, ...rest, paused: paused ?? pausedBefore, ...times };
}

/** A job type as it may leave the table in a worker batch: the secret stays behind, and the worker reads it from the item. */
export type JobTypeWithoutSecrets = Omit<JobType, 'signingSecret'>;

/** Pollers claim this type's jobs: it is neither paused nor given a concurrency of 0, which keep its jobs queued. */
export function claimsJobs(jobType: Pick<JobType, 'concurrency' | 'paused'>): boolean {
  return jobType.concurrency !== 0 && !jobType.paused;
}

export function withoutSecrets(jobType: JobType): JobTypeWithoutSecrets {
  const { signingSecret: _secret, ...rest } = jobType;
  return rest;
}

export const JOB_TYPE_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

export const DEFAULT_EVENT_SOURCE = 'delayed-job-queue';

export const DEFAULT_RETRY: RetryPolicy = { kind: 'exponential', baseS: 1, factor: 2, maxS: 300, jitter: 0 };
