/**
 * Bringing a counter back to what its jobs hold, when a process died between a
 * write of its jobs and the write of their counter: a poll between its
 * reservation and the release of what it did not claim, or an attempt between
 * its end and the return of its slots. Either leaves the counter above what its
 * jobs hold, never below (domain/slots.ts).
 *
 * What the jobs hold is read from the claim lane, an index that may lag its
 * table. So a counter is reconciled only once it has been quiet (no
 * reservation, release or return) for longer than a reservation lasts plus the
 * cursor safety margin, which is longer than any write in flight plus index
 * propagation: every claim that took its slots is listed by then. It goes in
 * two steps a safety margin apart: the first records the listed weight as a
 * proposal; the second sets the counter to the larger of that and a second
 * listing. Both are conditioned on the counter's version, which every counter
 * write moves, so a return that was in flight during the first listing voids
 * the proposal rather than being subtracted on top of it. The final write moves
 * the counter's epoch, so a reservation made before it is never given back on
 * top of it.
 */
import type { HeldSlots, JobStatus } from '../domain/job.js';
import type { JobType } from '../domain/job-type.js';
import { hasSlotLimits } from '../domain/slots.js';
import { counterId, proposeParams, readCounters, reconcileParams, weightByCounter } from '../store/counters.js';
import { updateItem } from '../store/send.js';
import { RESERVATION_MS } from './claim-due.js';
import type { QueueContext } from './context.js';
import { listJobs } from './job-listing.js';

const HOLDING_STATUSES: JobStatus[] = ['running', 'awaiting_callback'];
const LISTING_PAGE = 100;

/** The weight the type's claimed jobs hold, per counter (counterId). */
async function heldWeights(ctx: QueueContext, jobType: JobType): Promise<Map<string, { weight: number }>> {
  const held: (HeldSlots | undefined)[] = [];
  for (const status of HOLDING_STATUSES) {
    let cursor: string | undefined;
    do {
      const page = await listJobs(ctx, jobType, { status, limit: LISTING_PAGE, ...(cursor !== undefined ? { cursor } : {}) });
      held.push(...page.jobs.map((job) => job.heldSlots));
      cursor = page.nextCursor;
    } while (cursor !== undefined);
  }
  return weightByCounter(held);
}

/** Reconciles the type's quiet counters that hold weight; returns how many it changed. */
export async function reconcileCounters(ctx: QueueContext, jobType: JobType): Promise<number> {
  if (!hasSlotLimits(jobType)) return 0;
  const nowMs = ctx.nowMs();
  const quietMs = RESERVATION_MS + ctx.settings.cursorSafetyMarginMs;
  const quiet = (await readCounters(ctx, jobType.name)).filter(({ state }) => state.inFlight !== 0 && nowMs - state.changedAtMs >= quietMs);
  if (quiet.length === 0) return 0;
  const held = await heldWeights(ctx, jobType);
  let changed = 0;
  for (const { counter, state } of quiet) {
    const holding = held.get(counterId(counter))?.weight ?? 0;
    const { proposal } = state;
    // A return (or any counter write) in flight while the jobs were listed lands within the safety margin and moves
    // rev: only a proposal that outlived the margin with rev unmoved is applied, at the larger of two listings.
    if (!proposal || proposal.rev !== state.rev || ctx.nowMs() - proposal.atMs < ctx.settings.cursorSafetyMarginMs) {
      if (!proposal || proposal.rev !== state.rev) await updateItem(ctx, proposeParams(jobType.name, counter, state, holding, ctx.nowMs()));
      continue;
    }
    const target = Math.max(holding, proposal.inFlight);
    // Written even when right, so an idle counter whose jobs run long is read again only after another quiet period.
    const written = await updateItem(ctx, reconcileParams(jobType.name, counter, state, target, ctx.nowMs()));
    if (written.ok && target !== state.inFlight) changed++;
  }
  return changed;
}
