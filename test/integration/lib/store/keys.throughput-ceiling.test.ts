/**
 * The throughput ceiling, by arithmetic from measured writes. A mix of three job types runs from
 * enqueue through claim to success, with a retry, and every write is attributed to the partitions it lands in
 * (test/support/partition-writes.ts). DynamoDB serves at most 1 000 write units a second per partition
 * (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/warm-throughput-scenarios.html) and, by
 * default, 40 000 write request units a second per on-demand table
 * (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ServiceQuotas.html). From the units each
 * job writes into the hottest partition of each family of partitions, and how many partitions of the family
 * share the load (a lane's shards), follow the jobs a second each family allows: a type's ceiling is the least
 * over the families its jobs write, the deployment's the least over those every type shares, and the quota.
 * No wall clock is involved: DynamoDB Local does not throttle, and the figures are units per job.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { putJobType } from '../../../../lib/queue/catalog/job-types.js';
import { enqueueJob } from '../../../../lib/queue/enqueue/enqueue.js';
import { getJob } from '../../../../lib/queue/read-job.js';
import { parseJobTypeDefinition } from '../../../../lib/wire/job-types.js';
import type { JobType } from '../../../../lib/domain/job-type.js';
import { pollOnce } from '../../../../lib/queue/poll/poll.js';
import type { WorkerBatch } from '../../../../lib/domain/invocations.js';
import { runWorkerBatch } from '../../../../lib/queue/attempt/run-batch.js';
import type { JobHandler } from '../../../../lib/queue/attempt/run-batch.js';
import { createTestQueue, type TestQueue } from '../../../support/queue.js';
import { recordPartitionWrites, type PartitionWrite } from '../../../support/partition-writes.js';

/** What one partition serves (write units a second), and what an on-demand table serves by default. */
const PARTITION_WRITE_UNITS_PER_S = 1_000;
const TABLE_WRITE_UNITS_PER_S = 40_000;

/** The settings the README names for the ceiling: the default SHARDS, and claim-lane shards of their own. */
const SETTINGS = { shards: 4, claimShards: 16 };

const RETRY_DELAY_S = 10;
/** Every fourth job of `limited` fails its first attempt and is retried. */
const failsFirst = (i: number): boolean => i % 4 === 0;

const MIX = [
  { name: 'plain', jobs: 200, body: {} },
  { name: 'limited', jobs: 100, body: { concurrency: 1_000, attempts: 3, retry: { kind: 'fixed', delay_s: RETRY_DELAY_S } } },
  { name: 'tagged', jobs: 100, body: { concurrency: 1_000, throttle: { limits: { east: { share: 0.5 }, west: { share: 0.5 } } } } },
] as const;
const TYPES = MIX.map((entry) => entry.name);
const ALL_JOBS = MIX.reduce((sum, entry) => sum + entry.jobs, 0);

let queue: TestQueue;
const writes: PartitionWrite[] = [];

const handlers: Record<string, JobHandler> = {
  plain: (data) => data,
  tagged: (data) => data,
  limited: (data, context) => {
    if (failsFirst((data as { i: number }).i) && context.job.attempt === 1) throw new Error('fails its first attempt');
    return data;
  },
};

/** Polls every type until nothing more is due, then runs the batches through the real worker. */
async function drain(jobTypes: JobType[]): Promise<void> {
  const batches: WorkerBatch[] = [];
  const invoker = { invoke: async (batch: WorkerBatch) => void batches.push(batch) };
  const cursors = new Map();
  while ((await pollOnce(queue.as('poller'), { jobTypes, invoker, cursors })).claimed > 0);
  for (const batch of batches) await runWorkerBatch(queue.as('worker'), batch, { registry: { handlers, retryPolicies: {} }, worker: { id: 'w', host: 'h' } });
}

beforeAll(async () => {
  queue = await createTestQueue({ settings: SETTINGS });
  for (const fn of ['api', 'poller', 'worker'] as const) recordPartitionWrites(queue.clientsOf(fn).base, queue.clients.base, queue.tableName, writes);
  const jobTypes: JobType[] = [];
  for (const { name, body } of MIX) {
    jobTypes.push((await putJobType(queue.ctx, name, parseJobTypeDefinition({ target: { kind: 'handler', name }, ...body }))).jobType);
  }
  writes.length = 0;
  for (const [t, { name, jobs }] of MIX.entries()) {
    for (let i = 0; i < jobs; i++) {
      await enqueueJob(queue.as('api'), jobTypes[t]!, `job-${i}`, {
        data: { i, text: 'x'.repeat(150) },
        priority: 100,
        weight: 1,
        ...(name === 'tagged' ? { tags: ['red', i % 2 === 0 ? 'even' : 'odd'], throttleKey: i % 2 === 0 ? 'east' : 'west' } : {}),
      });
    }
  }
  // Everything happens inside one bucket of the clock, retries too: the partitions of one bucket carry it all.
  await drain(jobTypes);
  queue.clock.advance(RETRY_DELAY_S * 1_000);
  await drain(jobTypes);
  for (const { name, jobs } of MIX) {
    for (let i = 0; i < jobs; i++) expect((await getJob(queue.ctx, name, `job-${i}`))?.status).toBe('succeeded');
  }
}, 120_000);
afterAll(() => queue.drop());

/** A family of partitions: the index or table, and the first segment of the key (`Q`, `C`, `JOB`, `TYPE`, ...). */
const familyOf = (write: PartitionWrite): string => `${write.index}:${write.partition.split('#')[0]}`;

/**
 * Where a family's keys hold the shard a job hashes to (the rest names the type, bucket, status or tag): its
 * partitions that differ only there take a type's load (every type's, for the claim lane) side by side.
 */
const SHARD_SEGMENT = new Map([
  ['due:Q', 3],
  ['due:C', 2],
  ['due:F', 3],
  ['table:TAG', 2],
]);

/** How many partitions of its family share the load `hottest` takes, as counted among the partitions written. */
function partitionsSharing(family: string, hottest: string, written: Iterable<string>): number {
  // A job's own item, a batch's start record: a new partition for each, never written a thousand times a second.
  if (family === 'table:JOB' || family === 'table:START') return Infinity;
  const segment = SHARD_SEGMENT.get(family);
  if (segment === undefined) return 1;
  const withoutShard = (partition: string): string => partition.split('#').filter((_, i) => i !== segment).join('#');
  return new Set([...written].filter((partition) => withoutShard(partition) === withoutShard(hottest))).size;
}

/** The type a partition is a type's own by (its key names it), or undefined for one every type shares. */
const ownerOf = (partition: string): string | undefined => TYPES.find((type) => partition.split('#').includes(type));

interface FamilyCeiling {
  family: string;
  shared: boolean;
  hottest: string;
  unitsPerJob: number;
  partitions: number;
  jobsPerS: number;
}

/**
 * For the jobs of `type` (or of every type): per family, the units a job writes into the family's hottest
 * partition, and the jobs a second that allows. A partition a job's own writes land in counts the jobs that
 * wrote it; any other (a type's counters, metrics, cursors; the shared directory) counts every job in scope.
 */
function familyCeilings(type?: string): FamilyCeiling[] {
  const inScope = (write: PartitionWrite): boolean => {
    if (type === undefined) return true;
    if (write.job) return write.job.type === type;
    const owner = ownerOf(write.partition);
    return owner === undefined || owner === type;
  };
  const scopeJobs = type === undefined ? ALL_JOBS : (MIX.find((entry) => entry.name === type)?.jobs ?? 0);
  // By family and key: a table partition and an index partition are two partitions even under one name.
  const byPartition = new Map<string, { family: string; partition: string; units: number; jobs: Set<string> }>();
  for (const write of writes.filter(inScope)) {
    const family = familyOf(write);
    const key = `${family} ${write.partition}`;
    const entry = byPartition.get(key) ?? { family, partition: write.partition, units: 0, jobs: new Set<string>() };
    entry.units += write.units;
    if (write.job) entry.jobs.add(`${write.job.type}#${write.job.id}`);
    byPartition.set(key, entry);
  }
  const hottestByFamily = new Map<string, { partition: string; unitsPerJob: number }>();
  for (const { family, partition, units, jobs } of byPartition.values()) {
    const unitsPerJob = units / (jobs.size > 0 ? jobs.size : scopeJobs);
    if (unitsPerJob > (hottestByFamily.get(family)?.unitsPerJob ?? -1)) hottestByFamily.set(family, { partition, unitsPerJob });
  }
  return [...hottestByFamily]
    .map(([family, { partition, unitsPerJob }]) => {
      const written = [...byPartition.values()].filter((entry) => entry.family === family).map((entry) => entry.partition);
      const partitions = partitionsSharing(family, partition, written);
      return { family, shared: ownerOf(partition) === undefined, hottest: partition, unitsPerJob, partitions, jobsPerS: (partitions * PARTITION_WRITE_UNITS_PER_S) / unitsPerJob };
    })
    .sort((a, b) => a.jobsPerS - b.jobsPerS);
}

/**
 * The jobs a second the table quota allows at the mix's units per job. On demand, the quota holds for the table
 * and for each of its indexes on its own ("for any table, or any individual GSI within that table").
 */
function quotaCeiling(): { tableUnitsPerJob: number; indexUnitsPerJob: number; jobsPerS: number } {
  const unitsPerJob = (index: PartitionWrite['index']): number =>
    writes.filter((write) => write.index === index).reduce((sum, write) => sum + write.units, 0) / ALL_JOBS;
  const tableUnitsPerJob = unitsPerJob('table');
  const indexUnitsPerJob = unitsPerJob('due');
  return { tableUnitsPerJob, indexUnitsPerJob, jobsPerS: TABLE_WRITE_UNITS_PER_S / Math.max(tableUnitsPerJob, indexUnitsPerJob) };
}

/** Every write unit of the mix, per job, by family: what each family adds to the table's and the index's quota. */
function unitsPerJobByFamily(): Record<string, number> {
  const totals = new Map<string, number>();
  for (const write of writes) totals.set(familyOf(write), (totals.get(familyOf(write)) ?? 0) + write.units);
  return Object.fromEntries([...totals].sort(([a], [b]) => a.localeCompare(b)).map(([family, units]) => [family, round(units / ALL_JOBS)]));
}

const round = (value: number): number => (Number.isFinite(value) ? Math.round(value * 100) / 100 : value);
const printable = (rows: FamilyCeiling[]) =>
  rows.map((row) => ({ ...row, unitsPerJob: round(row.unitsPerJob), jobsPerS: Number.isFinite(row.jobsPerS) ? Math.round(row.jobsPerS) : 'unbounded' }));

describe(`the ceiling at SHARDS=${SETTINGS.shards}, CLAIM_SHARDS=${SETTINGS.claimShards} (${ALL_JOBS} jobs of ${TYPES.length} types, ${MIX[1].jobs / 4} retried)`, () => {
  test('prints the write units per job of each family of partitions, and the jobs a second each allows', () => {
    console.log('every type together');
    console.table(printable(familyCeilings()));
    for (const type of TYPES) {
      console.log(`jobs of ${type}`);
      console.table(printable(familyCeilings(type)));
    }
    console.log('units per job of the mix, by family', unitsPerJobByFamily());
    console.log('table quota', quotaCeiling());
    expect(writes.length).toBeGreaterThan(0);
  });

  test('a job writes its queue lane shard twice (enqueue in, claim out) and its claim lane shard twice (claim in, end out)', () => {
    const plain = familyCeilings('plain');
    expect(plain.find((row) => row.family === 'due:Q')?.unitsPerJob).toBeCloseTo(2, 5);
    expect(plain.find((row) => row.family === 'due:C')?.unitsPerJob).toBeCloseTo(2, 5);
  });

  test('one type of the mix without limits sustains at least 2 000 jobs/s: no partition its jobs write caps it lower', () => {
    const ceiling = Math.min(...familyCeilings('plain').map((row) => row.jobsPerS));
    expect(ceiling).toBeGreaterThanOrEqual(2_000);
  });

  test('the partitions every type shares, the claim lane above all, allow at least 5 000 jobs/s', () => {
    const shared = familyCeilings().filter((row) => row.shared);
    expect(shared.map((row) => row.family)).toContain('due:C');
    expect(shared.filter((row) => row.jobsPerS < 5_000).map((row) => `${row.family}: ${Math.round(row.jobsPerS)} jobs/s`)).toEqual([]);
  });

  test("a limited type's counters, one partition per type, are written per poll and per batch, never per job", () => {
    // A write per job would be a unit at least, two in the transactions that move slots.
    for (const type of ['limited', 'tagged']) {
      const counters = familyCeilings(type).find((row) => row.family === 'table:TYPE');
      expect(counters?.partitions).toBe(1);
      expect(counters?.unitsPerJob).toBeLessThan(1);
    }
  });

  test('claims spread over CLAIM_SHARDS partitions of the claim lane, every type\'s together', () => {
    expect(familyCeilings().find((row) => row.family === 'due:C')?.partitions).toBe(SETTINGS.claimShards);
  });

  test('the mix stays within the default table quota at 5 000 jobs/s, in the table and in the index', () => {
    expect(quotaCeiling().jobsPerS).toBeGreaterThanOrEqual(5_000);
  });
});
