/**
 * Reserving a limited type's slots before its claims: which due entries fit the counters' room, and the
 * conditional counter writes that hold their weight while the poll claims them.
 */
import type { JobType } from '../../domain/job-type.js';
import type { HeldSlots } from '../../domain/job.js';
import { countersHeld, counterId, type Reservation, weightByCounter, counterLimit, reserveItems, readInFlight } from '../../store/counters.js';
import { type InFlight, throttleKeyLimit, slotsFor, limitTooSmall } from '../../domain/slots.js';
import type { DueEntry } from '../../store/due-index.js';
import { MAX_TRANSACT_ITEMS, transactWrite } from '../../store/send.js';
import type { QueueContext } from '../context.js';

/** How long a poll may go on claiming under its reservation; a reconcile waits well past it (queue/limits/counter-reconcile.ts). */
export const RESERVATION_MS = 5_000;

export interface Candidate {
  entry: DueEntry;
  slots: HeldSlots | undefined;
}

/**
 * The entries to claim, in order, within the room the counters have: when the next job does not fit the type,
 * no later job of weight above 0 is taken in this poll, so a heavy or urgent job is not overtaken for ever by
 * light ones; a full throttle key holds back only that key's jobs, and is added to `fullKeys`.
 */
export function chooseCandidates(jobType: JobType, entries: DueEntry[], inFlight: InFlight, tokens: number, fullKeys: Set<string>): Candidate[] {
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
export function withEpochs(slots: HeldSlots | undefined, inFlight: InFlight): HeldSlots | undefined {
  if (!slots) return undefined;
  return {
    ...slots,
    ...(slots.type ? { typeEpoch: inFlight.epochs.type } : {}),
    ...(slots.key !== undefined ? { keyEpoch: inFlight.epochs.keys.get(slots.key) ?? 0 } : {}),
  };
}

/** What the candidates need of each counter, summed. */
export function reservationsFor(jobType: JobType, candidates: Candidate[], inFlight: InFlight): Reservation[] {
  return [...weightByCounter(candidates.map(({ slots }) => slots)).values()].map(({ counter, weight }) => ({
    counter,
    weight,
    limit: counterLimit(jobType, counter),
    epoch: counter.key === undefined ? inFlight.epochs.type : (inFlight.epochs.keys.get(counter.key) ?? 0),
  }));
}

/** The part of each reservation that the claims did not use. */
export function unusedOf(reservations: Reservation[], claimed: Candidate[]): Reservation[] {
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
export const RESERVATION_TRIES = 3;

/**
 * The entries that take the place of `count` claims lost, within the weight the reservation has left on each
 * counter (`unused`), in order and by chooseCandidates' rules: past a job that does not fit the type's weight
 * left, no later job of weight above 0 is taken, nor a later job of a key past one that did not fit. Under
 * index lag a lost claim is mostly an entry the index still shows after its job was claimed, and the jobs behind
 * a run of those are claimed in the same poll rather than after one poll per `concurrency` of them.
 */
export function chooseReplacements(
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
export async function reserveFitting(
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
