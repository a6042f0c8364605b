/**
 * `npm start` as a user runs it, for the bench's HTTP workloads: a DynamoDB Local
 * on disk (as `npm start` keeps its data), `npm start` in a process group of its
 * own at the default queue settings, the admin key it made, and the CPU time of
 * each process: the runtime's node processes, DynamoDB Local, and this one.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, request as httpRequest, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, startDynamoDbLocal, type DynamoDbLocal } from '../infra/local/aws/dynamodb-local.js';
import { createClient, type QueueClient } from '../lib/client/index.js';
import { npmStart, stop, type Started } from '../infra/local/npm-start.js';
import type { HttpStorage } from './args.js';
import { processCpuMs } from './cpu.js';

/** `pid` and every process below it. */
function processTree(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(parent, [...(children.get(parent) ?? []), Number(name)]);
    } catch {
      // The process ended while we looked.
    }
  }
  const tree: number[] = [];
  const visit = (at: number): void => {
    tree.push(at);
    for (const child of children.get(at) ?? []) visit(child);
  };
  visit(pid);
  return tree;
}

export interface ProcessCpu {
  /** `npm start`: npm, tsx and the runtime's node process. */
  runtimeMs: number;
  dynamoMs: number;
  /** This process: the typed client, the sink, the bench. */
  benchMs: number;
}

/** Calls to DynamoDB by operation (`PutItem`, `Query`, ...), as the proxy in front of it saw them. */
export type CallCounts = Record<string, number>;

/**
 * Forwards every request to DynamoDB Local untouched, counting each to the table by its X-Amz-Target. It adds a hop, so
 * only the pass that counts calls goes through it, never a timed one.
 */
async function startCountingProxy(target: string): Promise<{ endpoint: string; counts: CallCounts; server: Server }> {
  const counts: CallCounts = {};
  const { hostname, port } = new URL(target);
  const server = createServer((incoming, outgoing) => {
    const target = String(incoming.headers['x-amz-target'] ?? 'unknown');
    // The local stream mapping's polls (DescribeStream, GetRecords: four a second a shard) are Lambda's own on AWS,
    // and not billed: counting them would bury the table's calls.
    if (!target.startsWith('DynamoDBStreams_')) {
      const operation = target.replace(/^DynamoDB_\d+\./, '');
      counts[operation] = (counts[operation] ?? 0) + 1;
    }
    const forwarded = httpRequest({ hostname, port, path: incoming.url, method: incoming.method, headers: incoming.headers }, (answer) => {
      outgoing.writeHead(answer.statusCode ?? 500, answer.headers);
      answer.pipe(outgoing);
    });
    forwarded.on('error', () => outgoing.destroy());
    incoming.pipe(forwarded);
  });
  const proxyPort = await freePort();
  await new Promise<void>((resolve) => server.listen(proxyPort, '127.0.0.1', resolve));
  return { endpoint: `http://127.0.0.1:${proxyPort}`, counts, server };
}

/** A job's success as `npm start` logged it (lifecycle events go to its log when no bus is set). */
export interface LoggedSuccess {
  attempt: number;
  /** When this process read the line. */
  seenAtMs: number;
}

/** Calls `onLine` with each whole line of `npm start`'s log that holds `marker`, as the log comes. */
function watchLines(started: Started, marker: string, onLine: (line: string) => void): void {
  let partial = '';
  started.child.stdout?.on('data', (chunk: Buffer) => {
    const lines = (partial + chunk.toString()).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) if (line.includes(marker)) onLine(line);
  });
}

/** Reads `npm start`'s log as it comes, keeping each job.succeeded event by type and id: a check that costs the runtime nothing. */
function watchSuccesses(started: Started): Map<string, Map<string, LoggedSuccess[]>> {
  const byType = new Map<string, Map<string, LoggedSuccess[]>>();
  watchLines(started, '"message":"job.succeeded"', (line) => {
    const event = JSON.parse(line) as { type: string; id: string; attempt: number };
    const ofType = byType.get(event.type) ?? new Map<string, LoggedSuccess[]>();
    byType.set(event.type, ofType);
    ofType.set(event.id, [...(ofType.get(event.id) ?? []), { attempt: event.attempt, seenAtMs: Date.now() }]);
  });
  return byType;
}

/** An invocation's Lambda-style report line, as `npm start` logged it (infra/local/aws/invocation-report.ts). */
export interface LoggedReport {
  function: string;
  durationMs: number;
  billedDurationMs: number;
  memorySizeMb: number | undefined;
  /** When the invocation ended: the line's timestamp, from the runtime's clock (the same machine's). */
  endedAtMs: number;
}

/** Reads `npm start`'s log as it comes, keeping every per-invocation report line. */
function watchReports(started: Started): LoggedReport[] {
  const reports: LoggedReport[] = [];
  watchLines(started, '"message":"REPORT"', (line) => {
    const report = JSON.parse(line) as { function: string; duration_ms: number; billed_duration_ms: number; memory_size_mb?: number; timestamp: string };
    reports.push({
      function: report.function,
      durationMs: report.duration_ms,
      billedDurationMs: report.billed_duration_ms,
      memorySizeMb: report.memory_size_mb,
      endedAtMs: Date.parse(report.timestamp),
    });
  });
  return reports;
}

export interface HttpSystem {
  url: string;
  /** The admin key `npm start` made. */
  token: string;
  /** job.succeeded events logged so far, by type then id. */
  successes: Map<string, Map<string, LoggedSuccess[]>>;
  /** Report lines logged so far; those of invocations cut short by `stop` arrive while it runs. */
  reports: LoggedReport[];
  client: QueueClient;
  dynamo: DynamoDbLocal;
  /** Calls by operation since start, when started with `countCalls`. */
  calls: CallCounts | undefined;
  sampleCpu(): ProcessCpu;
  stop(): Promise<void>;
}

export const storageDescription: Record<HttpStorage, string> = {
  disk: 'on disk, flushing every write (DYNAMODB_LOCAL_SYNC=full)',
  'disk-nosync': "on disk without a flush per write (DYNAMODB_LOCAL_SYNC=off, npm start's default where libeatmydata is installed)",
  memory: 'in memory',
};

/** Starts DynamoDB Local and `npm start` against it, at the default queue settings. */
export async function startHttpSystem(options: { countCalls: boolean; storage: HttpStorage }): Promise<HttpSystem> {
  const dataDir = await mkdtemp(join(tmpdir(), 'bench-npm-start-'));
  const dynamo = await startDynamoDbLocal(options.storage === 'memory' ? {} : { dbPath: dataDir, sync: options.storage === 'disk' ? 'full' : 'off' });
  const proxy = options.countCalls ? await startCountingProxy(dynamo.endpoint) : undefined;
  let started: Started;
  try {
    // Only what a user on a fresh machine sets: a port and where the data goes (plus where DynamoDB Local is).
    started = await npmStart({ PORT: String(await freePort()), DATA_DIR: dataDir, DYNAMODB_ENDPOINT: proxy?.endpoint ?? dynamo.endpoint, API_TOKEN: '' });
  } catch (error) {
    proxy?.server.close();
    await dynamo.stop();
    throw error;
  }
  const runtimePid = started.child.pid ?? 0;
  const dynamoPid = dynamo.process.pid ?? 0;
  return {
    url: started.url,
    token: started.token,
    successes: watchSuccesses(started),
    reports: watchReports(started),
    client: createClient({ url: started.url, token: started.token, retries: 3 }),
    dynamo,
    calls: proxy?.counts,
    sampleCpu: () => {
      const own = process.cpuUsage();
      return {
        runtimeMs: processTree(runtimePid).reduce((sum, pid) => sum + (processCpuMs(pid) ?? 0), 0),
        dynamoMs: processCpuMs(dynamoPid) ?? 0,
        benchMs: (own.user + own.system) / 1_000,
      };
    },
    stop: async () => {
      try {
        await stop(started);
      } finally {
        proxy?.server.close();
        await dynamo.stop();
        await rm(dataDir, { recursive: true, force: true });
      }
    },
  };
}

export function cpuBetween(start: ProcessCpu, end: ProcessCpu, jobs: number): ProcessCpu {
  return {
    runtimeMs: (end.runtimeMs - start.runtimeMs) / jobs,
    dynamoMs: (end.dynamoMs - start.dynamoMs) / jobs,
    benchMs: (end.benchMs - start.benchMs) / jobs,
  };
}
