/**
 * The in-process system's pollers and sweeper started as the stack starts them: a minute tick or a wake starts
 * an invocation, which stays only while something is in reach (lib/queue/wake/lease-keeper.ts); a write that needs one sooner
 * wakes it through the waker each role's context carries. Invocations overlap as Lambda's do, up to the stack's
 * reserved concurrency (2); a start beyond it waits for one to end. So the bench measures the sleeping design,
 * with its leases, holds and wakes, at the rates it runs.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { WakeInvoker } from '../lib/domain/invocations.js';

/** EventBridge's period. */
export const TICK_MS = 60_000;
/** The stack reserves 2 concurrent executions per poller partition, and 2 for the sweeper. */
const RESERVED_CONCURRENCY = 2;

export interface ScheduledRole {
  /** What the role's writers wake it with. */
  waker: WakeInvoker;
  /** Runs until `signal` aborts: a tick at once and every TICK_MS, and a start at every wake. */
  run(invoke: (kind: 'tick' | 'wake') => Promise<unknown>, signal: AbortSignal): Promise<void>;
}

export function scheduledRole(): ScheduledRole {
  let start: ((kind: 'tick' | 'wake') => void) | undefined;
  return {
    waker: {
      async wake(): Promise<void> {
        start?.('wake');
      },
    },
    async run(invoke, signal) {
      const running = new Set<Promise<unknown>>();
      const waiting: ('tick' | 'wake')[] = [];
      const launch = (kind: 'tick' | 'wake'): void => {
        if (signal.aborted) return;
        if (running.size >= RESERVED_CONCURRENCY) {
          waiting.push(kind);
          return;
        }
        const invocation = invoke(kind)
          .catch(() => undefined)
          .finally(() => {
            running.delete(invocation);
            const next = waiting.shift();
            if (next) launch(next);
          });
        running.add(invocation);
      };
      start = launch;
      while (!signal.aborted) {
        launch('tick');
        await sleep(TICK_MS, undefined, { signal }).catch(() => undefined);
      }
      start = undefined;
      while (running.size > 0) await Promise.allSettled([...running]);
    },
  };
}
