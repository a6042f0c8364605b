/**
 * Model-based: fast-check drives random interleavings of enqueue, claim, run
 * (success or failure), stale callback, cancel (of waiting jobs, of claimed
 * ones, of a job while its handler runs), replay, clock steps, sweeps,
 * worker crashes, a schedule's fires (pollers dying mid-fire, pauses and
 * resumes) and a limited type's polls and ends (pollers dying after their
 * reservation, workers dying before they give slots back) against the store on
 * DynamoDB Local, and checks the invariants of docs/concepts/design.md after every step: for
 * the schedule, one job per fire time, every time fired so far made; for the
 * limited type, the weight its jobs hold never above its concurrency nor above
 * its counter, and equal to it once the sweeper has handed it over and settled;
 * for cancels, a job whose cancel was answered as being made ends cancelled,
 * never succeeded, failed or queued again.
 */
import { TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import fc from 'fast-check';
import { expect, test } from 'vitest';
import { completeFromCallback } from '../../lib/queue/attempt/callbacks.js';
import { claimJob } from '../../lib/queue/attempt/claim.js';
import { ConflictError, NotFoundError } from '../../lib/domain/errors.js';
import { putJobType } from '../../lib/queue/catalog/job-types.js';
import { getJob } from '../../lib/queue/read-job.js';
import { cancelJob } from '../../lib/queue/attempt/cancel.js';
import { enqueueJob, replayJob } from '../../lib/queue/enqueue/enqueue.js';
import { isTerminal } from '../../lib/domain/job.js';
import { parseJobTypeDefinition } from '../../lib/wire/job-types.js';
import type { Job, JobStatus } from '../../lib/domain/job.js';
import type { JobType } from '../../lib/domain/job-type.js';
import { sweepOnce } from '../../lib/queue/sweep/sweep.js';
import { pollOnce } from '../../lib/queue/poll/poll.js';
import { settleWaitMs } from '../../lib/queue/limits/counter-reconcile.js';
import { readInFlight } from '../../lib/store/counters.js';
import type { WorkerBatch } from '../../lib/domain/invocations.js';
import { runClaimedJob } from '../../lib/queue/attempt/run-batch.js';
import { createTestQueue, type TestQueue } from '../support/queue.js';
import { dyingAt, dyingBeforeAdvance } from '../support/dying.js';
import type { QueueContext } from '../../lib/queue/context.js';
import { fireDueSchedules } from '../../lib/queue/schedules/fire-schedules.js';
import { putSchedule, setSchedulePaused } from '../../lib/queue/schedules/manage-schedules.js';
import { PARTITION_PREFIX } from '../../lib/store/keys.js';
import { scheduleDefinitionFromInput, scheduleInputSchema } from '../../lib/wire/schedules.js';
import { tableItems } from '../support/api.js';
import { scaled } from './scale.js';

const TYPES = ['alo', 'amo'] as const;
/** A type with a concurrency limit, whose jobs weigh 1 or 2: claimed by polls only, which reserve their slots first. */
const LIMITED = 'lim';
const LIMITED_CONCURRENCY = 2;
type TypeName = (typeof TYPES)[number] | typeof LIMITED;

interface Real {
  queue: TestQueue;
  types: Record<TypeName, JobType>;
  /** Claims a worker holds and has not run yet; a crash forgets them. */
  held: Map<string, Job>;
  /** Handler starts per job: the clock at each, and the job's run_after in the table as its handler started. */
  starts: Map<string, { atMs: number; runAfterMs: number }[]>;
  /** When the schedule was made. */
  startMs: number;
}

interface Model {
  /** Every job the store accepted, by key, with the terminal status once it has one. */
  accepted: Map<string, { type: TypeName; id: string; terminal?: JobStatus }>;
  /** The schedule (every minute, catch_up all): paused or not, and the clock of its last fire that completed unpaused. */
  schedule: { paused: boolean; firedUpToMs: number };
  /** Jobs whose cancel was answered `cancelling` (they were running): each must end cancelled, and nothing else. */
  cancelling: Set<string>;
}

const SCHEDULE = 'tick';
const MINUTE_MS = 60_000;

/** The ids of the jobs the schedule must have made by `upToMs`: one per minute since the queue began. */
function scheduledIdsUpTo(startMs: number, upToMs: number): string[] {
  const ids: string[] = [];
  for (let atMs = Math.floor(startMs / MINUTE_MS) * MINUTE_MS + MINUTE_MS; atMs <= upToMs; atMs += MINUTE_MS) {
    ids.push(`${SCHEDULE}@${new Date(atMs).toISOString().replace('.000Z', 'Z')}`);
  }
  return ids;
}

/** The poller's context, killed once its first counter transaction (a reservation) has landed: no claim, no release. */
function dyingAfterReservation(ctx: QueueContext): QueueContext {
  let reserved = false;
  return dyingAt(
    ctx,
    (command) => {
      if (reserved && (command instanceof UpdateCommand || command instanceof TransactWriteCommand)) return true;
      if (command instanceof TransactWriteCommand) reserved = true;
      return false;
    },
    'the poller',
  );
}

/** The worker's context, killed before any counter write: its ends land, their slots never come back. */
const withoutCounterWrites = (ctx: QueueContext): QueueContext => dyingAt(ctx, (command) => command instanceof TransactWriteCommand, 'the worker');

/** One job per fire time, all of them fire times, every time fired so far made; the schedule's jobs join the model. */
async function checkSchedule(model: Model, real: Real): Promise<void> {
  const made = (await tableItems(real.queue))
    .filter((item) => String(item.pk).startsWith(PARTITION_PREFIX.job) && item.schedule === SCHEDULE)
    .map((item) => String(item.id))
    .sort();
  const possible = new Set(scheduledIdsUpTo(real.startMs, real.queue.clock.nowMs()));
  for (const id of made) expect(possible.has(id), `${id} is no fire time so far`).toBe(true);
  expect(made, 'times fired so far made').toEqual(expect.arrayContaining(scheduledIdsUpTo(real.startMs, model.schedule.firedUpToMs)));
  for (const id of made) if (!model.accepted.has(keyOf('alo', id))) model.accepted.set(keyOf('alo', id), { type: 'alo', id });
}

const keyOf = (type: string, id: string) => `${type}/${id}`;

/** What the limited type's claimed jobs hold, and what its counter says. */
async function limitedWeights(model: Model, real: Real): Promise<{ held: number; counted: number }> {
  let held = 0;
  for (const entry of model.accepted.values()) {
    if (entry.type !== LIMITED) continue;
    const job = await getJob(real.queue.ctx, entry.type, entry.id);
    if ((job?.status === 'running' || job?.status === 'awaiting_callback') && job.heldSlots?.type) held += job.heldSlots.weight;
  }
  return { held, counted: (await readInFlight(real.queue.ctx, LIMITED, [])).type };
}

/** Invariants checked against the table after every command. */
async function checkInvariants(model: Model, real: Real): Promise<void> {
  const { held, counted } = await limitedWeights(model, real);
  expect(held, 'weight in flight within the concurrency').toBeLessThanOrEqual(LIMITED_CONCURRENCY);
  expect(counted, 'the counter never below what its jobs hold').toBeGreaterThanOrEqual(held);
  for (const [key, entry] of model.accepted) {
    const job = await getJob(real.queue.ctx, entry.type, entry.id);
    expect(job, `${key} lost`).toBeDefined();
    if (!job) continue;
    expect(job.attempt, `${key} attempts`).toBeLessThanOrEqual(job.maxAttempts);
    const open = job.status === 'running' || job.status === 'awaiting_callback' ? 1 : 0;
    expect(job.history.length + job.historyDropped + open, `${key} history explains attempts`).toBe(job.attempt);
    if (entry.terminal) expect(job.status, `${key} left its terminal state`).toBe(entry.terminal);
    else if (isTerminal(job.status)) entry.terminal = job.status;
    if (model.cancelling.has(key)) {
      expect(job.status, `${key} was being cancelled: queued again`).not.toBe('queued');
      if (isTerminal(job.status)) expect(job.status, `${key} was being cancelled: ended otherwise`).toBe('cancelled');
    }
    const starts = real.starts.get(key) ?? [];
    if (entry.type === 'amo') expect(starts.length, `${key} at_most_once started twice`).toBeLessThanOrEqual(1);
    for (const start of starts) expect(start.atMs, `${key} started before its run_after`).toBeGreaterThanOrEqual(start.runAfterMs);
  }
}

type Command = fc.AsyncCommand<Model, Real>;

/**
 * After the commands, the queue runs on from where they left it, its clock moving past every retry delay, visibility
 * timeout and settlement wait, a sweep and a poll running every job it claims, until every accepted job is terminal:
 * none may be left behind, so "lost" means more than a missing item. The invariants hold at every round.
 */
async function drainToTheEnd(model: Model, real: Real): Promise<void> {
  // The worker holding claims is gone: the sweeper hands them back.
  real.held.clear();
  const openJobs = async (): Promise<string[]> => {
    const open: string[] = [];
    for (const [key, entry] of model.accepted) {
      const job = await getJob(real.queue.ctx, entry.type, entry.id);
      if (!job || !isTerminal(job.status)) open.push(`${key}: ${job?.status ?? 'no item'}`);
    }
    return open;
  };
  const invoker = { invoke: async (batch: WorkerBatch) => { for (const job of batch.jobs) await run(real, job, true); } };
  for (let round = 0; round < 20 && (await openJobs()).length > 0; round++) {
    real.queue.clock.advance(Math.max(settleWaitMs(real.queue.ctx.settings), 61_000));
    await sweepOnce(real.queue.as('sweeper'), { customPolicies: {} });
    await pollOnce(real.queue.as('poller'), { jobTypes: Object.values(real.types), invoker, cursors: new Map() });
    await checkInvariants(model, real);
  }
  expect(await openJobs(), 'jobs never ended').toEqual([]);
}

async function run(real: Real, job: Job, succeeds: boolean, worker?: QueueContext, whileRunning?: () => Promise<void>): Promise<void> {
  const key = keyOf(job.type, job.id);
  const handler = async () => {
    const atMs = real.queue.clock.nowMs();
    // The run_after the job was started under, as the table holds it now (a retry moves it forward later).
    const stored = await getJob(real.queue.ctx, job.type, job.id);
    real.starts.set(key, [...(real.starts.get(key) ?? []), { atMs, runAfterMs: stored?.runAfterMs ?? Infinity }]);
    await whileRunning?.();
    if (!succeeds) throw new Error('failing on purpose');
    return 'ok';
  };
  await runClaimedJob(worker ?? real.queue.as('worker'), job, real.types[job.type as TypeName], {
    registry: { handlers: { run: handler }, retryPolicies: {} },
    worker: { id: 'w', host: 'h' },
  });
}

const command = (name: string, run: (model: Model, real: Real) => Promise<void>): Command => ({
  check: () => true,
  run: async (model, real) => {
    await run(model, real);
    await checkSchedule(model, real);
    await checkInvariants(model, real);
  },
  toString: () => name,
});

const typeArb = fc.constantFrom<TypeName>(...TYPES, LIMITED);
/** Claimed by hand, outside a poll: only types without limits, whose claims need no reservation. */
const unlimitedTypeArb = fc.constantFrom(...TYPES);
const idArb = fc.integer({ min: 0, max: 1 }).map((n) => `j${n}`);
const delayArb = fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 90_000 }));

const allCommands = [
  fc.tuple(typeArb, idArb, delayArb).map(([type, id, delayMs]) =>
    command(`enqueue ${type}/${id} +${delayMs}ms`, async (model, real) => {
      const runAfterMs = real.queue.clock.nowMs() + delayMs;
      try {
        await enqueueJob(real.queue.ctx, real.types[type], id, { data: { id }, runAfterMs, priority: 100, weight: 1 });
        if (!model.accepted.has(keyOf(type, id))) model.accepted.set(keyOf(type, id), { type, id });
      } catch (error) {
        // The same id with another body (another run_after): refused, and the stored job unchanged.
        expect(error).toBeInstanceOf(ConflictError);
        expect(model.accepted.has(keyOf(type, id))).toBe(true);
      }
    }),
  ),
  fc.tuple(unlimitedTypeArb, idArb).map(([type, id]) =>
    command(`claim ${type}/${id}`, async (_model, real) => {
      const before = await getJob(real.queue.ctx, type, id);
      const claim = await claimJob(real.queue.ctx, { type, id }, real.types[type]);
      if (claim.kind === 'claimed') {
        expect(before?.status).toBe('queued');
        expect(claim.job.runAfterMs).toBeLessThanOrEqual(real.queue.clock.nowMs());
        real.held.set(keyOf(type, id), claim.job);
      }
    }),
  ),
  fc.constant(
    command('poll: claim every due job', async (_model, real) => {
      const invoker = { invoke: async (batch: WorkerBatch) => batch.jobs.forEach((job) => real.held.set(keyOf(job.type, job.id), job)) };
      await pollOnce(real.queue.as('poller'), { jobTypes: Object.values(real.types), invoker, cursors: new Map() });
    }),
  ),
  fc.boolean().map((succeeds) =>
    command(`run every held claim, ${succeeds ? 'succeeding' : 'failing'}`, async (_model, real) => {
      const held = [...real.held.values()];
      real.held.clear();
      for (const job of held) await run(real, job, succeeds);
    }),
  ),
  fc.tuple(typeArb, idArb, fc.boolean()).map(([type, id, succeeds]) =>
    command(`run a held claim of ${type}/${id} twice (a duplicate delivery), ${succeeds ? 'succeeding' : 'failing'}`, async (_model, real) => {
      const job = real.held.get(keyOf(type, id));
      if (!job) return;
      real.held.delete(keyOf(type, id));
      await Promise.all([run(real, job, succeeds), run(real, job, succeeds)]);
    }),
  ),
  fc.tuple(typeArb, idArb, fc.constantFrom(-2, -1, 0, 1, 2)).map(([type, id, offset]) =>
    command(`stale callback ${type}/${id}, attempt ${offset >= 0 ? '+' : ''}${offset}`, async (_model, real) => {
      const job = await getJob(real.queue.ctx, type, id);
      if (!job) return;
      // An earlier attempt, one not made yet, or the current one once it has ended (the job queued or terminal).
      const open = job.status === 'running' || job.status === 'awaiting_callback';
      const attempt = job.attempt + offset;
      if (attempt < 1 || (offset === 0 && open)) return;
      const callback = completeFromCallback(real.queue.ctx, real.types[type], id, { status: 'succeeded', attempt }, {});
      await expect(callback).rejects.toBeInstanceOf(ConflictError);
      expect(await getJob(real.queue.ctx, type, id)).toEqual(job);
    }),
  ),
  fc.tuple(typeArb, idArb).map(([type, id]) =>
    command(`cancel ${type}/${id}`, async (model, real) => {
      const before = await getJob(real.queue.ctx, type, id);
      try {
        const cancelled = await cancelJob(real.queue.ctx, type, id, 'key');
        if (before?.status === 'running') {
          expect(cancelled.state).toBe('cancelling');
          expect(cancelled.job).toMatchObject({ status: 'running', cancelRequestedAtMs: expect.any(Number) });
          model.cancelling.add(keyOf(type, id));
        } else {
          expect(['queued', 'awaiting_callback']).toContain(before?.status);
          expect(cancelled).toMatchObject({ state: 'cancelled', job: { status: 'cancelled', cancelledBy: 'key' } });
        }
      } catch (error) {
        expect(error).toBeInstanceOf(before ? ConflictError : NotFoundError);
        expect(before === undefined || isTerminal(before.status)).toBe(true);
        expect(await getJob(real.queue.ctx, type, id)).toEqual(before);
      }
    }),
  ),
  fc.tuple(typeArb, fc.boolean()).map(([type, succeeds]) =>
    command(`run a held claim of ${type}, cancelled while its handler runs, which then ${succeeds ? 'succeeds' : 'fails'}`, async (model, real) => {
      const job = [...real.held.values()].find((held) => held.type === type);
      if (!job) return;
      const key = keyOf(job.type, job.id);
      real.held.delete(key);
      await run(real, job, succeeds, undefined, async () => {
        const cancelled = await cancelJob(real.queue.ctx, job.type, job.id, 'key');
        expect(cancelled.state).toBe('cancelling');
        model.cancelling.add(key);
      });
      if (model.cancelling.has(key)) expect((await getJob(real.queue.ctx, job.type, job.id))?.status).toBe('cancelled');
    }),
  ),
  fc.tuple(typeArb, idArb).map(([type, id]) =>
    command(`replay ${type}/${id}`, async (model, real) => {
      if (!model.accepted.has(keyOf(type, id))) return;
      const replayed = await replayJob(real.queue.ctx, real.types[type], id);
      model.accepted.set(keyOf(type, replayed.id), { type, id: replayed.id });
    }),
  ),
  fc.integer({ min: 1_000, max: 60_000 }).map((ms) =>
    command(`advance ${ms}ms and sweep`, async (_model, real) => {
      real.queue.clock.advance(ms);
      await sweepOnce(real.queue.as('sweeper'), { customPolicies: {} });
    }),
  ),
  typeArb.map((type) =>
    command(`run a held claim of ${type} so slowly that the sweeper takes it back before it ends`, async (_model, real) => {
      const job = [...real.held.values()].find((held) => held.type === type);
      if (!job) return;
      real.held.delete(keyOf(job.type, job.id));
      await run(real, job, true, undefined, async () => {
        real.queue.clock.advance(job.claimedUntilMs! - real.queue.clock.nowMs() + 1);
        await sweepOnce(real.queue.as('sweeper'), { customPolicies: {} });
      });
    }),
  ),
  fc.constant(
    command('worker crash: held claims are forgotten', async (_model, real) => {
      real.held.clear();
    }),
  ),
  fc.constant(
    command('fire due schedules', async (model, real) => {
      await fireDueSchedules(real.queue.as('poller'), Object.values(real.types));
      if (!model.schedule.paused) model.schedule.firedUpToMs = real.queue.clock.nowMs();
    }),
  ),
  fc.constant(
    command('fire due schedules twice at once, one poller killed before it moves the schedule', async (_model, real) => {
      const poller = real.queue.as('poller');
      await Promise.allSettled([fireDueSchedules(poller, Object.values(real.types)), fireDueSchedules(dyingBeforeAdvance(poller), Object.values(real.types))]);
    }),
  ),
  fc.boolean().map((paused) =>
    command(`${paused ? 'pause' : 'resume'} the schedule`, async (model, real) => {
      await setSchedulePaused(real.queue.ctx, SCHEDULE, paused);
      model.schedule.paused = paused;
    }),
  ),
];

const limitedCommands = [
  fc.tuple(idArb, fc.integer({ min: 1, max: 2 })).map(([id, weight]) =>
    command(`enqueue ${LIMITED}/${id} weighing ${weight}`, async (model, real) => {
      try {
        await enqueueJob(real.queue.ctx, real.types[LIMITED], id, { data: { id }, priority: 100, weight });
        model.accepted.set(keyOf(LIMITED, id), { type: LIMITED, id });
      } catch (error) {
        expect(error).toBeInstanceOf(ConflictError);
      }
    }),
  ),
  fc.constant(
    command('poll, the poller dying after its reservation', async (_model, real) => {
      const invoker = { invoke: async (batch: WorkerBatch) => batch.jobs.forEach((job) => real.held.set(keyOf(job.type, job.id), job)) };
      await pollOnce(dyingAfterReservation(real.queue.as('poller')), { jobTypes: [real.types[LIMITED]], invoker, cursors: new Map() }).catch(() => undefined);
    }),
  ),
  fc.constant(
    command('run every held claim, the worker dying before it gives slots back', async (_model, real) => {
      const held = [...real.held.values()];
      real.held.clear();
      for (const job of held) await run(real, job, true, withoutCounterWrites(real.queue.as('worker')));
    }),
  ),
  fc.constant(
    command('advance and sweep five times, each past the settlement wait: the counter equals what its jobs hold', async (model, real) => {
      // The first sweep times out every claim (their slots come back) and may find a settlement of the earlier
      // epochs' part under way, which the first two sweeps finish; the third hands the counter over to a new epoch,
      // the fourth proposes the settlement of what it held and the fifth applies it.
      for (let sweep = 0; sweep < 5; sweep++) {
        real.queue.clock.advance(settleWaitMs(real.queue.ctx.settings));
        await sweepOnce(real.queue.as('sweeper'), { customPolicies: {} });
      }
      const { held, counted } = await limitedWeights(model, real);
      expect(counted, 'the counter settled').toBe(held);
    }),
  ),
];

// Enqueue, poll and run are listed again so that most sequences carry jobs all the way to a start.
const [enqueue, claim, poll, runHeld, runTwice, ...rest] = allCommands as [Arb, Arb, Arb, Arb, Arb, ...Arb[]];
const [enqueueLimited, ...limitedRest] = limitedCommands as [Arb, ...Arb[]];
type Arb = fc.Arbitrary<Command>;
const commands = [enqueue, enqueue, enqueue, enqueueLimited, enqueueLimited, claim, poll, poll, runHeld, runHeld, runTwice, runTwice, ...rest, ...limitedRest];

test('random interleavings of every operation keep the queue invariants', async () => {
  await fc.assert(
    fc.asyncProperty(fc.commands(commands, { maxCommands: scaled(40, 80), size: 'max' }), async (cmds) => {
      const queue = await createTestQueue({ settings: { bucketMs: 10_000 } });
      try {
        const types = {} as Record<TypeName, JobType>;
        const limitedBody = { target: { kind: 'handler', name: 'run' }, visibility_timeout_s: 30, concurrency: LIMITED_CONCURRENCY, attempts: 3, retry: { kind: 'fixed', delay_s: 5 } };
        types[LIMITED] = (await putJobType(queue.ctx, LIMITED, parseJobTypeDefinition(limitedBody))).jobType;
        for (const name of TYPES) {
          const body = {
            target: { kind: 'handler', name: 'run' },
            visibility_timeout_s: 30,
            ...(name === 'amo' ? { delivery_strategy: 'at_most_once' } : { attempts: 3, retry: { kind: 'fixed', delay_s: 5 } }),
          };
          types[name] = (await putJobType(queue.ctx, name, parseJobTypeDefinition(body))).jobType;
        }
        const body = scheduleInputSchema.parse({ cron: '* * * * *', job_type: 'alo', catch_up: 'all' });
        await putSchedule(queue.ctx, SCHEDULE, scheduleDefinitionFromInput(body), types.alo);
        const startMs = queue.clock.nowMs();
        const model: Model = { accepted: new Map(), schedule: { paused: false, firedUpToMs: startMs }, cancelling: new Set<string>() };
        const real: Real = { queue, types, held: new Map(), starts: new Map(), startMs };
        await fc.asyncModelRun(() => ({ model, real }), cmds);
        await drainToTheEnd(model, real);
      } finally {
        await queue.drop();
      }
    }),
    { numRuns: scaled(15, 150), seed: Number(process.env.FC_SEED ?? Date.now() % 2 ** 31) },
  );
}, scaled(300_000, 1_800_000));
