/**
 * The lane entry writer (lib/queue/lanes/bucket-directory.ts) asks no one to be awake: on the path of an enqueue,
 * a claim, a renewal, a retry and an end, the only calls are the writes of the job's own items (the job, its
 * bucket's record, its group's start record) and the reads those paths make of the job and its type; never a wake
 * item, never a wake. The waker finds each entry from the table's stream once written.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { expect, test } from 'vitest';
import { guardOf } from '../../../../../lib/domain/attempts.js';
import { extendClaim } from '../../../../../lib/queue/attempt/renew-claim.js';
import { runWorkerBatch } from '../../../../../lib/queue/attempt/run-batch.js';
import { T0, WORKER, defineType, enqueue, freshQueuePerTest, poll, RecordingInvoker, RecordingWaker } from '../../../../support/lib-fixtures.js';

const waker = new RecordingWaker();
const queue = freshQueuePerTest({ waker });

/** Every call `client` sends, as `<command> <partition key prefix>`. */
function recordCalls(client: DynamoDBClient): string[] {
  const calls: string[] = [];
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const input = JSON.stringify(args.input);
      const prefixes = [...input.matchAll(/"pk":(?:\{"S":)?"([A-Z]+)#/g)].map((match) => match[1]);
      calls.push(`${String(context.commandName).replace(/Command$/, '')} ${[...new Set(prefixes)].sort().join(',') || '-'}`);
      return next(args);
    },
    { step: 'initialize', name: 'recordCalls' },
  );
  return calls;
}

const touchesWake = (calls: string[]): string[] => calls.filter((call) => call.includes('WAKE'));

test('an enqueue, a claim, a renewal, a retry and an end touch no wake item and wake no one', async () => {
  const { ctx, as, clientsOf, clock } = queue();
  const jobType = await defineType(ctx, 'paths', { attempts: 2, retry: { kind: 'fixed', delay_s: 0 } });
  const calls = Object.fromEntries((['api', 'poller', 'worker'] as const).map((fn) => [fn, recordCalls(clientsOf(fn).base)]));
  waker.requests.length = 0;

  await enqueue(as('api'), jobType, 'j1');
  const invoker = new RecordingInvoker();
  expect(await poll(ctx, [jobType], invoker)).toMatchObject({ claimed: 1 });
  const claimed = invoker.jobs[0]!;
  expect(await extendClaim(as('worker'), guardOf(claimed), T0 + 60_000)).toBeDefined();
  let runs = 0;
  const registry = { handlers: { paths: () => (++runs === 1 ? Promise.reject(new Error('first attempt fails')) : 'done') }, retryPolicies: {} };
  await runWorkerBatch(as('worker'), invoker.batches[0]!, { registry, worker: WORKER });
  clock.advance(1_000);
  const again = new RecordingInvoker();
  expect(await poll(ctx, [jobType], again)).toMatchObject({ claimed: 1 });
  await runWorkerBatch(as('worker'), again.batches[0]!, { registry, worker: WORKER });

  expect(runs).toBe(2);
  expect(waker.requests).toEqual([]);
  expect({ api: touchesWake(calls.api!), poller: touchesWake(calls.poller!), worker: touchesWake(calls.worker!) }).toEqual({ api: [], poller: [], worker: [] });
  // The writes are the job's own items: the job, its bucket's record (DIR), its group's start record (START).
  const writes = Object.values(calls).flat().filter((call) => /^(Put|Update|Delete|TransactWrite)/.test(call));
  expect(new Set(writes.flatMap((call) => call.split(' ')[1]!.split(',')))).toEqual(new Set(['JOB', 'DIR', 'START']));
});
