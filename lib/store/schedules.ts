/**
 * Schedules in the table: one `SCHED#<name>` item each, written whole and
 * only over the revision it was read at, and indexed by next fire time under
 * the due index's `SCHEDULES` partition.
 */
import type { Schedule } from '../domain/schedule.js';
import { itemToSchedule, scheduleToItem } from './items.js';
import { DUE_INDEX, dueUpToSortKey, parseSchedulePk, scheduleIndexKeys, scheduleKey, SCHEDULES_PARTITION } from './keys.js';
import { batchGetItems, deleteItem, getItem, putItem, queryPage, type Item, type PutParams, type StoreContext } from './send.js';

/** The schedule as it was read: its revision, and its creation, since a schedule deleted and made again starts at revision 1 again. */
export type ReadSchedule = Pick<Schedule, 'revision' | 'createdAtMs'>;

/**
 * Creates the schedule (none may exist), or replaces it only while it is the one `read` (same creation, same
 * revision): a poller's advance and an operator's change never undo one another, nor does an advance of a
 * schedule deleted and made again meanwhile; the write that lost reads again.
 */
export function putScheduleParams(schedule: Schedule, read: ReadSchedule | undefined): PutParams {
  return {
    Item: { ...scheduleKey(schedule.name), ...scheduleIndexKeys(schedule.name, schedule.nextFireAtMs, schedule.paused), ...scheduleToItem(schedule) },
    ...(read === undefined
      ? { ConditionExpression: 'attribute_not_exists(pk)' }
      : {
          ConditionExpression: 'revision = :readRevision AND createdAtMs = :readCreatedAt',
          ExpressionAttributeValues: { ':readRevision': read.revision, ':readCreatedAt': read.createdAtMs },
        }),
  };
}

export async function readSchedule(ctx: StoreContext, name: string): Promise<Schedule | undefined> {
  const item = await getItem(ctx, scheduleKey(name), { consistentRead: true });
  return item ? itemToSchedule(item) : undefined;
}

/** Writes `schedule` as `putScheduleParams` says; false when another write came first. */
export async function writeSchedule(ctx: StoreContext, schedule: Schedule, read: ReadSchedule | undefined): Promise<boolean> {
  return (await putItem(ctx, putScheduleParams(schedule, read))).ok;
}

/**
 * Deletes the schedule; false when there was none. With `jobType`, only while the schedule is of that type (the
 * one the caller's scope was checked on): a PUT that moved it to another type meanwhile keeps it.
 */
export async function removeSchedule(ctx: StoreContext, name: string, jobType?: string): Promise<boolean> {
  const condition =
    jobType === undefined
      ? { ConditionExpression: 'attribute_exists(pk)' }
      : { ConditionExpression: 'attribute_exists(pk) AND jobType = :seen', ExpressionAttributeValues: { ':seen': jobType } };
  return (await deleteItem(ctx, { Key: scheduleKey(name), ...condition })).ok;
}

/** The names of up to `limit` schedules due at or before `nowMs`, earliest first: one query, empty when none is due. */
export async function dueScheduleNames(ctx: StoreContext, nowMs: number, limit: number): Promise<string[]> {
  const { Items } = await queryPage(ctx, {
    IndexName: DUE_INDEX,
    KeyConditionExpression: 'gsi1pk = :partition AND gsi1sk <= :upTo',
    ExpressionAttributeValues: { ':partition': SCHEDULES_PARTITION, ':upTo': dueUpToSortKey(nowMs) },
    ProjectionExpression: 'pk',
    Limit: limit,
  });
  return (Items ?? []).map((item) => parseSchedulePk(String(item.pk)));
}

/** Where a page of schedules ended: the index key of its last entry. */
export interface SchedulePosition {
  gsi1sk: string;
  name: string;
}

/** A page of schedules in index order (next fire first, then ended, then paused), from after `after`, each with its position. */
export async function pageOfSchedules(
  ctx: StoreContext,
  limit: number,
  after: SchedulePosition | undefined,
): Promise<{ schedules: { schedule: Schedule; position: SchedulePosition }[]; last?: SchedulePosition }> {
  const startKey: Item | undefined = after && { ...scheduleKey(after.name), gsi1pk: SCHEDULES_PARTITION, gsi1sk: after.gsi1sk };
  const page = await queryPage(
    ctx,
    {
      IndexName: DUE_INDEX,
      KeyConditionExpression: 'gsi1pk = :partition',
      ExpressionAttributeValues: { ':partition': SCHEDULES_PARTITION },
      Limit: limit,
    },
    startKey,
  );
  const positions = (page.Items ?? []).map((entry) => ({ gsi1sk: String(entry.gsi1sk), name: parseSchedulePk(String(entry.pk)) }));
  const byName = new Map((await batchGetItems(ctx, positions.map(({ name }) => scheduleKey(name)))).map(itemToSchedule).map((schedule) => [schedule.name, schedule]));
  const schedules = positions.flatMap((position) => {
    const schedule = byName.get(position.name);
    return schedule ? [{ schedule, position }] : [];
  });
  const last = positions.at(-1);
  return page.LastEvaluatedKey && last ? { schedules, last } : { schedules };
}
