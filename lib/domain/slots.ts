/**
 * Concurrency slots (invariant 6, docs/concepts/design.md#invariants): a type's in-flight weight, and each throttle
 * key's, are counters in the table. A poll reserves the weight of the jobs it is
 * about to claim with one conditional write per counter, which fails when a
 * limit would be passed; claims are then plain job updates, and what was not
 * claimed is given back in one write. An attempt's end gives its weight back
 * after the job's write. So a counter is never below what its jobs hold: a
 * process that dies between two of these writes leaves it above, never below,
 * and the sweeper brings it back to what the jobs hold (queue/limits/counter-reconcile.ts).
 */
import { OTHER_THROTTLE_KEYS, type JobType, type ThrottleLimit } from './job-type.js';
import type { HeldSlots, Job } from './job.js';
import { ownEntry } from './own.js';

/** What a throttle key is held to: its own entry, or else the one of `*`; a named entry replaces `*` whole. */
export function throttleEntry(jobType: Pick<JobType, 'throttle'>, throttleKey: string): ThrottleLimit | undefined {
  const limits = jobType.throttle?.limits;
  if (limits === undefined) return undefined;
  return ownEntry(limits, throttleKey) ?? ownEntry(limits, OTHER_THROTTLE_KEYS);
}

const hasWeightLimit = (entry: ThrottleLimit): boolean => entry.limit !== undefined || entry.share !== undefined;

/** The in-flight weight limit of one throttle key, or undefined when the key's weight is not limited. */
export function throttleKeyLimit(jobType: Pick<JobType, 'throttle' | 'concurrency'>, throttleKey: string): number | undefined {
  const entry = throttleEntry(jobType, throttleKey);
  if (entry?.limit !== undefined) return entry.limit;
  if (entry?.share === undefined) return undefined;
  // A share always gets at least one slot, so a small concurrency does not silently pause a key.
  return Math.max(1, Math.floor(entry.share * (jobType.concurrency ?? 0)));
}

/**
 * The counters a claim of this job must take, or undefined when none applies: a
 * job of weight 0 is critical and never waits for a slot.
 */
export function slotsFor(
  jobType: Pick<JobType, 'throttle' | 'concurrency'>,
  job: Pick<Job, 'weight' | 'throttleKey'>,
): HeldSlots | undefined {
  if (job.weight === 0) return undefined;
  const type = jobType.concurrency !== null;
  const key =
    job.throttleKey !== undefined && throttleKeyLimit(jobType, job.throttleKey) !== undefined ? job.throttleKey : undefined;
  if (!type && key === undefined) return undefined;
  return { weight: job.weight, type, ...(key !== undefined ? { key } : {}) };
}

/** Whether claims of this type go through the counters at all: keys limited only by a rate keep none. */
export function hasSlotLimits(jobType: Pick<JobType, 'throttle' | 'concurrency'>): boolean {
  return jobType.concurrency !== null || Object.values(jobType.throttle?.limits ?? {}).some(hasWeightLimit);
}

/** The limit this job's weight exceeds on its own, so no claim of it can succeed until the type changes. */
export function limitTooSmall(jobType: JobType, slots: HeldSlots): 'type' | 'key' | undefined {
  if (slots.type && slots.weight > (jobType.concurrency ?? 0)) return 'type';
  if (slots.key !== undefined && slots.weight > (throttleKeyLimit(jobType, slots.key) ?? 0)) return 'key';
  return undefined;
}

/** The weight the counters hold now: the type's, and each throttle key's that was asked for; and their epochs. */
export interface InFlight {
  type: number;
  keys: Map<string, number>;
  /** How many times each counter was handed over to a new epoch: a reservation is made in the epoch it read. */
  epochs: { type: number; keys: Map<string, number> };
}

/** One counter item as stored. */
export interface CounterState {
  /** All the weight the counter holds: what limits are checked against. */
  inFlight: number;
  /** How many times the counter was handed over to a new epoch; 0: never. */
  epoch: number;
  /** When the current epoch began; 0: never handed over. */
  epochAtMs: number;
  /** The part of `inFlight` reserved in the current epoch; the rest belongs to earlier epochs. */
  epochInFlight: number;
  /** The epoch whose earlier part was last settled to what its jobs hold. */
  settledEpoch: number;
  /** A settlement of the earlier part, proposed at `atMs` (queue/limits/counter-reconcile.ts). */
  proposal?: { olderInFlight: number; atMs: number };
}

/** The weight the counter holds for epochs before its current one. */
export function olderInFlight(state: CounterState): number {
  return state.inFlight - state.epochInFlight;
}
