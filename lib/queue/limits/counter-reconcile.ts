/**
 * Bringing a counter back to what its jobs hold, when weight was reserved or
 * held and never given back: a poll that died between its reservation and the
 * release of what it did not claim, a claim whose answer was lost, an attempt
 * whose process died between its end and the return of its slots, a return
 * that failed. Each leaves the counter above what its jobs hold, never below
 * (domain/slots.ts).
 *
 * What the jobs hold is read from the claim lane, an index that may lag its
 * table, while reservations and returns keep coming. So a counter is settled by
 * epochs: the sweeper hands it over to a new epoch, after which reservations
 * count in the new epoch's part and the earlier part can only go down, by the
 * returns of its jobs. A reservation of an earlier epoch may land as late as
 * the handover does (one call's time after it was sent) and claim for 5 s more,
 * and its claims reach the index within the cursor safety margin: past all that,
 * every job of the earlier epochs is listed, and no more will be. Then the
 * earlier part is set to what those jobs hold, in two steps a safety margin
 * apart: the first records the listed weight as a proposal, the second sets
 * the part to that, never above what it holds by then nor below a second
 * listing. The proposal counts every job that ends after it, so a return still
 * on its way when the part is set is not subtracted on top of it; the returns
 * of jobs that ended before it have landed by the second step (a write lands
 * within the margin). A busy counter is settled as surely as a quiet one.
 */
import type { HeldSlots, JobStatus } from '../../domain/job.js';
import type { JobType } from '../../domain/job-type.js';
import { hasSlotLimits, olderInFlight, type CounterState } from '../../domain/slots.js';
import { counterId, handOverParams, proposeSettleParams, readCounters, settleParams, weightByCounter, type CounterRef } from '../../store/counters.js';
import { updateItem } from '../../store/send.js';
import { MAX_DYNAMODB_CALL_MS } from '../../domain/limits.js';
import { RESERVATION_MS } from './slot-reservations.js';
import type { QueueContext } from '../context.js';
import type { QueueSettings } from '../settings.js';
import { listJobs } from '../read/list-jobs.js';

const HOLDING_STATUSES: JobStatus[] = ['running', 'awaiting_callback'];
const LISTING_PAGE = 100;

/** The slots the type's claimed jobs hold, as listed now. */
async function listHeldSlots(ctx: QueueContext, jobType: JobType): Promise<(HeldSlots | undefined)[]> {
  const held: (HeldSlots | undefined)[] = [];
  for (const status of HOLDING_STATUSES) {
    let cursor: string | undefined;
    do {
      const page = await listJobs(ctx, jobType, { status, limit: LISTING_PAGE, ...(cursor !== undefined ? { cursor } : {}) });
      held.push(...page.jobs.map((job) => job.heldSlots));
      cursor = page.nextCursor;
    } while (cursor !== undefined);
  }
  return held;
}

/** The weight the listed jobs hold on `counter` from epochs before `epoch` (or from no recorded epoch). */
function olderHeldOn(held: (HeldSlots | undefined)[], counter: CounterRef, epoch: number): number {
  return weightByCounter(held, epoch).get(counterId(counter))?.weight ?? 0;
}

/**
 * How long after a handover was sent the earlier part may be settled: by then every claim of an earlier epoch's
 * reservation is listed (see above). An epoch lasts at least as long.
 */
export function settleWaitMs(settings: Pick<QueueSettings, 'cursorSafetyMarginMs'>): number {
  return MAX_DYNAMODB_CALL_MS + RESERVATION_MS + settings.cursorSafetyMarginMs;
}

/**
 * Whether the earlier epochs' part needs settling: it holds weight, and was not settled since the counter was
 * handed over by this release (a counter the previous release moved to an epoch of its own is handed over first).
 */
function unsettled(state: CounterState): boolean {
  return state.epochAtMs > 0 && olderInFlight(state) > 0 && state.settledEpoch !== state.epoch;
}

/**
 * One step for each of the type's counters that holds weight: hands it over to a new epoch, or proposes or
 * applies the settlement of its earlier part. Returns how many counters a settlement lowered.
 */
export async function reconcileCounters(ctx: QueueContext, jobType: JobType): Promise<number> {
  if (!hasSlotLimits(jobType)) return 0;
  const marginMs = ctx.settings.cursorSafetyMarginMs;
  const waitMs = settleWaitMs(ctx.settings);
  const counters = (await readCounters(ctx, jobType.name)).filter(({ state }) => state.inFlight > 0 && ctx.nowMs() - state.epochAtMs >= waitMs);
  let listed: (HeldSlots | undefined)[] | undefined;
  let lowered = 0;
  for (const { counter, state } of counters) {
    if (!unsettled(state)) {
      await updateItem(ctx, handOverParams(jobType.name, counter, state, ctx.nowMs()));
      continue;
    }
    const { proposal } = state;
    if (proposal && ctx.nowMs() - proposal.atMs < marginMs) continue;
    listed ??= await listHeldSlots(ctx, jobType);
    const holding = Math.min(olderInFlight(state), olderHeldOn(listed, counter, state.epoch));
    if (!proposal) {
      await updateItem(ctx, proposeSettleParams(jobType.name, counter, state, holding, ctx.nowMs()));
      continue;
    }
    const target = Math.max(holding, Math.min(proposal.olderInFlight, olderInFlight(state)));
    const written = await updateItem(ctx, settleParams(jobType.name, counter, { ...state, proposal }, target));
    if (written.ok && target < olderInFlight(state)) lowered++;
  }
  return lowered;
}
