/**
 * Start records: one item per group of claims (domain/claim-seats.ts) saying which of its seats a worker took up.
 * A worker writes it once for the jobs of a batch that share a group, before any of them runs; the sweeper reads
 * it for a claim that lapsed with no start on the job. The write refuses seats already there, so a batch
 * delivered twice runs each job once; its start token tells a retried write that landed from another delivery's.
 */
import type { ClaimSeat } from '../domain/claim-seats.js';
import type { WorkerIdentity } from '../domain/job.js';
import { startRecordKey, TTL_ATTRIBUTE } from './keys.js';
import { getItem, updateItem, type StoreContext, type UpdateParams } from './send.js';

export interface GroupStart {
  startToken: string;
  nowMs: number;
  worker: WorkerIdentity;
  purgeAtS: number;
}

export function recordStartsParams(group: string, seats: readonly number[], start: GroupStart): UpdateParams {
  const values: Record<string, unknown> = Object.fromEntries(seats.map((seat, at) => [`:s${at}`, seat]));
  return {
    Key: startRecordKey(group),
    ConditionExpression: seats.map((_, at) => `NOT contains(seats, :s${at})`).join(' AND '),
    UpdateExpression: `ADD seats :seats, startTokens :startToken SET startedAtMs = if_not_exists(startedAtMs, :now), worker = if_not_exists(worker, :worker), ${TTL_ATTRIBUTE} = :purge`,
    ExpressionAttributeValues: {
      ...values,
      ':seats': new Set(seats),
      ':startToken': new Set([start.startToken]),
      ':now': start.nowMs,
      ':worker': start.worker,
      ':purge': start.purgeAtS,
    },
    ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
  };
}

/**
 * Records that `seats` of `group` started. 'duplicate' when some of them had already (another delivery of the
 * same batch); a retried write whose first try landed finds its own token and counts as recorded.
 */
export async function recordStarts(ctx: StoreContext, group: string, seats: readonly number[], start: GroupStart): Promise<'recorded' | 'duplicate'> {
  const result = await updateItem(ctx, recordStartsParams(group, seats, start));
  if (result.ok) return 'recorded';
  const tokens = result.current?.startTokens;
  return tokens instanceof Set && tokens.has(start.startToken) ? 'recorded' : 'duplicate';
}

/** When and by which worker the claim of `seat` was taken up, by its group's start record; undefined if it was not. */
export async function seatStart(ctx: StoreContext, seat: ClaimSeat): Promise<{ startedAtMs: number; worker: WorkerIdentity } | undefined> {
  const record = await getItem(ctx, startRecordKey(seat.group), { consistentRead: true });
  const seats = record?.seats;
  if (!(seats instanceof Set) || !seats.has(seat.seat)) return undefined;
  return { startedAtMs: record?.startedAtMs as number, worker: record?.worker as WorkerIdentity };
}
