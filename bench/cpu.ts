/** CPU time of this process and of DynamoDB Local, to tell which side of the wire a job's time is spent on. */
import { readFileSync } from 'node:fs';

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
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return undefined;
  }
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
