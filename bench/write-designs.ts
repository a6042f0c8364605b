/**
 * write-designs: what a job's writes cost in three designs of the claim, measured on DynamoDB Local's capacity
 * reports (which follow DynamoDB's rules: a write of an item under 1 KB is a unit, its index entry put, removed or
 * with a projected attribute changed is a unit more, moved two). Each design runs the same real job items (made by
 * the queue's own enqueue) through its claim, start and finish writes, batches of `group` jobs sharing one start:
 *
 * - `move` (what the queue does): the claim moves the job's index entry from its type's lane to the claim lane,
 *   where the sweeper finds it by when the claim lapses; the finish removes it.
 * - `in place`: the claim leaves the entry in its type's lane and changes its projected status (and claim time);
 *   the finish removes it. Pollers then read past running jobs' entries on every poll, and the sweeper finds lapsed
 *   claims only by reading every running entry: `readsPastRunning` measures one such walk of a lane's partition.
 * - `group`: the claim removes the entry; a group record with an index entry of its own, put before the claims,
 *   is what the sweeper finds when the group's claims lapse; it then reads the group's jobs and deletes the record.
 *   The start record is that same item. The finish has no entry to touch.
 *
 * docs/performance.md ("Cheaper per job") says what was adopted and why.
 */
import { randomUUID } from 'node:crypto';
import { BatchGetCommand, DeleteCommand, PutCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { createQueueContext } from '../lib/queue/context.js';
import { type QueueSettings } from '../lib/queue/settings.js';
import { enqueueJob } from '../lib/queue/enqueue/enqueue.js';
import { putJobType } from '../lib/queue/catalog/job-types.js';
import { createDynamoClients } from '../lib/store/client.js';
import { claimParams } from '../lib/store/job-writes.js';
import { claimIndexKeys, DUE_INDEX, jobKey, queuedIndexKeys, startRecordKey } from '../lib/store/keys.js';
import type { UpdateParams } from '../lib/store/send.js';
import { ensureTable } from '../lib/store/table.js';
import { parseJobTypeDefinition } from '../lib/wire/job-types.js';
import { trackConsumedCapacity, type CapacityTotals } from '../infra/local/aws/capacity-meter.js';
import { fmt } from './stats.js';

export const WRITE_DESIGNS = ['move', 'in place', 'group'] as const;
export type WriteDesign = (typeof WRITE_DESIGNS)[number];
/** Jobs sharing a start record (a poll's batch for one worker): one at a trickle, up to the worker batch size. */
export const GROUP_SIZES = [1, 3, 16] as const;
/** Running jobs in one lane partition when a poll or sweep reads past them, in the `in place` design. */
export const RUNNING_PER_PARTITION = [100, 1_000, 10_000] as const;
const GROUPS_PER_RUN = 20;
const VISIBILITY_TIMEOUT_MS = 300_000;
const TYPE = 'designs';

export interface WriteDesignResult {
  design: WriteDesign;
  group: number;
  jobs: number;
  /** Capacity per job, by phase. */
  writeUnits: { enqueue: number; claim: number; start: number; finish: number; sweep: number; total: number };
  readUnits: number;
}

export interface ReadsPastRunning {
  running: number;
  /** One walk of the partition's due entries, every running entry read past: what each poll of it costs. */
  readUnitsPerWalk: number;
  pages: number;
}

/** What the calls inside `run` consumed, from the client's running totals. */
async function consumedBy(totals: CapacityTotals, run: () => Promise<unknown>): Promise<{ writeUnits: number; readUnits: number }> {
  const before = { writeUnits: totals.writeUnits, readUnits: totals.readUnits };
  await run();
  return { writeUnits: totals.writeUnits - before.writeUnits, readUnits: totals.readUnits - before.readUnits };
}

async function freshTable(endpoint: string, settings: Omit<QueueSettings, 'tableName'>) {
  const tableName = `designs-${randomUUID().slice(0, 8)}`;
  const clients = createDynamoClients({ endpoint });
  await ensureTable(clients.base, tableName);
  const ctx = createQueueContext(clients.db, { ...settings, tableName });
  const { jobType } = await putJobType(ctx, TYPE, parseJobTypeDefinition({ target: { kind: 'handler', name: 'bench_noop' } }));
  const totals = trackConsumedCapacity(clients.base);
  const send = (command: PutCommand | UpdateCommand | DeleteCommand | BatchGetCommand | QueryCommand) => clients.db.send(command as never);
  return { tableName, ctx, jobType, send, clients, totals };
}

const historyEntry = (nowMs: number) => ({ attempt: 1, startedAtMs: nowMs, endedAtMs: nowMs + 5, outcome: 'succeeded', worker: { id: 'worker-1', host: 'localhost' } });

/** The finish as the worker writes it for a success: status, times, TTL and the attempt's history entry. */
function finishCommand(tableName: string, id: string, nowMs: number, removeEntry: boolean): UpdateCommand {
  return new UpdateCommand({
    TableName: tableName,
    Key: jobKey(TYPE, id),
    ConditionExpression: '#status = :running',
    UpdateExpression: `SET #status = :done, finishedAtMs = :now, updatedAtMs = :now, purgeAtS = :purge, history = list_append(if_not_exists(history, :empty), :entry)${removeEntry ? ' REMOVE gsi1pk, gsi1sk' : ''}`,
    ExpressionAttributeNames: { '#status': 'status' },
    ExpressionAttributeValues: { ':running': 'running', ':done': 'succeeded', ':now': nowMs, ':purge': Math.floor(nowMs / 1000) + 86_400, ':empty': [], ':entry': [historyEntry(nowMs)] },
  });
}

/** Runs GROUPS_PER_RUN groups of `group` jobs through `design`'s writes, on a table of their own. */
export async function measureWriteDesign(endpoint: string, settings: Omit<QueueSettings, 'tableName'>, design: WriteDesign, group: number): Promise<WriteDesignResult> {
  const { tableName, ctx, jobType, send, clients, totals } = await freshTable(endpoint, settings);
  const units = { enqueue: 0, claim: 0, start: 0, finish: 0, sweep: 0 };
  let readUnits = 0;
  for (let g = 0; g < GROUPS_PER_RUN; g++) {
    const ids = Array.from({ length: group }, (_, at) => `job-${g}-${at}`);
    const runAfterMsOf = new Map<string, number>();
    units.enqueue += (
      await consumedBy(totals, async () => {
        for (const id of ids) runAfterMsOf.set(id, (await enqueueJob(ctx, jobType, id, { data: { orderId: id, amountCents: 1234 }, priority: 0, weight: 1 })).job.runAfterMs);
      })
    ).writeUnits;
    const nowMs = Date.now();
    const claimedUntilMs = nowMs + VISIBILITY_TIMEOUT_MS;
    const groupId = randomUUID();
    // 'in place' keeps the entry where the enqueue put it; 'group' drops it below.
    const indexAfterClaim = (id: string) => {
      const runAfterMs = runAfterMsOf.get(id) ?? nowMs;
      return design === 'move' ? claimIndexKeys(settings, { type: TYPE, id }, claimedUntilMs) : queuedIndexKeys(settings, { type: TYPE, id }, runAfterMs, runAfterMs);
    };
    units.claim += (
      await consumedBy(totals, async () => {
        if (design === 'group') {
          await send(new PutCommand({
            TableName: tableName,
            Item: { ...startRecordKey(groupId), gsi1pk: `G#${Math.floor(claimedUntilMs / settings.bucketMs)}#0`, gsi1sk: `${claimedUntilMs}#${groupId}`, members: ids.map((id) => `${TYPE}#${id}`) },
          }));
        }
        for (const [seat, id] of ids.entries()) {
          const params = claimParams({ type: TYPE, id }, { claimToken: `${groupId}.${seat}`, nowMs, claimedUntilMs, index: indexAfterClaim(id) });
          await send(new UpdateCommand({ ...(design === 'group' ? withoutIndexEntry(params) : params), TableName: tableName }));
        }
      })
    ).writeUnits;
    const seats = Object.fromEntries(ids.map((_, seat) => [`:s${seat}`, 'w1']));
    units.start += (
      await consumedBy(totals, () =>
        send(new UpdateCommand({
          TableName: tableName,
          Key: startRecordKey(groupId),
          UpdateExpression: `SET ${ids.map((_, seat) => `s${seat} = :s${seat}`).join(', ')}, w1 = :worker`,
          ExpressionAttributeValues: { ...seats, ':worker': { atMs: nowMs, worker: 'worker-1' } },
        })),
      )
    ).writeUnits;
    units.finish += (
      await consumedBy(totals, async () => {
        for (const id of ids) await send(finishCommand(tableName, id, nowMs + 5, design !== 'group'));
      })
    ).writeUnits;
    if (design === 'group') {
      // The group's claims lapsed: the sweeper reads its jobs (all finished, as nearly always) and drops the record.
      const swept = await consumedBy(totals, async () => {
        await send(new BatchGetCommand({ RequestItems: { [tableName]: { Keys: ids.map((id) => jobKey(TYPE, id)), ProjectionExpression: 'pk, #status, claimToken', ExpressionAttributeNames: { '#status': 'status' } } } }));
        await send(new DeleteCommand({ TableName: tableName, Key: startRecordKey(groupId) }));
      });
      readUnits += swept.readUnits;
      units.sweep += swept.writeUnits;
    }
  }
  clients.base.destroy();
  const jobs = GROUPS_PER_RUN * group;
  const perJob = Object.fromEntries(Object.entries(units).map(([phase, total]) => [phase, total / jobs])) as Omit<WriteDesignResult['writeUnits'], 'total'>;
  const total = Object.values(perJob).reduce((sum, value) => sum + value, 0);
  return { design, group, jobs, writeUnits: { ...perJob, total }, readUnits: readUnits / jobs };
}

/** The queue's claim, except that it removes the job's index entry instead of moving it (the `group` design). */
function withoutIndexEntry(params: UpdateParams): UpdateParams {
  const { ':gsi1pk': _pk, ':gsi1sk': _sk, ...values } = params.ExpressionAttributeValues ?? {};
  const update = (params.UpdateExpression ?? '').replace(', gsi1pk = :gsi1pk, gsi1sk = :gsi1sk', '').replace('REMOVE ', 'REMOVE gsi1pk, gsi1sk, ');
  return { ...params, UpdateExpression: update, ExpressionAttributeValues: values };
}

/** One walk of a lane partition holding `running` claimed entries and nothing queued, as a poll of it would read. */
export async function measureReadsPastRunning(endpoint: string, settings: Omit<QueueSettings, 'tableName'>, running: number): Promise<ReadsPastRunning> {
  const { tableName, send, clients, totals } = await freshTable(endpoint, settings);
  const nowMs = Date.now();
  const partition = queuedIndexKeys(settings, { type: TYPE, id: 'x' }, nowMs, nowMs).gsi1pk;
  const puts: Promise<unknown>[] = [];
  for (let at = 0; at < running; at++) {
    const id = `running-${at}`;
    puts.push(send(new PutCommand({ TableName: tableName, Item: { ...jobKey(TYPE, id), gsi1pk: partition, gsi1sk: `${nowMs - 1_000}#${id}`, status: 'running', type: TYPE, priority: 0, weight: 1 } })));
    if (puts.length >= 50) await Promise.all(puts.splice(0));
  }
  await Promise.all(puts);
  let pages = 0;
  const walk = await consumedBy(totals, async () => {
    let startKey: Record<string, unknown> | undefined;
    do {
      const page = await clients.db.send(new QueryCommand({
        TableName: tableName,
        IndexName: DUE_INDEX,
        KeyConditionExpression: 'gsi1pk = :pk AND gsi1sk <= :now',
        FilterExpression: '#status = :queued',
        ExpressionAttributeNames: { '#status': 'status' },
        ExpressionAttributeValues: { ':pk': partition, ':now': `${nowMs}#~`, ':queued': 'queued' },
        Limit: settings.claimPageSize,
        ...(startKey ? { ExclusiveStartKey: startKey } : {}),
      }));
      pages++;
      startKey = page.LastEvaluatedKey;
    } while (startKey);
  });
  clients.base.destroy();
  return { running, readUnitsPerWalk: walk.readUnits, pages };
}

export async function runWriteDesigns(endpoint: string, settings: Omit<QueueSettings, 'tableName'>): Promise<{ designs: WriteDesignResult[]; readsPastRunning: ReadsPastRunning[] }> {
  const designs: WriteDesignResult[] = [];
  for (const group of GROUP_SIZES) for (const design of WRITE_DESIGNS) designs.push(await measureWriteDesign(endpoint, settings, design, group));
  const readsPastRunning: ReadsPastRunning[] = [];
  for (const running of RUNNING_PER_PARTITION) readsPastRunning.push(await measureReadsPastRunning(endpoint, settings, running));
  return { designs, readsPastRunning };
}

export function writeDesignsTables(result: { designs: WriteDesignResult[]; readsPastRunning: ReadsPastRunning[] }, table: (headers: string[], rows: string[][]) => string): string {
  const designs = table(
    ['design', 'jobs a start', 'enqueue', 'claim', 'start', 'finish', 'sweep', 'WRU/job', 'RRU/job'],
    result.designs.map((r) => [r.design, String(r.group), ...(['enqueue', 'claim', 'start', 'finish', 'sweep', 'total'] as const).map((phase) => fmt(r.writeUnits[phase], 2)), fmt(r.readUnits, 2)]),
  );
  const reads = table(
    ['running entries in the partition', 'RRU a walk', 'pages'],
    result.readsPastRunning.map((r) => [String(r.running), fmt(r.readUnitsPerWalk, 1), String(r.pages)]),
  );
  return `write units per job by design and phase (DynamoDB Local's capacity reports)\n${designs}\n\n'in place': what a poll (or a sweep) reads past running jobs' entries in one lane partition\n${reads}`;
}
