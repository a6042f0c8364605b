/**
 * How the poller and the sweeper are started, done locally as the stack does it: EventBridge's rules start each
 * poller partition and the sweeper every minute (rate(1 minute)), whether or not the invocation started a minute
 * before still runs, and the functions that write what they act on wake them (lib/queue/wake/wake-requests.ts). Both
 * are Lambda asynchronous invokes: accepted at once and run, throttled and retried only beyond the executions the
 * stack reserves when it reserves some (./limits.ts). Locally the first tick comes at start rather than up to a
 * minute later.
 */
import { log } from '../../../functions/shared/log.js';
import { ConfigError } from '../../../lib/domain/errors.js';
import type { QueueSettings } from '../../../lib/queue/settings.js';
import { wakeEventOf, type WakeInvoker } from '../../../lib/domain/invocations.js';
import { shardsOfPartition } from '../../../lib/store/keys.js';
import { createLocalAsyncStarts, type LocalAsyncStarts } from './limits.js';
import type { LocalIam } from './iam/local-iam.js';
import type { QueueFunctionName } from './iam/stack-policies.js';

/** EventBridge's rate(1 minute), the period of the stack's rules: a fact of the deployed system, not a setting. */
export const TICK_PERIOD_MS = 60_000;

export type ScheduledFunction = 'poller' | 'sweeper';

/** What one tick starts: a poller invocation per partition, with the shards its rule passes, and a sweeper invocation. */
export interface TickEvents {
  poller: { shards: number[] }[];
  sweeper: Record<string, never>[];
}

/** The events the stack's rules send each minute for these settings; refused, as the stack refuses it, when a partition would own no shard. */
export function tickEventsOf(settings: Pick<QueueSettings, 'pollerPartitions' | 'shards'>): TickEvents {
  const { pollerPartitions, shards } = settings;
  if (pollerPartitions > shards) {
    throw new ConfigError(`POLLER_PARTITIONS must be at most SHARDS (${shards}): a partition without a shard would poll nothing, got "${pollerPartitions}"`);
  }
  return {
    poller: Array.from({ length: pollerPartitions }, (_, partition) => ({ shards: shardsOfPartition(partition, pollerPartitions, shards) })),
    sweeper: [{}],
  };
}

export interface MinuteTicks {
  /** No tick after this; invocations already started go on. */
  stop(): void;
}

/** Calls `tick` now and every TICK_PERIOD_MS after, until stopped. */
export function startMinuteTicks(tick: () => void): MinuteTicks {
  tick();
  const timer = setInterval(tick, TICK_PERIOD_MS);
  return { stop: () => clearInterval(timer) };
}

export interface ScheduledFunctionsOptions {
  settings: Pick<QueueSettings, 'pollerPartitions' | 'shards'>;
  iam: Pick<LocalIam, 'wakerFor'>;
  /** Every invocation started or still to start; the runtime waits for them on stop. */
  inFlight: Set<Promise<unknown>>;
  /** Nothing starts once aborted, and events still waiting are dropped. */
  signal: AbortSignal;
  /**
   * The executions the stack reserves for each (infra/delayed-job-queue.ts's reservedConcurrency). One it reserves
   * none for runs every start at once: Lambda throttles it only at the account's concurrency, not emulated here.
   */
  reservedConcurrency: Partial<Record<ScheduledFunction, number>>;
}

/** One invocation of `fn` with `event`, through the runtime's invoke: its Lambda timeout and its REPORT line. */
export type InvokeScheduled = (fn: ScheduledFunction, event: unknown) => Promise<unknown>;

export interface ScheduledFunctions {
  /** The waker `fn`'s queue context holds: each wake checked against `fn`'s role, then started as Lambda's async invoke. */
  wakerFor(fn: QueueFunctionName): WakeInvoker;
  /** Starts the minute ticks: one now, then one a minute. */
  startTicks(): MinuteTicks;
}

/** An invocation that failed, or ran into its timeout, is only logged: the next tick or wake starts another, as deployed. */
export function createScheduledFunctions(options: ScheduledFunctionsOptions, invoke: InvokeScheduled): ScheduledFunctions {
  const ticks = tickEventsOf(options.settings);
  const startsOf = (fn: ScheduledFunction): LocalAsyncStarts<unknown> =>
    createLocalAsyncStarts((event) => invoke(fn, event), {
      concurrency: options.reservedConcurrency[fn] ?? Infinity,
      inFlight: options.inFlight,
      signal: options.signal,
      onError: (error) => log('error', `${fn} invocation failed`, { error }),
    });
  const starts: Record<ScheduledFunction, LocalAsyncStarts<unknown>> = { poller: startsOf('poller'), sweeper: startsOf('sweeper') };
  return {
    wakerFor: (fn) => options.iam.wakerFor(fn, { wake: async (request) => starts[request.role].start(wakeEventOf(request)) }),
    startTicks: () =>
      startMinuteTicks(() => {
        for (const event of ticks.poller) starts.poller.start(event);
        for (const event of ticks.sweeper) starts.sweeper.start(event);
      }),
  };
}
