/**
 * The wake item of a poller partition or of the sweeper (`WAKE#<role>#<partition>`): who is awake, until when its
 * lease runs unless renewed, whether it gave the lease up, until when the waker asked for someone awake, how far
 * every lane it owns was walked when it last looked, and when job types last changed. queue/wake/lease-keeper.ts
 * keeps it; queue/wake/ensure-awake.ts asks its holds there.
 */
import { wakeKey, type ItemKey, type WakeRole } from './keys.js';
import { getItem, updateItem, type Item, type StoreContext, type UpdateParams } from './send.js';

export interface WakeState {
  /** The invocation holding the lease, when one ever did. */
  ownerId: string | undefined;
  /** Until when the lease runs: a holder that crashed is taken for gone after it. */
  awakeUntilMs: number;
  /** When the holder's invocation ends: it can renew its lease no further. */
  ownerEndsAtMs: number;
  /** The holder gave the lease up: it found nothing due soon, and is ending. */
  stopping: boolean;
  /** The waker asked for someone awake until then: no holder stops before it, nor on a look begun before it. */
  holdUntilMs: number;
  /**
   * Every active lane's walk was at or past this bucket when the holder last looked; unknown after a type changed,
   * including when the holder wrote it from types listed before the change (a resumed type's lane may lie behind).
   */
  walkedFromBucket: number | undefined;
  /** When a job type was last made, changed, paused or resumed: an awake poller lists types again after it. */
  typesChangedAtMs: number;
  /** The sweeper's: when a whole sweep last ended, backstop and counters included. */
  sweptAtMs: number;
  /**
   * A poller partition's: until when the waker asked for each type's lanes to be polled (EVERY_LANE: all of them),
   * for work written there. An awake poller polls only these, and the types whose lanes it found work in, between
   * polls of every lane. Never later than `holdUntilMs`.
   */
  laneHoldsUntilMs: ReadonlyMap<string, number>;
}

/** A lane hold's name for work that may lie in any lane: a timer for the earliest work a poller left, a type resumed. */
export const EVERY_LANE = '*';
const LANE_HOLD_PREFIX = 'laneHold#';

function laneHoldsOf(item: Item | undefined): Map<string, number> {
  const holds = new Map<string, number>();
  for (const [name, value] of Object.entries(item ?? {})) {
    if (name.startsWith(LANE_HOLD_PREFIX) && typeof value === 'number') holds.set(name.slice(LANE_HOLD_PREFIX.length), value);
  }
  return holds;
}

/** Placeholders and names for the lane holds of `lanes`, for an update expression. */
function laneHoldNames(lanes: readonly string[]): { placeholders: string[]; names: Record<string, string> } {
  const placeholders = lanes.map((_, at) => `#lane${at}`);
  return { placeholders, names: Object.fromEntries(lanes.map((lane, at) => [`#lane${at}`, `${LANE_HOLD_PREFIX}${lane}`])) };
}

const numberOr = (value: unknown, fallback: number): number => (typeof value === 'number' ? value : fallback);

/** Where every walk stood, and when job types had last changed as the walker listed the types it walked. */
export interface Walked {
  bucket: number;
  typesChangedAtMs: number;
}

/** The walks as recorded, trusted only while no type changed since the types they cover were listed. */
function walkedOf(item: Item | undefined): number | undefined {
  if (typeof item?.walkedFromBucket !== 'number') return undefined;
  return numberOr(item.walkedTypesChangedAtMs, 0) === numberOr(item.typesChangedAtMs, 0) ? item.walkedFromBucket : undefined;
}

export function itemToWakeState(item: Item | undefined): WakeState {
  return {
    ownerId: typeof item?.ownerId === 'string' ? item.ownerId : undefined,
    awakeUntilMs: numberOr(item?.awakeUntilMs, 0),
    ownerEndsAtMs: numberOr(item?.ownerEndsAtMs, 0),
    stopping: item?.stopping === true,
    holdUntilMs: numberOr(item?.holdUntilMs, 0),
    walkedFromBucket: walkedOf(item),
    typesChangedAtMs: numberOr(item?.typesChangedAtMs, 0),
    sweptAtMs: numberOr(item?.sweptAtMs, 0),
    laneHoldsUntilMs: laneHoldsOf(item),
  };
}

export async function readWakeState(ctx: StoreContext, role: WakeRole, partition: number): Promise<WakeState> {
  return itemToWakeState(await getItem(ctx, wakeKey(role, partition), { consistentRead: true }));
}

export interface Lease {
  ownerId: string;
  awakeUntilMs: number;
  ownerEndsAtMs: number;
}

/** Takes the lease, whoever held it: a holder that loses it ends, and the taker works on. */
export function takeLeaseParams(key: ItemKey, lease: Lease): UpdateParams {
  return {
    Key: key,
    UpdateExpression: 'SET ownerId = :owner, awakeUntilMs = :until, ownerEndsAtMs = :ends, stopping = :no',
    ExpressionAttributeValues: { ':owner': lease.ownerId, ':until': lease.awakeUntilMs, ':ends': lease.ownerEndsAtMs, ':no': false },
    ReturnValues: 'ALL_NEW',
  };
}

const walkedSet = (walked: Walked | undefined): string => (walked === undefined ? '' : ', walkedFromBucket = :walked, walkedTypesChangedAtMs = :walkedTypes');
const walkedValues = (walked: Walked | undefined) => (walked === undefined ? {} : { ':walked': walked.bucket, ':walkedTypes': walked.typesChangedAtMs });

/** Extends the lease of its holder (refused once another took it), recording how far its lanes were walked. */
export function renewLeaseParams(key: ItemKey, lease: Omit<Lease, 'ownerEndsAtMs'>, walked: Walked | undefined): UpdateParams {
  return {
    Key: key,
    UpdateExpression: `SET awakeUntilMs = :until${walkedSet(walked)}`,
    ConditionExpression: 'ownerId = :owner AND stopping = :no',
    ExpressionAttributeValues: { ':owner': lease.ownerId, ':until': lease.awakeUntilMs, ':no': false, ...walkedValues(walked) },
    ReturnValues: 'ALL_NEW',
  };
}

/**
 * Gives the lease up, on a look that began at `lookedAtMs` and found nothing due soon: refused when the waker asked
 * since for someone awake (a hold past that time), whose entry the look may not have seen. The lane holds the look
 * found (`passedLanes`) go: none can have been asked for since, as each lies within the hold that would refuse this.
 */
export function stopLeaseParams(key: ItemKey, ownerId: string, lookedAtMs: number, walked: Walked | undefined, passedLanes: readonly string[] = []): UpdateParams {
  const { placeholders, names } = laneHoldNames(passedLanes);
  return {
    Key: key,
    UpdateExpression: `SET stopping = :yes${walkedSet(walked)}${placeholders.length > 0 ? ` REMOVE ${placeholders.join(', ')}` : ''}`,
    ConditionExpression: 'ownerId = :owner AND (attribute_not_exists(holdUntilMs) OR holdUntilMs <= :looked)',
    ...(placeholders.length > 0 ? { ExpressionAttributeNames: names } : {}),
    ExpressionAttributeValues: { ':owner': ownerId, ':yes': true, ':looked': lookedAtMs, ...walkedValues(walked) },
    ReturnValues: 'ALL_NEW',
  };
}

/**
 * Asks for someone awake until `holdUntilMs`; a later hold already asked for stays. Refused, it answers the item
 * as it is: a hold whose answer was lost is refused on the SDK's second try, and the waker must judge the holder
 * as the hold found it, not as it read it before.
 */
export function holdParams(key: ItemKey, holdUntilMs: number, lanes: readonly string[] = []): UpdateParams {
  // Every lane hold is at most the hold, so one raised with it is raised, never lowered.
  const { placeholders, names } = laneHoldNames(lanes);
  return {
    Key: key,
    UpdateExpression: `SET ${['holdUntilMs', ...placeholders].map((name) => `${name} = :hold`).join(', ')}`,
    ConditionExpression: 'attribute_not_exists(holdUntilMs) OR holdUntilMs < :hold',
    ...(placeholders.length > 0 ? { ExpressionAttributeNames: names } : {}),
    ExpressionAttributeValues: { ':hold': holdUntilMs },
    ReturnValues: 'ALL_NEW',
    ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
  };
}

/**
 * Raises the lane holds of `lanes` to `holdUntilMs`, under a hold that already lasts as long (holdParams refused):
 * refused, answering the item as it is, when another waker raised one of them meanwhile.
 */
export function laneHoldParams(key: ItemKey, holdUntilMs: number, lanes: readonly string[]): UpdateParams {
  const { placeholders, names } = laneHoldNames(lanes);
  return {
    Key: key,
    UpdateExpression: `SET ${placeholders.map((name) => `${name} = :hold`).join(', ')}`,
    ConditionExpression: placeholders.map((name) => `(attribute_not_exists(${name}) OR ${name} < :hold)`).join(' AND '),
    ExpressionAttributeNames: names,
    ExpressionAttributeValues: { ':hold': holdUntilMs },
    ReturnValues: 'ALL_NEW',
    ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
  };
}

/**
 * A job type was made or changed: awake pollers list types again, and the walks recorded are forgotten, since a
 * resumed type's lane may lie far behind them; the next minute tick then looks from the start.
 */
export function typesChangedParams(key: ItemKey, nowMs: number): UpdateParams {
  return {
    Key: key,
    UpdateExpression: 'SET typesChangedAtMs = :now REMOVE walkedFromBucket',
    ExpressionAttributeValues: { ':now': nowMs },
  };
}

/**
 * Records where every walk stood, as a tick that found it unknown read it from the cursors: unless a type changed
 * since (its lane may lie behind) or a holder recorded it already under the same types.
 */
export function recordWalkedParams(key: ItemKey, walked: Walked): UpdateParams {
  return {
    Key: key,
    UpdateExpression: 'SET walkedFromBucket = :walked, walkedTypesChangedAtMs = :changed',
    ConditionExpression:
      '(attribute_not_exists(walkedFromBucket) OR attribute_not_exists(walkedTypesChangedAtMs) OR walkedTypesChangedAtMs <> :changed) AND (attribute_not_exists(typesChangedAtMs) OR typesChangedAtMs = :changed)',
    ExpressionAttributeValues: { ':walked': walked.bucket, ':changed': walked.typesChangedAtMs },
  };
}

/** A whole sweep ended at `nowMs`. */
export function recordSweptParams(key: ItemKey, nowMs: number): UpdateParams {
  return { Key: key, UpdateExpression: 'SET sweptAtMs = :now', ExpressionAttributeValues: { ':now': nowMs } };
}

/** The write's outcome, and the wake item as it left it (or, refused, as it was, when the params ask for that). */
export async function writeWake(ctx: StoreContext, params: UpdateParams): Promise<{ ok: boolean; state: WakeState | undefined }> {
  const result = await updateItem(ctx, params);
  const item = result.ok ? result.item : result.current;
  return { ok: result.ok, state: item ? itemToWakeState(item) : undefined };
}
