/**
 * Lambda's async queue at its worst: every worker batch delivered twice, a share of them throttled and handed
 * over long after their claims lapsed. The real pollers, worker and sweeper run against DynamoDB Local through
 * the local runtime's invoker; nothing is lost, no at_most_once job starts twice, and no job fails without
 * its handler having run.
 */
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createLocalAsyncInvoker } from '../../infra/local/aws/limits.js';
import { putJobType } from '../../lib/queue/catalog/job-types.js';
import { enqueueJob } from '../../lib/queue/enqueue/enqueue.js';
import { runPollerLoop } from '../../lib/queue/poll/poller-loop.js';
import { sweepOnce } from '../../lib/queue/sweep/sweep.js';
import { runWorkerBatch, type BatchResult } from '../../lib/queue/attempt/run-batch.js';
import { abortableSleep } from '../../lib/domain/sleep.js';
import { parseJobTypeDefinition } from '../../lib/wire/job-types.js';
import type { JobType } from '../../lib/domain/job-type.js';
import { seededRandom } from '../support/faults.js';
import { createTestQueue, realClock, type TestQueue } from '../support/queue.js';
import { auditJobs, contextWith, countingHandler, waitUntilTerminal, type ScenarioError } from '../support/scenario.js';
import { eventually } from '../support/eventually.js';
import { scaled } from './scale.js';

const JOBS = scaled(100, 2_000);
const VISIBILITY_TIMEOUT_S = 1;
/** Every batch reaches the worker this late, and again as a duplicate. */
const DELIVERY_DELAY_MS = 100;
/** A throttled batch arrives this much later still: well past its claims, which the sweeper has taken back by then. */
const THROTTLE_DELAY_MS = 2_500;
const THROTTLED_PERCENT = 40;

let queue: TestQueue;

beforeAll(async () => {
  queue = await createTestQueue({ clock: realClock, settings: { bucketMs: 5_000, pollIntervalMs: 50, sweepIntervalMs: 200 } });
});
afterAll(() => queue.drop());

test(`${JOBS} jobs whose worker batches come twice, ${THROTTLED_PERCENT} % of them after their claims lapsed: none lost, none failed unrun, none run twice in one attempt`, async () => {
  const types = new Map<string, JobType>();
  for (const [name, body] of [
    ['alo', { target: { kind: 'handler', name: 'count' }, attempts: 2, retry: { kind: 'fixed', delay_s: 0 }, visibility_timeout_s: VISIBILITY_TIMEOUT_S }],
    ['amo', { target: { kind: 'handler', name: 'count' }, delivery_strategy: 'at_most_once', visibility_timeout_s: VISIBILITY_TIMEOUT_S }],
  ] as const) {
    types.set(name, (await putJobType(queue.ctx, name, parseJobTypeDefinition(body))).jobType);
  }
  const jobs = Array.from({ length: JOBS }, (_, i) => ({ type: i % 2 === 0 ? 'alo' : 'amo', id: `job-${i}` }));
  for (const [i, { type, id }] of jobs.entries()) {
    await enqueueJob(queue.ctx, types.get(type)!, id, { data: { i }, priority: 100, weight: 1, runAfterMs: Date.now() + (i % 20) * 100 });
  }

  const counter = countingHandler();
  const outcomes: BatchResult[] = [];
  /** What the worker, the pollers and the sweeper report: none is injected here, so the audit refuses each. */
  const errors: ScenarioError[] = [];
  const invokeErrors: unknown[] = [];
  const stop = new AbortController();
  const inFlight = new Set<Promise<unknown>>();
  const workers = queue.as('worker');
  const invoker = createLocalAsyncInvoker(
    async (batch) => {
      outcomes.push(
        await runWorkerBatch(workers, batch, {
          registry: { handlers: { count: counter.handler }, retryPolicies: {} },
          worker: { id: 'late-worker', host: 'localhost' },
          onError: (job, error) => errors.push({ by: 'worker', at: `${job.type}/${job.id}`, error }),
        }),
      );
    },
    {
      delivery: { delayMs: DELIVERY_DELAY_MS, duplicate: true, throttledPercent: THROTTLED_PERCENT, throttleDelayMs: THROTTLE_DELAY_MS },
      inFlight,
      signal: stop.signal,
      onError: (error) => invokeErrors.push(error),
      random: seededRandom(7),
    },
  );
  const loops = [
    ...[0, 1].map(() => runPollerLoop(contextWith(queue.as('poller'), {}), {
        invoker,
        runForMs: 120_000,
        signal: stop.signal,
        jobTypesRefreshMs: 1_000,
        onError: (error) => errors.push({ by: 'poller', error }),
      }),
    ),
    (async () => {
      while (!stop.signal.aborted) {
        await sweepOnce(queue.as('sweeper'), {
          customPolicies: {},
          onError: (failure, error) => errors.push({ by: 'sweeper', at: JSON.stringify(failure), error }),
        }).catch((error: unknown) => errors.push({ by: 'sweeper', error }));
        await abortableSleep(200, stop.signal);
      }
    })(),
  ];

  const startedAtMs = Date.now();
  const open = await waitUntilTerminal(queue.ctx, jobs, 90_000);
  // The last throttled batches, still on their way, arrive and find their claims gone.
  await eventually(async () => inFlight.size, (deliveries) => deliveries === 0, THROTTLE_DELAY_MS + 30_000);
  stop.abort();
  await Promise.all(loops);
  await Promise.allSettled([...inFlight]);

  // The audit holds what this test is about: no job failed without its handler having run (a start recorded
  // whose answer was lost counts as a run: at_most_once may not run the job again), no attempt run twice, no
  // more runs than attempts (a batch delivered twice runs a job once).
  const audit = await auditJobs(queue.ctx, jobs, counter.starts, types, { startsByAttempt: counter.byAttempt, errors });
  const total = (key: keyof BatchResult) => outcomes.reduce((sum, outcome) => sum + outcome[key], 0);
  const late = { claimLapsed: total('claim_lapsed'), alreadyStarted: total('already_started'), stale: total('stale') };
  console.log('late and duplicated delivery', {
    jobs: JOBS,
    elapsedMs: Date.now() - startedAtMs,
    batches: outcomes.length,
    ...late,
    errors: errors.length,
    byStatus: audit.byStatus,
  });

  expect(open).toBe(0);
  expect(audit.findings).toEqual([]);
  expect(invokeErrors).toEqual([]);
  // The faults really happened: duplicates that found their job started, late batches that found their claim gone.
  expect(late.alreadyStarted).toBeGreaterThan(0);
  expect(late.claimLapsed).toBeGreaterThan(0);
  expect(audit.byStatus.succeeded).toBeGreaterThan(0);
}, 150_000);
