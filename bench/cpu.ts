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

/** The whole machine's CPU ticks, and those lost to steal (the hypervisor running another guest), from /proc/stat. */
export interface StealSample {
  stealTicks: number;
  totalTicks: number;
}

/** undefined where /proc/stat is not available (not Linux). */
export function sampleSteal(): StealSample | undefined {
  try {
    const [label, ...ticks] = (readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '').trim().split(/\s+/);
    if (label !== 'cpu') return undefined;
    // user nice system idle iowait irq softirq steal guest guest_nice; guest time is already inside user and nice.
    const counted = ticks.slice(0, 8).map(Number);
    return { stealTicks: counted[7] ?? 0, totalTicks: counted.reduce((sum, value) => sum + value, 0) };
  } catch {
    return undefined;
  }
}

/**
 * The share of the machine's time since `start` the hypervisor gave to someone else: a run with much of it
 * measured the VM's neighbours, not the queue.
 */
export function stealPercentSince(start: StealSample | undefined): number | undefined {
  const end = sampleSteal();
  if (!start || !end || end.totalTicks <= start.totalTicks) return undefined;
  return (100 * (end.stealTicks - start.stealTicks)) / (end.totalTicks - start.totalTicks);
}
