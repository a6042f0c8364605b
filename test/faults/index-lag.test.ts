/**
 * The `due` index lagging its table, as AWS's eventually consistent index may:
 * entries of new and retried jobs appear late, claimed and finished ones linger
 * where they were, for pollers, workers and the sweeper alike. A mixed load (due
 * now and ahead, retried, at_least_once and at_most_once, a type limited to two
 * at a time whose counter leaks and is settled) loses nothing, starts no
 * at_most_once job twice, never runs the limited type over its concurrency, and
 * its counter comes back to what its jobs hold.
 *
 * The queue runs on a clock SPEED times faster than real time, so that the
 * cursor's safety margin and the counters' settlement waits (minutes) pass
 * within the run; the lag is measured on that clock.
 */
import { QueryCommand } from '@aws-sdk/client-dynamodb';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { expect, test } from 'vitest';
import { putJobType } from '../../lib/queue/catalog/job-types.js';
import { enqueueJob } from '../../lib/queue/enqueue/enqueue.js';
import { pollOnce } from '../../lib/queue/poll/poll.js';
import { sweepOnce } from '../../lib/queue/sweep/sweep.js';
import { createQueueContext, type QueueContext } from '../../lib/queue/context.js';
import { readInFlight } from '../../lib/store/counters.js';
import { settleWaitMs } from '../../lib/queue/limits/counter-reconcile.js';
import { DUE_INDEX, jobKey, typeCounterKey } from '../../lib/store/keys.js';
import { parseJobTypeDefinition } from '../../lib/wire/job-types.js';
import type { JobType } from '../../lib/domain/job-type.js';
import type { WorkerBatch } from '../../lib/domain/invocations.js';
import type { JobHandler } from '../../lib/queue/attempt/run-batch.js';
import type { QueueFunctionName } from '../../infra/local/aws/iam/stack-policies.js';
import { isInjected, loseAnswers, writesTo } from '../support/faults.js';
import { createTestQueue, type TestClock } from '../support/queue.js';
import { auditJobs, countStart, runUntilSettled } from '../support/scenario.js';
import { scaled } from './scale.js';

const JOBS = scaled(120, 2_000);
const SPEED = 5;
const LIMITED_CONCURRENCY = 2;
/** Real time the run may take before it counts as stuck: it settles in 50 to 80 s on a 2-core machine loaded by other work. */
const RUN_MS = 150_000;

/** A clock that runs `speed` times faster than real time, from now, and that a test may move ahead. */
function fastClock(speed: number): TestClock {
  const realStartMs = Date.now();
  let aheadMs = 0;
  return {
    nowMs: () => realStartMs + (Date.now() - realStartMs) * speed + aheadMs,
    set: () => undefined,
    advance: (ms) => {
      aheadMs += ms;
    },
  };
}

test('a job written within the lag is not seen by a poll until the lag has passed', async () => {
  const queue = await createTestQueue({ indexLagMs: 2_000 });
  try {
    const type = (await putJobType(queue.ctx, 'alo', parseJobTypeDefinition({ target: { kind: 'handler', name: 'count' } }))).jobType;
    await enqueueJob(queue.as('api'), type, 'late', { data: {}, priority: 100, weight: 1 });
    const claimed: string[] = [];
    const poll = () =>
      pollOnce(queue.as('poller'), { jobTypes: [type], invoker: { invoke: async (batch: WorkerBatch) => void claimed.push(...batch.jobs.map((job) => job.id)) }, cursors: new Map() });
    await poll();
    expect(claimed).toEqual([]);
    queue.clock.advance(2_000);
    await poll();
    expect(claimed).toEqual(['late']);
  } finally {
    await queue.drop();
  }
});

test('a query sent in DynamoDB\'s wire form, as a DynamoDBClient sends it, lags alike', async () => {
  const queue = await createTestQueue({ indexLagMs: 2_000 });
  try {
    const type = (await putJobType(queue.ctx, 'alo', parseJobTypeDefinition({ target: { kind: 'handler', name: 'count' } }))).jobType;
    await enqueueJob(queue.as('api'), type, 'late', { data: {}, priority: 100, weight: 1 });
    const { Item } = await queue.clients.db.send(new GetCommand({ TableName: queue.tableName, Key: jobKey('alo', 'late'), ConsistentRead: true }));
    const query = new QueryCommand({
      TableName: queue.tableName,
      IndexName: DUE_INDEX,
      KeyConditionExpression: 'gsi1pk = :partition',
      ExpressionAttributeValues: { ':partition': { S: String(Item?.gsi1pk) } },
    });
    expect((await queue.clientsOf('poller').base.send(query)).Items).toEqual([]);
    queue.clock.advance(2_000);
    expect((await queue.clientsOf('poller').base.send(query)).Items).toEqual([expect.objectContaining({ pk: { S: Item?.pk } })]);
  } finally {
    await queue.drop();
  }
});

for (const lagMs of [2_000, 30_000]) {
  test(`under a ${lagMs / 1_000} s index lag, ${JOBS} mixed jobs all end terminal and explained, none at_most_once started twice, the limited type within its concurrency and its counter settled`, async () => {
    const clock = fastClock(SPEED);
    const queue = await createTestQueue({ clock, indexLagMs: lagMs, settings: { pollIntervalMs: 50, sweepIntervalMs: 200 } });
    try {
      const contextOf = (fn: QueueFunctionName): QueueContext => createQueueContext(queue.as(fn).db, queue.ctx.settings, { nowMs: clock.nowMs, random: Math.random });
      const types = new Map<string, JobType>();
      for (const [name, body] of [
        ['alo', { target: { kind: 'handler', name: 'count' }, attempts: 3, retry: { kind: 'fixed', delay_s: 1 }, visibility_timeout_s: 30 }],
        ['amo', { target: { kind: 'handler', name: 'count' }, delivery_strategy: 'at_most_once', visibility_timeout_s: 30 }],
        ['lim', { target: { kind: 'handler', name: 'count' }, attempts: 3, retry: { kind: 'fixed', delay_s: 1 }, visibility_timeout_s: 30, concurrency: LIMITED_CONCURRENCY }],
      ] as const) {
        types.set(name, (await putJobType(queue.ctx, name, parseJobTypeDefinition(body))).jobType);
      }

      // Due now, and up to two minutes ahead (several buckets, so cursors move past the margin).
      const producer = contextOf('api');
      const jobs: { type: string; id: string }[] = [];
      for (let i = 0; i < JOBS; i++) {
        const type = ['alo', 'amo', 'lim'][i % 3]!;
        const id = `job-${i}`;
        const runAfterMs = clock.nowMs() + (i % 4 === 0 ? 0 : (i % 12) * 10_000);
        await enqueueJob(producer, types.get(type)!, id, { data: { i }, priority: 100, weight: 1, runAfterMs });
        jobs.push({ type, id });
      }

      const counter = { starts: new Map<string, number>(), byAttempt: new Map<string, Map<number, number>>() };
      let limitedRunning = 0;
      let limitedMostRunning = 0;
      const handler: JobHandler = async (data, { job }) => {
        countStart(counter, job);
        if (job.type === 'lim') limitedMostRunning = Math.max(limitedMostRunning, ++limitedRunning);
        try {
          await new Promise((resolve) => setTimeout(resolve, 5 + Math.random() * 20));
          // Every fifth job fails its first attempt, so retries are written and claimed again.
          if ((data as { i: number }).i % 5 === 0 && job.attempt === 1) throw new Error('failing on purpose');
          return 'done';
        } finally {
          if (job.type === 'lim') limitedRunning--;
        }
      };

      // The pollers' first counter write lands with its answer lost: tried again, it leaks weight into the counter,
      // which the sweeper's settlement gives back while the limited type keeps its slots busy.
      const leaks = loseAnswers(queue.clientsOf('poller').base, writesTo(typeCounterKey('lim').pk), 1);
      const sweeper = contextOf('sweeper');
      const outcome = await runUntilSettled({
        components: { pollers: [contextOf('poller'), contextOf('poller')], sweepers: [sweeper], workers: contextOf('worker') },
        registry: { handlers: { count: handler }, retryPolicies: {} },
        auditor: queue.ctx,
        jobs,
        timeoutMs: RUN_MS,
        pollerRunForMs: RUN_MS * SPEED,
      });
      // The one fault injected (a lost answer) is retried by the SDK; should it surface, it is the only error expected.
      const audit = await auditJobs(queue.ctx, jobs, counter.starts, types, { startsByAttempt: counter.byAttempt, errors: outcome.errors, expectedError: isInjected });

      // Every job ended: once the sweeper has handed the counter over and settled it, it holds nothing.
      for (let sweep = 0; sweep < 5; sweep++) {
        clock.advance(settleWaitMs(queue.ctx.settings));
        await sweepOnce(sweeper, { customPolicies: {} });
      }
      const counted = (await readInFlight(queue.ctx, 'lim', [])).type;
      const corrected = queue.iam.indexJournal()?.corrected;
      const { errors: _errors, ...counts } = outcome;
      console.log(`index lag ${lagMs} ms`, { jobs: jobs.length, leaks: leaks.lost, ...counts, byStatus: audit.byStatus, limitedMostRunning, counted, corrected });

      // The lag was met: index answers held entries back and served past ones in their place.
      expect(corrected?.heldBack).toBeGreaterThan(0);
      expect(corrected?.servedFromPast).toBeGreaterThan(0);
      expect(audit.findings).toEqual([]);
      expect(outcome.settled).toBe(true);
      expect(limitedMostRunning).toBeLessThanOrEqual(LIMITED_CONCURRENCY);
      expect(counted).toBe(0);
    } finally {
      await queue.drop();
    }
  }, RUN_MS + 60_000);
}
