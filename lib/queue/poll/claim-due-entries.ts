/**
 * Claiming a type's due entries, in the order given: all at once when the type
 * has no counters; when it has, those that fit, after reserving their weight.
 */
import type { HeldSlots } from '../../domain/job.js';
import type { JobType } from '../../domain/job-type.js';
import { hasSlotLimits, limitTooSmall, slotsFor, throttleKeyLimit, type InFlight } from '../../domain/slots.js';
import { counterId, counterLimit, countersHeld, readInFlight, releaseDecreases, reserveItems, weightByCounter, type Reservation } from '../../store/counters.js';
import { MAX_TRANSACT_ITEMS, transactWrite } from '../../store/send.js';
import type { DueEntry } from '../../store/due-index.js';
import { parseJobPk } from '../../store/keys.js';
import { claimJob, type ClaimResult } from '../attempt/claim.js';
import { createSeatAllocator } from '../../domain/claim-seats.js';
import type { QueueContext } from '../context.js';
import { lowerCounters } from '../limits/slot-returns.js';

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

/** How long a poll may go on claiming under its reservation; a reconcile waits well past it (queue/limits/counter-reconcile.ts). */
export const RESERVATION_MS = 5_000;

interface Candidate {
  entry: DueEntry;
  slots: HeldSlots | undefined;
}

/**
 * The entries to claim, in order, within the room the counters have: when the next job does not fit the type,
 * no later job of weight above 0 is taken in this poll, so a heavy or urgent job is not overtaken for ever by
 * light ones; a full throttle key holds back only that key's jobs, and is added to `fullKeys`.
 */
function chooseCandidates(jobType: JobType, entries: DueEntry[], inFlight: InFlight, tokens: number, fullKeys: Set<string>): Candidate[] {
  let typeRoom = jobType.concurrency === null ? Infinity : jobType.concurrency - inFlight.type;
  const keyRoom = new Map<string, number>();
  const roomOfKey = (key: string): number => keyRoom.get(key) ?? (throttleKeyLimit(jobType, key) ?? 0) - (inFlight.keys.get(key) ?? 0);
  let typeFull = false;
  const chosen: Candidate[] = [];
  const counters = new Set<string>();
  for (const entry of entries) {
    if (chosen.length >= tokens) break;
    const slots = withEpochs(slotsFor(jobType, { weight: entry.weight ?? 1, ...(entry.throttleKey !== undefined ? { throttleKey: entry.throttleKey } : {}) }), inFlight);
    if (slots) {
      if ((slots.type && typeFull) || (slots.key !== undefined && fullKeys.has(slots.key))) continue;
      // A job whose key would take the reservation past one transaction waits for the next poll.
      const held = countersHeld(slots).map(({ counter }) => counterId(counter));
      if (counters.size + held.filter((id) => !counters.has(id)).length > MAX_TRANSACT_ITEMS) continue;
      // A job heavier than a limit can never run under it: it waits for the type to change, holding nothing up.
      const tooSmall = limitTooSmall(jobType, slots);
      if (tooSmall === 'key' && slots.key !== undefined) fullKeys.add(slots.key);
      if (tooSmall) continue;
      if (slots.type && slots.weight > typeRoom) {
        typeFull = true;
        continue;
      }
      if (slots.key !== undefined && slots.weight > roomOfKey(slots.key)) {
        fullKeys.add(slots.key);
        continue;
      }
      if (slots.type) typeRoom -= slots.weight;
      if (slots.key !== undefined) keyRoom.set(slots.key, roomOfKey(slots.key) - slots.weight);
      for (const id of held) counters.add(id);
    }
    chosen.push({ entry, slots });
  }
  return chosen;
}

/** The slots with the epoch of each counter they are reserved in: the one the counters were read in. */
function withEpochs(slots: HeldSlots | undefined, inFlight: InFlight): HeldSlots | undefined {
  if (!slots) return undefined;
  return {
    ...slots,
    ...(slots.type ? { typeEpoch: inFlight.epochs.type } : {}),
    ...(slots.key !== undefined ? { keyEpoch: inFlight.epochs.keys.get(slots.key) ?? 0 } : {}),
  };
}

/** What the candidates need of each counter, summed. */
function reservationsFor(jobType: JobType, candidates: Candidate[], inFlight: InFlight): Reservation[] {
  return [...weightByCounter(candidates.map(({ slots }) => slots)).values()].map(({ counter, weight }) => ({
    counter,
    weight,
    limit: counterLimit(jobType, counter),
    epoch: counter.key === undefined ? inFlight.epochs.type : (inFlight.epochs.keys.get(counter.key) ?? 0),
  }));
}

/** The part of each reservation that the claims did not use. */
function unusedOf(reservations: Reservation[], claimed: Candidate[]): Reservation[] {
  const used = weightByCounter(claimed.map(({ slots }) => slots));
  return reservations
    .map((reservation) => ({ ...reservation, weight: reservation.weight - (used.get(counterId(reservation.counter))?.weight ?? 0) }))
    .filter((reservation) => reservation.weight > 0);
}

/**
 * A reservation refused because a counter moved since it was read (another poller reserved, a worker gave slots
 * back) is tried again on a fresh read, this many times in all: the refusal says the counters changed, not that
 * they are full, and giving up would leave the room unused for a whole poll interval.
 */
const RESERVATION_TRIES = 3;

/**
 * The entries that take the place of `count` claims lost, within the weight the reservation has left on each
 * counter (`unused`), in order and by chooseCandidates' rules: past a job that does not fit the type's weight
 * left, no later job of weight above 0 is taken, nor a later job of a key past one that did not fit. Under
 * index lag a lost claim is mostly an entry the index still shows after its job was claimed, and the jobs behind
 * a run of those are claimed in the same poll rather than after one poll per `concurrency` of them.
 */
function chooseReplacements(
  jobType: JobType,
  pending: DueEntry[],
  inFlight: InFlight,
  unused: Reservation[],
  count: number,
): { chosen: Candidate[]; rest: DueEntry[] } {
  const room = new Map(unused.map(({ counter, weight }) => [counterId(counter), weight]));
  const roomOf = (id: string): number => room.get(id) ?? 0;
  let typeFull = false;
  // A key the first choice found full needs no check of its own: its counter has room left only where a claim
  // of its key was lost.
  const keysPassed = new Set<string>();
  const fits = (slots: HeldSlots): boolean => {
    if ((slots.type && typeFull) || (slots.key !== undefined && keysPassed.has(slots.key)) || limitTooSmall(jobType, slots)) return false;
    const held = countersHeld(slots).map(({ counter }) => counterId(counter));
    if (held.every((id) => roomOf(id) >= slots.weight)) {
      for (const id of held) room.set(id, roomOf(id) - slots.weight);
      return true;
    }
    if (slots.type && roomOf(counterId({})) < slots.weight) typeFull = true;
    if (slots.key !== undefined) keysPassed.add(slots.key);
    return false;
  };
  const chosen: Candidate[] = [];
  const rest: DueEntry[] = [];
  for (const entry of pending) {
    const slots = chosen.length < count ? withEpochs(slotsFor(jobType, { weight: entry.weight ?? 1, ...(entry.throttleKey !== undefined ? { throttleKey: entry.throttleKey } : {}) }), inFlight) : undefined;
    if (chosen.length < count && (!slots || fits(slots))) chosen.push({ entry, slots });
    else rest.push(entry);
  }
  return { chosen, rest };
}

/** Reads the counters, chooses the entries that fit and reserves their weight: `reserved` false when every try was refused. */
async function reserveFitting(
  ctx: QueueContext,
  jobType: JobType,
  entries: DueEntry[],
  tokens: number,
  fullKeys: Set<string>,
): Promise<{ candidates: Candidate[]; inFlight: InFlight; reservations: Reservation[]; reservedAtMs: number; reserved: boolean }> {
  const limitedKeys = [...new Set(entries.flatMap((entry) => entry.throttleKey ?? []))].filter(
    (key) => throttleKeyLimit(jobType, key) !== undefined,
  );
  for (let tryNumber = 1; ; tryNumber++) {
    const keysFound = new Set(fullKeys);
    const inFlight = await readInFlight(ctx, jobType.name, limitedKeys);
    const candidates = chooseCandidates(jobType, entries, inFlight, tokens, keysFound);
    const reservations = reservationsFor(jobType, candidates, inFlight);
    // The claim deadline counts from before the reservation writes on the counter, not from its answer, which
    // SDK retries may delay: a settlement waits that long after the epoch it was made in ended.
    const reservedAtMs = ctx.nowMs();
    const reserved = reservations.length === 0 || (await transactWrite(ctx, reserveItems(ctx.settings.tableName, jobType.name, reservations))).ok;
    if (reserved || tryNumber >= RESERVATION_TRIES) {
      for (const key of keysFound) fullKeys.add(key);
      return { candidates, inFlight, reservations, reservedAtMs, reserved };
    }
  }
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
