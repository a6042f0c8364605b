/**
 * Start records: one item per group of claims (domain/claim-seats.ts) saying which of its seats a worker took
 * up, when and where. A worker writes it once for the jobs of a batch that share a group, before any of them
 * runs; the sweeper reads it for a claim that lapsed with no start on the job. Each seat is an attribute of its
 * own (`s<seat>`) naming the write that took it (`w<write>`: when, which worker), so a batch delivered twice runs
 * each job once, a retried write that landed knows itself, and the poller can hand back the seats of a batch
 * whose invoke failed (`-`) so that a copy Lambda delivers after all finds them taken.
 */
import type { ClaimSeat } from '../domain/claim-seats.js';
import type { WorkerIdentity } from '../domain/job.js';
import { startRecordKey, TTL_ATTRIBUTE } from './keys.js';
import { getItem, updateItem, type StoreContext, type UpdateParams } from './send.js';

/** What a seat handed back by the poller holds: no worker took it, and none may. */
const HANDED_BACK = '-';

const seatAttribute = (seat: number): string => `s${seat}`;
const writeAttribute = (writeId: string): string => `w${writeId}`;

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

export function recordStartsParams(group: string, seats: readonly number[], start: GroupStart): UpdateParams {
  return takeSeatsParams(group, seats, start.writeId, start.purgeAtS, { name: writeAttribute(start.writeId), value: { atMs: start.nowMs, worker: start.worker } });
}

/**
 * Records that `seats` of `group` started. 'duplicate' when they were taken already (another delivery of the
 * same batch, or the poller handed them back); a retried write whose first try landed finds its own id and
 * counts as recorded.
 */
export async function recordStarts(ctx: StoreContext, group: string, seats: readonly number[], start: GroupStart): Promise<'recorded' | 'duplicate'> {
  const result = await updateItem(ctx, recordStartsParams(group, seats, start));
  if (result.ok) return 'recorded';
  return result.current?.[seatAttribute(seats[0]!)] === start.writeId ? 'recorded' : 'duplicate';
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
