/**
 * Firing due schedules, from the pollers that run anyway. Exactly one job per
 * fire time: each time's job has the id `<schedule>@<fire time>` and goes
 * through the ordinary enqueue, idempotent on (type, id), so pollers racing,
 * a retry or a restart firing the same time find the job already there. The
 * schedule then moves to its next fire time by a write conditional on the
 * revision read: of two pollers, one moves it, the other changes nothing.
 * Enqueue comes first, so a poller that dies between the two leaves the time
 * due, and the next poll makes the same job again, which is no new job.
 */
import pLimit from 'p-limit';
import { ConflictError, ValidationError } from '../../domain/errors.js';
import { isTerminal, type JobInput } from '../../domain/job.js';
import { newTraceparent } from '../../domain/trace-context.js';
import type { JobType } from '../../domain/job-type.js';
import { dueFires, scheduledJobId, type Schedule, type ScheduleFire } from '../../domain/schedule.js';
import { dueScheduleNames, readSchedule, writeSchedule } from '../../store/schedules.js';
import type { QueueContext } from '../context.js';
import { enqueueJob } from '../enqueue/enqueue.js';
import { getJob } from '../read-job.js';

export interface FireResult {
  /** Jobs made. */
  made: number;
  /** Fire times that made no job: `overlap: "skip"` found the previous job unfinished. */
  skipped: number;
  /** Schedules another writer moved first (a racing poller, an operator): this poll's advance changed nothing. */
  lostRaces: number;
  /** What each schedule that fired made and skipped, with its job type: the log names the schedule, metrics the type. */
  bySchedule: { schedule: string; jobType: string; made: number; skipped: number }[];
}

/** Due schedules one query finds; while a query comes back full, the next is made at once, up to MAX_ROUNDS. */
const SCHEDULES_PER_QUERY = 100;
/** So that one check always ends: schedules that cannot fire yet (a type not read) are found again every round. */
const MAX_ROUNDS = 10;
const FIRE_CONCURRENCY = 8;

/** The job a schedule makes at `fireAtMs`: due at that time (so at once, unless its type's windows say later). */
export function scheduledJobInput(schedule: Pick<Schedule, 'name' | 'data' | 'priority' | 'weight' | 'throttleKey' | 'tags'>, fireAtMs: number): JobInput {
  return {
    data: schedule.data,
    priority: schedule.priority,
    weight: schedule.weight,
    ...(schedule.throttleKey !== undefined ? { throttleKey: schedule.throttleKey } : {}),
    ...(schedule.tags !== undefined ? { tags: schedule.tags } : {}),
    runAfterMs: fireAtMs,
    schedule: schedule.name,
    traceparent: newTraceparent(),
  };
}

/**
 * Makes the job of one fire time. An existing job of that id (a conflict too: the schedule's data changed
 * since) is the one made before when this schedule made it; one it did not make (a job a client enqueued
 * under that id before such ids were refused) is not its fire's job, and the fire is skipped saying so. A job
 * its type now refuses (a weight above a lowered concurrency) is no job, and why: the schedule moves on rather
 * than fail at every check, holding its place at the head of the index.
 */
async function makeJob(
  ctx: QueueContext,
  schedule: Schedule,
  jobType: JobType,
  fireAtMs: number,
): Promise<{ id: string; created: boolean } | { refused: string }> {
  const id = scheduledJobId(schedule.name, fireAtMs);
  const notMadeHere = { refused: `job ${id} exists and was not made by this schedule` };
  try {
    const { job, created } = await enqueueJob(ctx, jobType, id, scheduledJobInput(schedule, fireAtMs));
    return created || job.schedule === schedule.name ? { id, created } : notMadeHere;
  } catch (error) {
    if (error instanceof ConflictError) return (await getJob(ctx, jobType.name, id))?.schedule === schedule.name ? { id, created: false } : notMadeHere;
    if (error instanceof ValidationError) return { refused: `job type ${jobType.name} refused the job: ${error.details.map((issue) => `${issue.field} ${issue.message}`).join('; ')}` };
    throw error;
  }
}

async function previousJobUnfinished(ctx: QueueContext, schedule: Schedule, lastJobId: string | undefined): Promise<boolean> {
  if (lastJobId === undefined) return false;
  const job = await getJob(ctx, schedule.jobType, lastJobId);
  return job !== undefined && !isTerminal(job.status);
}

async function fireSchedule(ctx: QueueContext, name: string, jobTypes: ReadonlyMap<string, JobType>, result: FireResult): Promise<void> {
  const schedule = await readSchedule(ctx, name);
  // A type this poller has not read yet: the schedule stays due until it has.
  const jobType = schedule && jobTypes.get(schedule.jobType);
  if (!schedule || schedule.paused || !jobType) return;
  const nowMs = ctx.nowMs();
  const { fireAtMs, nextFireAtMs } = dueFires(schedule, nowMs);
  if (fireAtMs.length === 0 && nextFireAtMs === schedule.nextFireAtMs) return;
  let lastFire: ScheduleFire | undefined = schedule.lastFire;
  let lastJobId = schedule.lastJobId;
  const counts = { schedule: name, jobType: jobType.name, made: 0, skipped: 0 };
  result.bySchedule.push(counts);
  for (const atMs of fireAtMs) {
    if (schedule.overlap === 'skip' && (await previousJobUnfinished(ctx, schedule, lastJobId))) {
      lastFire = { fireAtMs: atMs, firedAtMs: nowMs, skipped: `overlap: job ${lastJobId} of an earlier fire had not finished` };
      result.skipped++;
      counts.skipped++;
      continue;
    }
    const job = await makeJob(ctx, schedule, jobType, atMs);
    if ('refused' in job) {
      lastFire = { fireAtMs: atMs, firedAtMs: nowMs, skipped: job.refused };
      result.skipped++;
      counts.skipped++;
      continue;
    }
    if (job.created) {
      result.made++;
      counts.made++;
    }
    lastFire = { fireAtMs: atMs, firedAtMs: nowMs, jobId: job.id };
    lastJobId = job.id;
  }
  const advanced: Schedule = {
    ...schedule,
    nextFireAtMs,
    ...(lastFire ? { lastFire } : {}),
    ...(lastJobId !== undefined ? { lastJobId } : {}),
    revision: schedule.revision + 1,
  };
  if (!(await writeSchedule(ctx, advanced, schedule))) result.lostRaces++;
}

/**
 * Fires the schedules due now, found with one query of the index by next fire time (an idle queue pays that
 * query and nothing else). One schedule's failure does not keep the others from firing; the first is thrown
 * once all were tried, and the failed schedule stays due for the next poll.
 */
export async function fireDueSchedules(ctx: QueueContext, jobTypes: readonly JobType[]): Promise<FireResult> {
  const result: FireResult = { made: 0, skipped: 0, lostRaces: 0, bySchedule: [] };
  const byName = new Map(jobTypes.map((jobType) => [jobType.name, jobType]));
  const limit = pLimit(FIRE_CONCURRENCY);
  let failure: PromiseRejectedResult | undefined;
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const names = await dueScheduleNames(ctx, ctx.nowMs(), SCHEDULES_PER_QUERY);
    const outcomes = await Promise.allSettled(names.map((name) => limit(() => fireSchedule(ctx, name, byName, result))));
    failure ??= outcomes.find((outcome): outcome is PromiseRejectedResult => outcome.status === 'rejected');
    if (names.length < SCHEDULES_PER_QUERY) break;
  }
  if (failure) throw failure.reason;
  return result;
}
