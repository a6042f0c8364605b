/**
 * Claiming a type's due entries, in the order given: all at once when the type
 * has no counters; when it has, those that fit, after reserving their weight.
 */
import type { JobType } from '../../domain/job-type.js';
import { hasSlotLimits } from '../../domain/slots.js';
import { releaseDecreases } from '../../store/counters.js';
import type { DueEntry } from '../../store/due-index.js';
import { parseJobPk } from '../../store/keys.js';
import { claimJob, type ClaimResult } from '../attempt/claim.js';
import { createSeatAllocator } from '../../domain/claim-seats.js';
import type { QueueContext } from '../context.js';
import { lowerCounters } from '../limits/slot-returns.js';
import { chooseReplacements, RESERVATION_MS, reserveFitting, unusedOf, type Candidate } from '../limits/slot-reservations.js';

/**
 * Where claims go: `record` counts a claim's outcome for the entry it was made from and answers whether it used
 * one of the poll's rate tokens.
 */
export interface ClaimSink {
  record(claim: ClaimResult, jobType: JobType, entry: DueEntry): boolean;
  /** Bounds the claims in flight at once. */
  limit: <T>(call: () => Promise<T>) => Promise<T>;
}

/** Seats for the claims of one call, in worker-batch-sized groups (domain/claim-seats.ts). */
const seatsFor = (ctx: QueueContext) => createSeatAllocator(ctx.settings.workerBatchSize);

/** Claims without counters: in parallel, in order. */
async function claimUnlimited(ctx: QueueContext, sink: ClaimSink, jobType: JobType, entries: DueEntry[]): Promise<number> {
  const nextSeat = seatsFor(ctx);
  const outcomes = await Promise.allSettled(
    entries.map((entry) => {
      const seat = nextSeat();
      return sink.limit(async () => sink.record(await claimJob(ctx, parseJobPk(entry.pk), jobType, undefined, seat), jobType, entry));
    }),
  );
  throwFirstRejection(outcomes);
  return outcomes.filter((outcome) => outcome.status === 'fulfilled' && outcome.value).length;
}

/**
 * Claims under limits: the counters are read once, the jobs that fit are chosen, their weight is reserved on
 * each counter in one transaction, they are claimed in parallel with plain updates, the weight of claims lost
 * goes to the next entries that fit in it, and what was not claimed is given back in one more transaction. A
 * reservation refused (another poller moved a counter since the read) is tried again on a fresh read; refused
 * every time, it claims nothing in this poll.
 */
async function claimWithinSlots(
  ctx: QueueContext,
  sink: ClaimSink,
  jobType: JobType,
  entries: DueEntry[],
  tokens: number,
  fullKeys: Set<string>,
): Promise<number> {
  const { candidates, inFlight, reservations, reservedAtMs, reserved } = await reserveFitting(ctx, jobType, entries, tokens, fullKeys);
  // Jobs that take no slot (weight 0) never wait for one.
  let toClaim = reserved ? candidates : candidates.filter((candidate) => !candidate.slots);
  let pending = reserved ? entries.filter((entry) => !candidates.some((candidate) => candidate.entry === entry)) : [];
  const claimUntilMs = reservedAtMs + RESERVATION_MS;
  const nextSeat = seatsFor(ctx);
  const claimed: Candidate[] = [];
  const outcomes: PromiseSettledResult<{ claimed: boolean; lost: boolean; used: boolean }>[] = [];
  while (toClaim.length > 0) {
    const round = await Promise.allSettled(
      toClaim.map((candidate) => {
        const seat = nextSeat();
        return sink.limit(async () => {
          // Past its reservation's time, a claim could land after a settlement that did not count it.
          if (candidate.slots && ctx.nowMs() >= claimUntilMs) return { claimed: false, lost: false, used: false };
          const claim = await claimJob(ctx, parseJobPk(candidate.entry.pk), jobType, candidate.slots, seat);
          return { claimed: claim.kind === 'claimed', lost: claim.kind !== 'claimed', used: sink.record(claim, jobType, candidate.entry) };
        });
      }),
    );
    outcomes.push(...round);
    let lost = 0;
    toClaim.forEach((candidate, at) => {
      const outcome = round[at]!;
      // A claim whose call threw may have landed: its weight stays reserved, and a settlement takes it back if not.
      if (outcome.status === 'rejected' || outcome.value.claimed) claimed.push(candidate);
      else if (outcome.value.lost) lost++;
    });
    ({ chosen: toClaim, rest: pending } = chooseReplacements(jobType, pending, inFlight, unusedOf(reservations, claimed), lost));
  }
  const unused = reserved ? unusedOf(reservations, claimed) : [];
  await lowerCounters(ctx, releaseDecreases(ctx.settings.tableName, jobType.name, unused));
  throwFirstRejection(outcomes);
  return outcomes.filter((outcome) => outcome.status === 'fulfilled' && outcome.value.used).length;
}

/**
 * Claims up to `tokens` of the entries; returns how many claims used a token. The throttle keys found with no
 * room for their next job (full, or limited below its weight) are added to `fullKeys`.
 */
export function claimDueEntries(
  ctx: QueueContext,
  sink: ClaimSink,
  jobType: JobType,
  entries: DueEntry[],
  tokens: number,
  fullKeys: Set<string> = new Set(),
): Promise<number> {
  return hasSlotLimits(jobType)
    ? claimWithinSlots(ctx, sink, jobType, entries, tokens, fullKeys)
    : claimUnlimited(ctx, sink, jobType, entries.slice(0, tokens));
}

export function throwFirstRejection(outcomes: PromiseSettledResult<unknown>[]): void {
  const rejected = outcomes.find((outcome): outcome is PromiseRejectedResult => outcome.status === 'rejected');
  if (rejected) throw rejected.reason;
}
