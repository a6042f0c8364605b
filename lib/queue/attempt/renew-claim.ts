/** Heartbeats: moving a running attempt's claim deadline on, and recording its progress reports. */
import type { ClaimGuard } from '../../domain/attempts.js';
import type { Job } from '../../domain/job.js';
import type { ProgressReport } from '../../domain/progress.js';
import { progressToJson } from '../../store/items.js';
import { writeJob } from './write-job.js';
import type { QueueContext } from '../context.js';
import { claimIndexKeys } from '../../store/keys.js';
import { extendClaimParams, updateJob, recordProgressParams } from '../../store/job-writes.js';

/** The attempt's report as the job keeps it, made at `nowMs`. */
export function progressJsonOf(guard: ClaimGuard, report: ProgressReport, nowMs: number): string {
  return progressToJson({ ...report, attempt: guard.attempt, atMs: nowMs });
}

/**
 * Moves the claim's deadline to `claimedUntilMs` (never earlier than it is), and records `progress` when
 * given, even when the deadline is already later; undefined when the claim is no longer held.
 */
export async function extendClaim(ctx: QueueContext, guard: ClaimGuard, claimedUntilMs: number, progress?: ProgressReport): Promise<Job | undefined> {
  const nowMs = ctx.nowMs();
  const index = claimIndexKeys(ctx.settings, guard, claimedUntilMs);
  const progressJson = progress === undefined ? undefined : progressJsonOf(guard, progress, nowMs);
  const result = await writeJob(ctx, extendClaimParams(guard, nowMs, claimedUntilMs, index, progressJson));
  if (result.ok) return result.job;
  const current = result.current;
  const stillHeld = current?.claimToken === guard.claimToken && current.attempt === guard.attempt;
  if (!stillHeld || (current.status !== 'running' && current.status !== 'awaiting_callback')) return undefined;
  return progress === undefined ? current : recordProgress(ctx, guard, progress);
}

/** Records the attempt's progress report, its claim's deadline untouched; undefined when the claim is no longer held. */
export async function recordProgress(ctx: QueueContext, guard: ClaimGuard, progress: ProgressReport): Promise<Job | undefined> {
  const nowMs = ctx.nowMs();
  const result = await updateJob(ctx, recordProgressParams(guard, nowMs, progressJsonOf(guard, progress, nowMs)));
  return result.ok ? result.job : undefined;
}
