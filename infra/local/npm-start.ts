/** Runs `npm start` as a user would, in a process group of its own, and talks to it over HTTP. */
import { spawn, type ChildProcess } from 'node:child_process';

export interface Started {
  child: ChildProcess;
  url: string;
  token: string;
  output: () => string;
}

export async function npmStart(env: Record<string, string>): Promise<Started> {
  const child = spawn('npm', ['start'], {
    cwd: process.cwd(),
    env: { ...process.env, ...env },
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const deadline = Date.now() + 90_000;
  for (;;) {
    const url = /API:\s+(\S+)/.exec(output)?.[1];
    const token = /Admin key:\s+(\S+)/.exec(output)?.[1];
    if (url && token) return { child, url, token, output: () => output };
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`npm start did not come up:\n${output}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function groupAlive(pid: number): boolean {
  try {
    process.kill(-pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * Once the process group is gone its last lines may still be on their way through the pipes (a busy machine
 * delivers them later): the output is read whole only after both streams closed.
 */
async function outputClosed(child: ChildProcess): Promise<void> {
  const open = [child.stdout, child.stderr].filter((stream) => stream !== null && !stream.closed);
  const closed = Promise.all(open.map((stream) => new Promise((resolve) => stream?.once('close', resolve))));
  await Promise.race([closed, new Promise((resolve) => setTimeout(resolve, 5_000))]);
}

/** What the runtime logs for a call its function's role in the stack does not allow. */
const IAM_DENIAL = 'IAM check denied a call';

/**
 * Ctrl-C to the whole process group, as a terminal sends it (or SIGKILL, as a
 * crash would); resolves once every process of the group is gone, and fails
 * if any function made a call the stack's IAM policies would deny on AWS.
 */
export async function stop(started: Started, signal: 'SIGINT' | 'SIGKILL' = 'SIGINT'): Promise<void> {
  const pid = started.child.pid ?? 0;
  if (groupAlive(pid)) process.kill(-pid, signal);
  const deadline = Date.now() + 30_000;
  while (groupAlive(pid)) {
    if (Date.now() > deadline) {
      process.kill(-pid, 'SIGKILL');
      throw new Error(`npm start did not stop within 30 s on SIGINT:\n${started.output()}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  await outputClosed(started.child);
  const denials = started.output().split('\n').filter((line) => line.includes(IAM_DENIAL));
  if (denials.length > 0) throw new Error(`npm start made calls the stack's IAM policies deny:\n${denials.join('\n')}`);
}

export async function call(started: Started, method: string, path: string, body?: unknown) {
  const response = await fetch(`${started.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${started.token}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, any> };
}

export async function waitForStatus(started: Started, path: string, status: string, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { body } = await call(started, 'GET', path);
    if (body.status === status || Date.now() > deadline) return body;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}
