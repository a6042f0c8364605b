/**
 * The reference for the HTTP workloads: the simplest queue one could build on
 * the same DynamoDB Local, in one process. A job is one item keyed by its due
 * time; a loop queries what is due, claims each with a conditional update,
 * "runs" it (records the start) and deletes it. No HTTP, no authorizer, no
 * index lanes, no history, no retries: what the engine does when nothing
 * stands between a producer and it. If this meets a target on this machine
 * in the same run, the machine is not what misses it.
 */
import { DeleteCommand, PutCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import pLimit from 'p-limit';
import { createDynamoClients } from '../lib/store/client.js';
import { ensureTable } from '../lib/store/table.js';
import { summariseLag, type LagSummary } from './stats.js';
import { benchTableName } from './system.js';
import { payloadOf, progressLine } from './workloads.js';

export interface NaiveQueueResult {
  workload: string;
  n: number;
  enqueueJobsPerS: number;
  drainJobsPerS: number;
  lagMs: LagSummary;
  duplicates: number;
  lost: number;
}

export interface NaiveQueueSpec {
  name: string;
  n: number;
  /** Puts in flight. */
  concurrency: number;
  /** Due time of job `index` from the start; undefined: due at once. */
  dueOffsetMs?: (index: number) => number;
  firstDueOffsetMs: number;
}

const PARTITION = 'naive';
const PAGE = 100;
const CLAIMS_IN_FLIGHT = 16;
const IDLE_POLL_MS = 20;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const sortKey = (dueMs: number, id: string) => `${String(dueMs).padStart(15, '0')}#${id}`;

export async function runNaiveQueue(endpoint: string, spec: NaiveQueueSpec, label: string, deadlineMs: number): Promise<NaiveQueueResult> {
  const clients = createDynamoClients({ endpoint });
  const tableName = benchTableName('naive');
  await ensureTable(clients.base, tableName);
  const { db } = clients;
  const startsMs = new Map<string, number[]>();
  const dueAtMs = new Map<string, number>();
  let enqueued = 0;
  let stopped = false;
  const stopProgress = progressLine(() => `${label}: enqueued ${enqueued}/${spec.n}, started ${startsMs.size}`);

  const claimAndRun = async (item: Record<string, unknown>): Promise<void> => {
    const key = { pk: PARTITION, sk: item.sk as string };
    try {
      await db.send(new UpdateCommand({ TableName: tableName, Key: key, UpdateExpression: 'SET claimed = :true', ConditionExpression: 'attribute_exists(pk) AND attribute_not_exists(claimed)', ExpressionAttributeValues: { ':true': true } }));
    } catch {
      return;
    }
    const id = item.id as string;
    startsMs.set(id, [...(startsMs.get(id) ?? []), Date.now()]);
    await db.send(new DeleteCommand({ TableName: tableName, Key: key }));
  };
  const poll = async (): Promise<void> => {
    const claims = pLimit(CLAIMS_IN_FLIGHT);
    while (!stopped) {
      const { Items = [] } = await db.send(
        new QueryCommand({ TableName: tableName, KeyConditionExpression: 'pk = :pk AND sk <= :now', ExpressionAttributeValues: { ':pk': PARTITION, ':now': sortKey(Date.now(), '~') }, Limit: PAGE }),
      );
      const unclaimed = Items.filter((item) => item.claimed !== true);
      await Promise.all(unclaimed.map((item) => claims(() => claimAndRun(item))));
      if (Items.length < PAGE) await sleep(IDLE_POLL_MS);
    }
  };

  try {
    const poller = poll();
    const startMs = Date.now();
    const puts = pLimit(spec.concurrency);
    await Promise.all(
      Array.from({ length: spec.n }, (_, index) =>
        puts(async () => {
          const id = `n-${index}`;
          const dueMs = startMs + (spec.dueOffsetMs?.(index) ?? 0);
          const queuedDueMs = spec.dueOffsetMs ? dueMs : Date.now();
          dueAtMs.set(id, queuedDueMs);
          await db.send(
            new PutCommand({ TableName: tableName, Item: { pk: PARTITION, sk: sortKey(queuedDueMs, id), id, data: payloadOf(index) }, ConditionExpression: 'attribute_not_exists(pk)' }),
          );
          enqueued++;
        }),
      ),
    );
    const enqueueEndMs = Date.now();
    const lastDueMs = Math.max(enqueueEndMs, ...dueAtMs.values());
    while (startsMs.size < spec.n && Date.now() < lastDueMs + deadlineMs) await sleep(20);
    stopped = true;
    await poller;
    const firstStarts = [...startsMs].map(([id, starts]) => ({ id, startMs: starts[0] as number }));
    const endMs = Math.max(0, ...firstStarts.map(({ startMs: at }) => at));
    return {
      workload: spec.name,
      n: spec.n,
      enqueueJobsPerS: (spec.n * 1_000) / (enqueueEndMs - startMs),
      drainJobsPerS: (spec.n * 1_000) / Math.max(1, endMs - (startMs + spec.firstDueOffsetMs)),
      lagMs: summariseLag(firstStarts.map(({ id, startMs: at }) => at - (dueAtMs.get(id) ?? at))),
      duplicates: [...startsMs.values()].reduce((sum, starts) => sum + starts.length - 1, 0),
      lost: spec.n - startsMs.size,
    };
  } finally {
    stopped = true;
    stopProgress();
    clients.base.destroy();
  }
}
