/**
 * Start records: one item per group of claims (domain/claim-seats.ts) saying which of its seats a worker took
 * up, when and where. A worker writes it once for the jobs of a batch that share a group, before any of them
 * runs; the sweeper reads it for a claim that lapsed with no start on the job. Each seat is an attribute of its
 * own (`s<seat>`) naming the write that took it (`w<write>`: when, which worker), so a batch delivered twice runs
 * each job once, a retried write that landed knows itself, and the poller can hand back the seats of a batch
 * whose invoke failed (`-`) so that a copy Lambda delivers after all finds them taken. A cancel of a running job
 * marks its seat too (`c<seat>`: when it was asked), where the worker that runs the group's jobs looks for it.
 */
import type { ClaimSeat } from '../domain/claim-seats.js';
import type { WorkerIdentity } from '../domain/job.js';
import { startRecordKey, TTL_ATTRIBUTE } from './keys.js';
import { getItem, updateItem, type StoreContext, type UpdateParams } from './send.js';

/** What a seat handed back by the poller holds: no worker took it, and none may. */
const HANDED_BACK = '-';

const seatAttribute = (seat: number): string => `s${seat}`;
const writeAttribute = (writeId: string): string => `w${writeId}`;
const cancelAttribute = (seat: number): string => `c${seat}`;
const CANCEL_ATTRIBUTE = /^c(\d{1,2})$/;

/** A cancel asked for a seat's job: when, and by whom (a key's or bulk operation's id) when known. */
export interface SeatCancel {
  atMs: number;
  by?: string;
}

/** The seats of a start record a cancel was asked for. */
function cancelledSeatsOf(record: Record<string, unknown> | undefined): Map<number, SeatCancel> {
  const seats = new Map<number, SeatCancel>();
  for (const [name, value] of Object.entries(record ?? {})) {
    const match = CANCEL_ATTRIBUTE.exec(name);
    if (match) seats.set(Number(match[1]), value as SeatCancel);
  }
  return seats;
}

export interface GroupStart {
  /** Names this write: unique, short (it is stored once per seat). */
  writeId: string;
  nowMs: number;
  worker: WorkerIdentity;
  purgeAtS: number;
}

/** Sets each of `seats` to `value`, only where none is set yet. */
function takeSeatsParams(group: string, seats: readonly number[], value: string, purgeAtS: number, extra?: { name: string; value: unknown }): UpdateParams {
  const names: Record<string, string> = Object.fromEntries(seats.map((seat, at) => [`#s${at}`, seatAttribute(seat)]));
  const sets = seats.map((_, at) => `#s${at} = :taken`);
  const values: Record<string, unknown> = { ':taken': value, ':purge': purgeAtS };
  if (extra) {
    names['#write'] = extra.name;
    sets.push('#write = :write');
    values[':write'] = extra.value;
  }
  return {
    Key: startRecordKey(group),
    ConditionExpression: seats.map((_, at) => `attribute_not_exists(#s${at})`).join(' AND '),
    UpdateExpression: `SET ${sets.join(', ')}, ${TTL_ATTRIBUTE} = :purge`,
    ExpressionAttributeNames: names,
    ExpressionAttributeValues: values,
    ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
  };
}

/** Takes the seats, answering the record as it is after: a cancel asked before the start is there, at no cost. */
export function recordStartsParams(group: string, seats: readonly number[], start: GroupStart): UpdateParams {
  return {
    ...takeSeatsParams(group, seats, start.writeId, start.purgeAtS, { name: writeAttribute(start.writeId), value: { atMs: start.nowMs, worker: start.worker } }),
    ReturnValues: 'ALL_NEW',
  };
}

export type RecordedStarts = { outcome: 'recorded'; cancelledSeats: Map<number, SeatCancel> } | { outcome: 'duplicate' };

/**
 * Records that `seats` of `group` started, with the seats whose jobs a cancel was asked for already. 'duplicate'
 * when they were taken already (another delivery of the same batch, or the poller handed them back); a retried
 * write whose first try landed finds its own id and counts as recorded.
 */
export async function recordStarts(ctx: StoreContext, group: string, seats: readonly number[], start: GroupStart): Promise<RecordedStarts> {
  const result = await updateItem(ctx, recordStartsParams(group, seats, start));
  if (result.ok) return { outcome: 'recorded', cancelledSeats: cancelledSeatsOf(result.item) };
  if (result.current?.[seatAttribute(seats[0]!)] === start.writeId) return { outcome: 'recorded', cancelledSeats: cancelledSeatsOf(result.current) };
  return { outcome: 'duplicate' };
}

/**
 * Marks `seat` of `group` as one whose job a cancel was asked for, whether or not a worker took it up yet: one
 * that has finds it at its next look, one that has not when it records the start.
 */
export function markSeatCancelledParams(seat: ClaimSeat, cancel: SeatCancel, purgeAtS: number): UpdateParams {
  return {
    Key: startRecordKey(seat.group),
    UpdateExpression: `SET #cancel = :cancel, ${TTL_ATTRIBUTE} = if_not_exists(${TTL_ATTRIBUTE}, :purge)`,
    ExpressionAttributeNames: { '#cancel': cancelAttribute(seat.seat) },
    ExpressionAttributeValues: { ':cancel': cancel, ':purge': purgeAtS },
  };
}

export async function markSeatCancelled(ctx: StoreContext, seat: ClaimSeat, cancel: SeatCancel, purgeAtS: number): Promise<void> {
  await updateItem(ctx, markSeatCancelledParams(seat, cancel, purgeAtS));
}

/**
 * The seats of `group` a cancel was asked for: a worker's look while the group's jobs run. An eventually
 * consistent read, half the cost of a strong one: a mark it misses is found at the next look.
 */
export async function cancelledSeats(ctx: StoreContext, group: string): Promise<Map<number, SeatCancel>> {
  return cancelledSeatsOf(await getItem(ctx, startRecordKey(group)));
}

export function handBackSeatsParams(group: string, seats: readonly number[], purgeAtS: number): UpdateParams {
  return takeSeatsParams(group, seats, HANDED_BACK, purgeAtS);
}

/**
 * Takes `seats` of `group` away from any worker, for a batch whose invoke failed: true when no worker had taken
 * them, so a copy Lambda delivers after all runs none of them and their claims may be handed back.
 */
export async function handBackSeats(ctx: StoreContext, group: string, seats: readonly number[], purgeAtS: number): Promise<boolean> {
  const result = await updateItem(ctx, handBackSeatsParams(group, seats, purgeAtS));
  return result.ok || result.current?.[seatAttribute(seats[0]!)] === HANDED_BACK;
}

/** When and by which worker the claim of `seat` was taken up, by its group's start record; undefined if it was not. */
export async function seatStart(ctx: StoreContext, seat: ClaimSeat): Promise<{ startedAtMs: number; worker: WorkerIdentity } | undefined> {
  const record = await getItem(ctx, startRecordKey(seat.group), { consistentRead: true });
  const writeId = record?.[seatAttribute(seat.seat)];
  if (typeof writeId !== 'string' || writeId === HANDED_BACK) return undefined;
  const write = record?.[writeAttribute(writeId)] as { atMs: number; worker: WorkerIdentity } | undefined;
  return write ? { startedAtMs: write.atMs, worker: write.worker } : undefined;
}
