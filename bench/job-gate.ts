/**
 * The bench's one worker process runs a fixed number of jobs at once. A batch holds as many of them as it runs
 * at once (its jobs, up to WORKER_CONCURRENCY), so a batch of one job takes one place, not a batch's worth:
 * counting whole batches let a trickle of one-job batches (claimed-ahead jobs due apart) fill the process.
 */
export interface JobGate {
  /** Runs `task` once `places` are free, first come first served; a task wider than the gate runs alone. */
  run<T>(places: number, task: () => Promise<T>): Promise<T>;
  /** Tasks waiting for places now. */
  readonly waiting: number;
}

export function createJobGate(capacity: number): JobGate {
  let used = 0;
  const queue: { places: number; start: () => void }[] = [];
  const admit = (): void => {
    while (queue.length > 0) {
      const next = queue[0]!;
      if (used > 0 && used + next.places > capacity) return;
      queue.shift();
      used += next.places;
      next.start();
    }
  };
  return {
    get waiting() {
      return queue.length;
    },
    async run(places, task) {
      await new Promise<void>((start) => {
        queue.push({ places, start });
        admit();
      });
      try {
        return await task();
      } finally {
        used -= places;
        admit();
      }
    },
  };
}
