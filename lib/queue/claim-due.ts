/**
 * Claiming a type's due entries, in the order given: all at once when the type
 * has no counters, one at a time while they have room when it does.
 */
import type { JobType } from '../domain/job-type.js';
import { hasSlotLimits, limitTooSmall, slotsFor, throttleKeyLimit } from '../domain/slots.js';
import { readInFlight } from '../store/counters.js';
import type { DueEntry } from '../store/due-index.js';
import { parseJobPk } from '../store/keys.js';
import { claimJob, type ClaimResult } from './claims.js';
import type { QueueContext } from './context.js';

/** Where claims go: `record` counts a claim's outcome and answers whether it used one of the poll's rate tokens. */
export interface ClaimSink {
  record(claim: ClaimResult, jobType: JobType): boolean;
  /** Bounds the claims in flight at once. */
  limit: <T>(call: () => Promise<T>) => Promise<T>;
}

/** Claims without counters: in parallel, in order. */
async function claimUnlimited(ctx: QueueContext, sink: ClaimSink, jobType: JobType, entries: DueEntry[]): Promise<number> {
  const outcomes = await Promise.allSettled(
    entries.map((entry) => sink.limit(async () => sink.record(await claimJob(ctx, parseJobPk(entry.pk), jobType), jobType))),
  );
  throwFirstRejection(outcomes);
  return outcomes.filter((outcome) => outcome.status === 'fulfilled' && outcome.value).length;
}

/**
 * Claims one at a time, in order, while the counters have room: every claim of the type touches the same
 * counter, so parallel claims would only conflict. When the next job does not fit the type, no later job of
 * weight above 0 is claimed in this poll, so a heavy or urgent job is not overtaken for ever by light ones; a
 * full throttle key holds back only that key's jobs.
 */
async function claimWithinSlots(
  ctx: QueueContext,
  sink: ClaimSink,
  jobType: JobType,
  entries: DueEntry[],
  tokens: number,
  fullKeys: Set<string>,
): Promise<number> {
  const limitedKeys = [...new Set(entries.flatMap((entry) => entry.throttleKey ?? []))].filter(
    (key) => throttleKeyLimit(jobType, key) !== undefined,
  );
  const inFlight = await readInFlight(ctx, jobType.name, limitedKeys);
  let typeRoom = jobType.concurrency === null ? Infinity : jobType.concurrency - inFlight.type;
  const keyRoom = new Map(limitedKeys.map((key) => [key, (throttleKeyLimit(jobType, key) ?? 0) - (inFlight.keys.get(key) ?? 0)]));
  let typeFull = false;
  let used = 0;
  for (const entry of entries) {
    if (used >= tokens) break;
    const slots = slotsFor(jobType, { weight: entry.weight ?? 1, ...(entry.throttleKey !== undefined ? { throttleKey: entry.throttleKey } : {}) });
    if (slots) {
      if ((slots.type && typeFull) || (slots.key !== undefined && fullKeys.has(slots.key))) continue;
      // A job heavier than a limit can never run under it: it waits for the type to change, holding nothing up.
      const tooSmall = limitTooSmall(jobType, slots);
      if (tooSmall === 'key' && slots.key !== undefined) fullKeys.add(slots.key);
      if (tooSmall) continue;
      if (slots.type && slots.weight > typeRoom) {
        typeFull = true;
        continue;
      }
      if (slots.key !== undefined && slots.weight > (keyRoom.get(slots.key) ?? 0)) {
        fullKeys.add(slots.key);
        continue;
      }
    }
    const claim = await claimJob(ctx, parseJobPk(entry.pk), jobType, slots);
    if (sink.record(claim, jobType)) used++;
    if (claim.kind === 'claimed' && slots) {
      if (slots.type) typeRoom -= slots.weight;
      if (slots.key !== undefined) keyRoom.set(slots.key, (keyRoom.get(slots.key) ?? 0) - slots.weight);
    }
    if (claim.kind === 'full') {
      if (claim.limit === 'type') typeFull = true;
      else if (slots?.key !== undefined) fullKeys.add(slots.key);
    }
  }
  return used;
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
