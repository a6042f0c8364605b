/** The bench's command line: `--name value` or `--name=value` pairs and bare boolean flags. */
import { readDiskSync } from '../infra/local/aws/dynamodb-local.js';

/**
 * Where the HTTP workloads' DynamoDB Local keeps its data: on disk with a flush per write
 * (`DYNAMODB_LOCAL_SYNC=full`), on disk without (`off`), or in memory (nothing kept across restarts).
 */
export const HTTP_STORAGES = ['disk', 'disk-nosync', 'memory'] as const;
export type HttpStorage = (typeof HTTP_STORAGES)[number];

export interface BenchArgs {
  n: number;
  /** Jobs the worker process runs at once (docs/performance.md#workloads: 32); the ceiling runs at the same concurrency. */
  concurrency: number;
  producerConcurrency: number;
  shards: number | undefined;
  pollers: number;
  splitShards: boolean;
  runs: number;
  only: string[] | undefined;
  scale: boolean;
  scaleNs: number[];
  delivery: 'at_least_once' | 'at_most_once';
  idleSeconds: number;
  /** How long idle-types counts each of its measurements. */
  idleTypesSeconds: number;
  /** wake-outcomes' idle window, the longest idle spell; the shorter spells scale with it. */
  wakeIdleSeconds: number;
  deadlineSeconds: number;
  w2RatePerS: number;
  /** The bench job type's `concurrency`; undefined: unlimited. */
  typeConcurrency: number | undefined;
  /** Jobs in each HTTP workload (W2 and due-on-arrival scale from it). */
  httpN: number;
  /** Enqueue requests in flight over HTTP. */
  httpConcurrency: number;
  /** Jobs enqueued per second, due on arrival, in HTTP-due-on-arrival. */
  arrivalRatePerS: number;
  /** Where the HTTP workloads' DynamoDB Local keeps its data. */
  httpStorage: HttpStorage;
  /** cost's arrival scenario: the rate, in jobs a day, and how long it runs. */
  costJobsPerDay: number;
  costSeconds: number;
  /** cost's idle scenario: how long it is metered. */
  costIdleMinutes: number;
}

const BOOLEAN_FLAGS = new Set(['split-shards', 'scale', 'help']);

export const USAGE = `npm run bench -- [options]
  --n N                      jobs in W1 (default 20000); W2 scales with it (12000 at N=20000)
  --concurrency C            jobs the worker process runs at once, and the ceiling's loops (default 32)
  --producer-concurrency P   enqueue requests in flight (default 32)
  --shards S                 due-index shards (default: SHARDS or 4)
  --pollers K                pollers running at once (default 1); they race over all shards unless --split-shards
  --split-shards             give each poller its own subset of shards
  --runs R                   runs of each workload; medians are reported (default 3)
  --only a,b                 run only these of: W1-delayed, W1-immediate, W1-limited, W2-steady,
                             W2-blocked (W2 beside 5 000 jobs of a key at limit 0), W2-bulk (W2 while another type's
                             failed jobs are bulk-retried), W2-beside (W2 while as many jobs of another type fall
                             due at the bulk pace, no bulk operation), W-mix (weights 1-5, shares 40/30/30 % of 100, two
                             pollers: in-flight weight and free slot -> start), F-none, F-tags, F-dedup, F-debounce,
                             F-key-rate (W1-immediate of at most 5 000 jobs, every job with three tags, a dedup key,
                             a debounce key enqueued twice, a throttle key with a rate: what each costs per job),
                             ceiling, idle, idle-blocked
                             (idle beside them, one per run), idle-types (npm start at its defaults with 1 and
                             with 10 job types and nothing due: DynamoDB calls an hour through a counting proxy,
                             billed poller and sweeper seconds an hour from its report lines), wake-latency
                             (npm start: how late a job due on arrival starts with the pollers asleep, and the
                             first job of a type made a moment ago, asleep and awake; 20 tries each), wake-outcomes
                             (one npm start: 10 idle types' calls and billed s an hour, jobs due on arrival after
                             idle spells of 1 to 5 minutes (--wake-idle-seconds sets the longest), a new type's
                             first job, 5 jobs due 65 s ahead one every 20 s and their billed s beyond idle, then
                             HTTP-W2-steady at --w2-rate), write-designs
                             (write units per job of three designs of the claim, and what reading past running
                             jobs costs a poll), and over HTTP
                             through npm start: put-ceiling, disk-ceiling, HTTP-W1-immediate, HTTP-W1-batch,
                             HTTP-W1-http, HTTP-W2-steady, HTTP-due-on-arrival, HTTP-overload (1x, 2x, 5x the
                             knee, open-loop), HTTP-burst (1 000 PUTs at once), HTTP-calls; and the reference on the same DynamoDB Local: naive-W1,
                             naive-W2 (a naive queue in one process: put, query what is due, claim, delete); and cost
                             (a fresh local runtime, read by its meter: jobs due on arrival on one of 10 types,
                             then 10 idle types; units per job or hour by service, $ per million jobs or a month)
  --scale                    also run W1-immediate at N = 2000, 20000, 200000 (--scale-ns to change)
  --delivery D               at_least_once (default) or at_most_once
  --idle-seconds S           how long the idle poller is measured (default 20)
  --idle-types-seconds S     how long idle-types counts each of its measurements (default 120)
  --wake-idle-seconds S      wake-outcomes' idle window, its longest idle spell (default 300)
  --deadline-seconds S       a job not run this long after the last is due is lost (default 120)
  --w2-rate R                jobs due per second in W2-steady (default 200)
  --type-concurrency L       the job type's concurrency limit (default: none; W1-limited's is L, or 64)
  --http-n N                 jobs in each HTTP workload (default: the smaller of --n and 5000)
  --http-concurrency C       enqueue requests in flight over HTTP (default 64)
  --arrival-rate R           jobs per second enqueued due on arrival in HTTP-due-on-arrival (default 100)
  --http-storage S           the HTTP workloads' DynamoDB Local: disk (a flush per write, DYNAMODB_LOCAL_SYNC=full),
                             disk-nosync (no flush per write, DYNAMODB_LOCAL_SYNC=off) or memory; default: as npm
                             start keeps its data at its defaults (disk-nosync where libeatmydata is installed)
  --cost-jobs-per-day J      cost's arrival rate (default 1000000: 11.6 jobs/s)
  --cost-seconds S           how long cost's arrival scenario enqueues (default 300)
  --cost-idle-minutes M      how long cost's idle scenario is metered (default 10)
Queue settings come from the environment as in production (POLL_INTERVAL_MS, CLAIM_CONCURRENCY, ...).`;

function positiveInteger(name: string, raw: string): number {
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1) throw new Error(`--${name} must be a positive integer, got "${raw}"`);
  return value;
}

export function parseBenchArgs(argv: readonly string[]): BenchArgs | 'help' {
  const values = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (!arg.startsWith('--')) throw new Error(`unexpected argument "${arg}"\n${USAGE}`);
    const [name, inline] = arg.slice(2).split('=', 2) as [string, string | undefined];
    if (BOOLEAN_FLAGS.has(name)) values.set(name, inline ?? 'true');
    else {
      const value = inline ?? argv[++i];
      if (value === undefined) throw new Error(`--${name} needs a value`);
      values.set(name, value);
    }
  }
  if (values.has('help')) return 'help';
  const known = new Set([...BOOLEAN_FLAGS, 'n', 'concurrency', 'producer-concurrency', 'shards', 'pollers', 'runs', 'only', 'scale-ns', 'delivery', 'idle-seconds', 'idle-types-seconds', 'wake-idle-seconds', 'deadline-seconds', 'w2-rate', 'type-concurrency', 'http-n', 'http-concurrency', 'arrival-rate', 'http-storage', 'cost-jobs-per-day', 'cost-seconds', 'cost-idle-minutes']);
  for (const name of values.keys()) if (!known.has(name)) throw new Error(`unknown option --${name}\n${USAGE}`);
  const int = (name: string, fallback: number): number => (values.has(name) ? positiveInteger(name, values.get(name) as string) : fallback);
  const delivery = values.get('delivery') ?? 'at_least_once';
  // What npm start does at its defaults: no flush per write where libeatmydata is installed.
  const httpStorage = values.get('http-storage') ?? (readDiskSync({}) === 'off' ? 'disk-nosync' : 'disk');
  if (!(HTTP_STORAGES as readonly string[]).includes(httpStorage)) throw new Error(`--http-storage must be one of ${HTTP_STORAGES.join(', ')}, got "${httpStorage}"`);
  if (delivery !== 'at_least_once' && delivery !== 'at_most_once') throw new Error(`--delivery must be at_least_once or at_most_once, got "${delivery}"`);
  return {
    n: int('n', 20_000),
    concurrency: int('concurrency', 32),
    producerConcurrency: int('producer-concurrency', 32),
    shards: values.has('shards') ? int('shards', 4) : undefined,
    pollers: int('pollers', 1),
    splitShards: values.get('split-shards') === 'true',
    runs: int('runs', 3),
    only: values.get('only')?.split(',').map((name) => name.trim()),
    scale: values.get('scale') === 'true',
    scaleNs: values.get('scale-ns')?.split(',').map((raw) => positiveInteger('scale-ns', raw)) ?? [2_000, 20_000, 200_000],
    delivery,
    idleSeconds: int('idle-seconds', 20),
    idleTypesSeconds: int('idle-types-seconds', 120),
    wakeIdleSeconds: int('wake-idle-seconds', 300),
    deadlineSeconds: int('deadline-seconds', 120),
    w2RatePerS: int('w2-rate', 200),
    typeConcurrency: values.has('type-concurrency') ? int('type-concurrency', 1) : undefined,
    httpN: int('http-n', Math.min(int('n', 20_000), 5_000)),
    httpConcurrency: int('http-concurrency', 64),
    arrivalRatePerS: int('arrival-rate', 100),
    httpStorage: httpStorage as HttpStorage,
    costJobsPerDay: int('cost-jobs-per-day', 1_000_000),
    costSeconds: int('cost-seconds', 300),
    costIdleMinutes: int('cost-idle-minutes', 10),
  };
}
