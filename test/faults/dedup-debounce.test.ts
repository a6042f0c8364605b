/**
 * Dedup and debounce enqueues racing from two api instances while pollers claim and workers run, under
 * transient DynamoDB faults; and an enqueue that crashes between any two of its calls and is sent again. Every
 * accepted enqueue's job ends terminal, each dedup key has one job per window, and a debounce key never has two
 * jobs collecting enqueues at once.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { FinalizeHandler, FinalizeHandlerArguments, MetadataBearer } from '@smithy/types';
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import type { QueueFunctionName } from '../../infra/local/aws/iam/stack-policies.js';
import type { WorkerInvoker } from '../../lib/domain/invocations.js';
import type { WorkerBatch } from '../../lib/domain/invocations.js';
import type { QueueContext } from '../../lib/queue/context.js';
import { enqueueJob } from '../../lib/queue/enqueue/enqueue.js';
import { putJobType } from '../../lib/queue/catalog/job-types.js';
import { getJob } from '../../lib/queue/read-job.js';
import { runPollerLoop } from '../../lib/queue/poll/poller-loop.js';
import { runWorkerBatch, type JobHandler } from '../../lib/queue/attempt/run-batch.js';
import { ConflictError } from '../../lib/domain/errors.js';
import type { Job, JobInput } from '../../lib/domain/job.js';
import type { JobType } from '../../lib/domain/job-type.js';
import { itemToJob } from '../../lib/store/items.js';
import type { DynamoClients } from '../../lib/store/client.js';
import { parseJobTypeDefinition } from '../../lib/wire/job-types.js';
import { tableItems } from '../support/api.js';
import { injectFaults, isInjected, seededRandom, type FaultCounts } from '../support/faults.js';
import { createTestQueue, realClock, type TestQueue } from '../support/queue.js';
import { auditJobs, contextWith, countingHandler, runUntilSettled, type ScenarioError } from '../support/scenario.js';
import { scaled } from './scale.js';

const ENQUEUES = scaled(400, 4_000);
const KEYS = scaled(6, 20);
const LANES = 8;
const FAULT_RATE = 0.15;
const WINDOW_S = 1;
/** Half the keys' jobs are due at once, so enqueues race their claims; the others wait a second for more, two at most. */
const debounceOf = (keyIndex: number) => ({ delayS: keyIndex % 2, maxWaitS: 2 });
/** Tries of one enqueue whose outcome a fault left unknown: a client sends it again with its id. */
const SEND_TRIES = 6;

interface Answer {
  id: string;
  key: string;
  created: boolean;
  startedAtMs: number;
  endedAtMs: number;
}

const jobsOfType = async (queue: TestQueue, type: string): Promise<Job[]> =>
  (await tableItems(queue)).filter((item) => String(item.pk).startsWith(`JOB#${type}#`)).map(itemToJob);

function byKey(jobs: Job[], keyOf: (job: Job) => string | undefined): Map<string, Job[]> {
  const groups = new Map<string, Job[]>();
  for (const job of jobs) {
    const key = keyOf(job);
    if (key === undefined) continue;
    groups.set(key, [...(groups.get(key) ?? []), job]);
  }
  return groups;
}

/** Each dedup key's jobs, oldest first, each made once the window of the one before had closed. */
function dedupFindings(jobs: Job[]): string[] {
  const findings: string[] = [];
  for (const [key, group] of byKey(jobs, (job) => job.dedup?.key)) {
    group.sort((a, b) => a.createdAtMs - b.createdAtMs);
    for (let i = 1; i < group.length; i++) {
      const [before, after] = [group[i - 1]!, group[i]!];
      if (after.createdAtMs < before.createdAtMs + WINDOW_S * 1000) findings.push(`${key}: ${after.id} made inside the window of ${before.id}`);
    }
  }
  return findings;
}

/**
 * Each debounce key's jobs, two by two: never did both take a fold begun after the other was first answered. The
 * key's pointer names one job at a time; once it names the newer job of the two (by then that job could be
 * answered), no fold begins that goes into the older one. Which of two is newer is not known from the outside (a
 * job's createdAtMs is taken when its enqueue began, which faults can stretch over seconds, and a claim handed
 * back unstarted leaves no history), so the check holds for either order.
 */
function debounceFindings(jobs: Job[], answers: Answer[]): string[] {
  const firstAnsweredMs = new Map<string, number>();
  const lastFoldStartedMs = new Map<string, number>();
  for (const answer of answers) {
    firstAnsweredMs.set(answer.id, Math.min(firstAnsweredMs.get(answer.id) ?? Infinity, answer.endedAtMs));
    if (!answer.created) lastFoldStartedMs.set(answer.id, Math.max(lastFoldStartedMs.get(answer.id) ?? -Infinity, answer.startedAtMs));
  }
  const foldAfter = (into: Job, other: Job) => (lastFoldStartedMs.get(into.id) ?? -Infinity) > (firstAnsweredMs.get(other.id) ?? Infinity);
  const findings: string[] = [];
  for (const [key, group] of byKey(jobs, (job) => job.debounce?.key)) {
    for (let i = 0; i < group.length; i++) {
      for (let j = i + 1; j < group.length; j++) {
        const [a, b] = [group[i]!, group[j]!];
        if (foldAfter(a, b) && foldAfter(b, a)) findings.push(`${key}: ${a.id} and ${b.id} each took a fold begun after the other was answered`);
      }
    }
  }
  return findings;
}

/** Pollers and a worker running until `signal` aborts, so enqueues race their claims; what they report goes to `errors`. */
function runQueue(pollers: QueueContext[], worker: QueueContext, handler: JobHandler, signal: AbortSignal, errors: ScenarioError[]) {
  const runs = new Set<Promise<unknown>>();
  const invoker: WorkerInvoker = {
    async invoke(batch: WorkerBatch) {
      const run = runWorkerBatch(worker, structuredClone(batch), {
        registry: { handlers: { count: handler }, retryPolicies: {} },
        worker: { id: 'w', host: 'h' },
        onError: (job, error) => errors.push({ by: 'worker', at: `${job.type}/${job.id}`, error }),
      });
      runs.add(run);
      void run.finally(() => runs.delete(run));
    },
  };
  const loops = pollers.map((ctx) => runPollerLoop(ctx, { invoker, runForMs: 600_000, signal, jobTypesRefreshMs: 1_000, onError: (error) => errors.push({ by: 'poller', error }) }));
  return async () => {
    await Promise.all(loops);
    await Promise.allSettled([...runs]);
  };
}

describe(`${ENQUEUES} dedup and debounce enqueues over ${KEYS} keys under ${FAULT_RATE * 100} % injected faults`, () => {
  let queue: TestQueue;
  beforeAll(async () => {
    queue = await createTestQueue({ clock: realClock, settings: { bucketMs: 5_000, pollIntervalMs: 50, sweepIntervalMs: 200 } });
  });
  afterAll(() => queue.drop());

  test('every accepted enqueue names a job that ends terminal; one job per dedup key and window; one debounced job collecting per key', async () => {
    const random = seededRandom(29);
    const faultyClients: DynamoClients[] = [];
    const faultCounts: FaultCounts[] = [];
    const faultyAs = (fn: QueueFunctionName): QueueContext => {
      const clients = queue.iam.dynamoClientsFor(fn, { endpoint: inject('dynamoEndpoint') });
      faultyClients.push(clients);
      faultCounts.push(injectFaults(clients.base, { rate: FAULT_RATE, random }));
      return contextWith(queue.as(fn), { db: clients.db });
    };
    const body = { target: { kind: 'handler', name: 'count' }, attempts: 10, retry: { kind: 'fixed', delay_s: 0 }, visibility_timeout_s: 1 };
    const types = new Map<string, JobType>();
    for (const name of ['deduped', 'debounced']) types.set(name, (await putJobType(queue.ctx, name, parseJobTypeDefinition(body))).jobType);

    const counter = countingHandler(5);
    const stop = new AbortController();
    const errors: ScenarioError[] = [];
    const stopped = runQueue([faultyAs('poller'), faultyAs('poller')], faultyAs('worker'), counter.handler, stop.signal, errors);
    const instances = [faultyAs('api'), faultyAs('api')];
    const answers = new Map<string, Answer[]>([['deduped', []], ['debounced', []]]);
    let contended = 0;
    // Enqueues never answered, sent SEND_TRIES times: each may have made or folded into a job, or not.
    const unanswered: { type: string; id: string }[] = [];
    const enqueueErrors: unknown[] = [];
    await Promise.all(
      Array.from({ length: LANES }, async (_, lane) => {
        for (let i = lane; i < ENQUEUES; i += LANES) {
          const type = i % 2 === 0 ? 'deduped' : 'debounced';
          const keyIndex = Math.floor(i / 2) % KEYS;
          const key = `key-${keyIndex}`;
          const keyed = type === 'deduped' ? { dedup: { key, windowS: WINDOW_S } } : { debounce: { key, ...debounceOf(keyIndex) } };
          const input: JobInput = { data: { i }, priority: 100, weight: 1, ...keyed };
          const startedAtMs = Date.now();
          for (let send = 1; send <= SEND_TRIES; send++) {
            try {
              const { job, created } = await enqueueJob(instances[lane % 2]!, types.get(type)!, `${type}-${i}`, input);
              answers.get(type)!.push({ id: job.id, key, created, startedAtMs, endedAtMs: Date.now() });
              break;
            } catch (error) {
              if (error instanceof ConflictError) {
                contended++;
                break;
              }
              enqueueErrors.push(error);
              if (send === SEND_TRIES) unanswered.push({ type, id: `${type}-${i}` });
            }
          }
          await new Promise((resolve) => setTimeout(resolve, random() * 20));
        }
      }),
    );

    const accepted = [...answers].flatMap(([type, list]) => [...new Set(list.map((answer) => answer.id))].map((id) => ({ type, id })));
    const outcome = await runUntilSettled({
      components: { pollers: [faultyAs('poller')], sweepers: [faultyAs('sweeper')], workers: faultyAs('worker') },
      registry: { handlers: { count: counter.handler }, retryPolicies: {} },
      auditor: queue.ctx,
      jobs: accepted,
      timeoutMs: 120_000,
    });
    stop.abort();
    await stopped();
    const audit = await auditJobs(queue.ctx, accepted, counter.starts, types, {
      unknown: unanswered,
      startsByAttempt: counter.byAttempt,
      errors: [...errors, ...outcome.errors],
      expectedError: isInjected,
    });
    const deduped = await jobsOfType(queue, 'deduped');
    const debounced = await jobsOfType(queue, 'debounced');
    const injected = faultCounts.reduce((sum, counts) => sum + counts.injected, 0);
    console.log('dedup and debounce under faults', {
      enqueues: ENQUEUES,
      answered: answers.get('deduped')!.length + answers.get('debounced')!.length,
      contended,
      unanswered: unanswered.length,
      unansweredLanded: audit.unknownLanded,
      jobs: { deduped: deduped.length, debounced: debounced.length },
      injected,
      settled: outcome.settled,
      errors: errors.length + outcome.errors.length,
      byStatus: audit.byStatus,
    });
    for (const clients of faultyClients) clients.base.destroy();

    expect(injected).toBeGreaterThan(0);
    expect(outcome.settled).toBe(true);
    expect(audit.findings).toEqual([]);
    // An enqueue fails only by a fault injected under it.
    expect(enqueueErrors.filter((error) => !isInjected(error))).toEqual([]);
    // Jobs whose enqueue never got an answer still ran: nothing waits forever.
    expect([...deduped, ...debounced].filter((job) => job.status !== 'succeeded').map((job) => `${job.id}: ${job.status}`)).toEqual([]);
    expect(dedupFindings(deduped)).toEqual([]);
    expect(debounceFindings(debounced, answers.get('debounced')!)).toEqual([]);
    // Every answer of a dedup enqueue names the job whose window its enqueue fell in.
    const dedupById = new Map(deduped.map((job) => [job.id, job]));
    for (const answer of answers.get('deduped')!) {
      const job = dedupById.get(answer.id);
      expect(job?.dedup?.key).toBe(answer.key);
      if (!answer.created) expect(answer.startedAtMs).toBeLessThan(job!.createdAtMs + WINDOW_S * 1000);
    }
    // Far fewer jobs than enqueues: the keys collapsed them.
    expect(deduped.length + debounced.length).toBeLessThan(ENQUEUES / 2);
  }, 300_000);
});

/** Crashes the `crashAt`-th call the client sends from now on: before it reaches DynamoDB, or after DynamoDB applied it. */
function crashOnCall(client: DynamoDBClient, crashAt: number, when: 'before' | 'after'): { crashed: () => boolean } {
  let calls = 0;
  client.middlewareStack.addRelativeTo(
    (next: FinalizeHandler<object, MetadataBearer>) => async (args: FinalizeHandlerArguments<object>) => {
      calls++;
      if (calls !== crashAt) return next(args);
      // Whatever DynamoDB answered, the process is gone before it reads the answer.
      if (when === 'after') await next(args).catch(() => undefined);
      throw Object.assign(new Error('injected: the process died'), { name: 'ProcessDied', $fault: 'client', $metadata: { httpStatusCode: 400 } });
    },
    { relation: 'after', toMiddleware: 'retryMiddleware', name: 'crashOnCall' },
  );
  return { crashed: () => calls >= crashAt };
}

describe('an enqueue that crashes between any two of its calls, then is sent again with its id', () => {
  let queue: TestQueue;
  let jobType: JobType;
  beforeAll(async () => {
    queue = await createTestQueue();
    jobType = (await putJobType(queue.ctx, 'sync', parseJobTypeDefinition({ target: { kind: 'handler', name: 'count' } }))).jobType;
  });
  afterAll(() => queue.drop());

  const inputOf = (mode: 'dedup' | 'debounce', key: string, data: number): JobInput => ({
    data,
    priority: 100,
    weight: 1,
    ...(mode === 'dedup' ? { dedup: { key, windowS: 60 } } : { debounce: { key, delayS: 30 } }),
  });

  for (const mode of ['dedup', 'debounce'] as const) {
    for (const when of ['before', 'after'] as const) {
      for (const crashing of ['first', 'second'] as const) {
        test(`${mode}: the ${crashing} enqueue of a key crashing ${when} each of its calls in turn leaves one job, holding the data it should`, async () => {
          for (let crashAt = 1; ; crashAt++) {
            const key = `${mode}-${when}-${crashing}-${crashAt}`;
            const healthy = queue.as('api');
            const clients = queue.iam.dynamoClientsFor('api', { endpoint: inject('dynamoEndpoint') });
            if (crashing === 'second') await enqueueJob(healthy, jobType, `${key}-a`, inputOf(mode, key, 1));
            const crash = crashOnCall(clients.base, crashAt, when);
            const crashed = await enqueueJob({ ...healthy, db: clients.db }, jobType, `${key}-b`, inputOf(mode, key, 2)).then(
              () => false,
              () => true,
            );
            clients.base.destroy();
            if (!crash.crashed()) break;
            expect(crashed).toBe(true);
            const again = await enqueueJob(healthy, jobType, `${key}-b`, inputOf(mode, key, 2));
            const last = await enqueueJob(healthy, jobType, `${key}-c`, inputOf(mode, key, 3));
            const jobs = (await jobsOfType(queue, 'sync')).filter((job) => (job.dedup ?? job.debounce)?.key === key);
            expect(jobs.map((job) => job.id)).toEqual([again.job.id]);
            expect(last.job.id).toBe(again.job.id);
            const expectedId = crashing === 'second' ? `${key}-a` : `${key}-b`;
            const expectedData = mode === 'debounce' ? 3 : crashing === 'second' ? 1 : 2;
            expect(await getJob(queue.ctx, 'sync', expectedId)).toMatchObject({ status: 'queued', data: expectedData });
          }
        });
      }
    }
  }
});
