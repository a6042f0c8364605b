/** CPU time of this process and of DynamoDB Local, to tell which side of the wire a job's time is spent on. */
import { readdirSync, readFileSync } from 'node:fs';

/** User + system CPU ms from the fields of a /proc stat line after the command name (14 and 15 of the line). */
function statCpuMs(stat: string): number {
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

export interface CpuSample {
  nodeMs: number;
  /** undefined where /proc is not available (not Linux). */
  dynamoMs: number | undefined;
}

/** CPU ms (user + system) of `pid` from /proc; undefined for no pid, or one that is gone. */
export function processCpuMs(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    // Fields 14 and 15 of /proc/<pid>/stat: user and system time in clock ticks (100 per second on Linux).
    return statCpuMs(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return undefined;
  }
}

/** CPU ms the JIT compiler threads of the JVM `pid` have used: how far from warm it still is. */
export function jitCompilerCpuMs(pid: number): number {
  let total = 0;
  for (const thread of readdirSync(`/proc/${pid}/task`)) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${thread}/stat`, 'utf8');
      if (/^\d+ \(C[12] CompilerThre/.test(stat)) total += statCpuMs(stat);
    } catch {
      // The thread ended while we looked.
    }
  }
  return total;
}

export function sampleCpu(dynamoPid: number | undefined): CpuSample {
  const usage = process.cpuUsage();
  return { nodeMs: (usage.user + usage.system) / 1_000, dynamoMs: processCpuMs(dynamoPid) };
}

export function cpuSince(start: CpuSample, dynamoPid: number | undefined): CpuSample {
  const end = sampleCpu(dynamoPid);
  return {
    nodeMs: end.nodeMs - start.nodeMs,
    dynamoMs: end.dynamoMs !== undefined && start.dynamoMs !== undefined ? end.dynamoMs - start.dynamoMs : undefined,
  };
}
