/** A queue on its own fresh table in the shared DynamoDB Local, with a clock the test moves. */
import { randomUUID } from 'node:crypto';
import type { WakeInvoker, WakeTimers } from '../../lib/domain/invocations.js';
import { DeleteTableCommand } from '@aws-sdk/client-dynamodb';
import { inject } from 'vitest';
import { createQueueContext, type QueueContext } from '../../lib/queue/context.js';
import { readQueueSettings } from '../../lib/queue/settings.js';
import { type QueueSettings } from '../../lib/queue/settings.js';
import { createDynamoClients, type DynamoClients } from '../../lib/store/client.js';
import type { LifecyclePublisher } from '../../lib/domain/lifecycle-events.js';
import { ensureTable } from '../../lib/store/table.js';
import type { IamDecision } from '../../infra/local/aws/iam/iam-check.js';
import type { LocalIam } from '../../infra/local/aws/iam/local-iam.js';
import type { QueueFunctionName } from '../../infra/local/aws/iam/stack-policies.js';
import { localIamFor } from './iam.js';

export interface TestClock {
  nowMs: () => number;
  set(epochMs: number): void;
  advance(ms: number): void;
}

export function manualClock(startMs = Date.parse('2026-11-21T10:00:00.000Z')): TestClock {
  let now = startMs;
  return {
    nowMs: () => now,
    set: (epochMs) => {
      now = epochMs;
    },
    advance: (ms) => {
      now += ms;
    },
  };
}

/** The real clock, for tests that run pollers and workers in real time; moving it is a mistake in the test, so it throws. */
export const realClock: TestClock = {
  nowMs: Date.now,
  set: () => {
    throw new Error('the real clock cannot be set');
  },
  advance: () => {
    throw new Error('the real clock cannot be advanced');
  },
};

/** Where a function's code gets the queue as that function sees it. */
export interface FunctionContexts {
  as(fn: QueueFunctionName): QueueContext;
}

export interface TestQueue extends FunctionContexts {
  /** The test's own access, for setting up and inspecting: not limited by any role. */
  ctx: QueueContext;
  /**
   * The same queue (table, settings, clock, events) as function `fn` sees it: every call it makes is checked
   * against `fn`'s role in the stack. Code a function runs gets this, never `ctx`.
   */
  as(fn: QueueFunctionName): QueueContext;
  /** The check every `as(fn)` call goes through, with the stack's policies made concrete for this table. */
  iam: LocalIam;
  /** The clients behind `as(fn)`, for a test that watches or breaks that function's calls. */
  clientsOf(fn: QueueFunctionName): DynamoClients;
  clients: DynamoClients;
  clock: TestClock;
  tableName: string;
  drop(): Promise<void>;
}

const queuesByContext = new WeakMap<QueueContext, TestQueue>();

/** `ctx` of a test queue as function `fn` sees it (see `TestQueue.as`); any other context is a mistake in the test. */
export function asFunction(ctx: QueueContext, fn: QueueFunctionName): QueueContext {
  const queue = queuesByContext.get(ctx);
  if (!queue) throw new Error(`asFunction(ctx, '${fn}') needs the ctx of a createTestQueue() queue`);
  return queue.as(fn);
}

export async function createTestQueue(
  options: {
    settings?: Partial<QueueSettings>;
    clock?: TestClock;
    random?: () => number;
    events?: LifecyclePublisher;
    /** Sees every call a function makes through `as`, allowed or denied. */
    onIamDecision?: (decision: IamDecision) => void;
    /** How far the `due` index lags the table, on the queue's clock, for the functions' queries through `as` (never for `ctx`); none by default. */
    indexLagMs?: number;
    /** Wakes sleeping pollers and sweepers for every function through `as`, each function with a waker of its own, as each runs in its own process. */
    waker?: WakeInvoker;
    /** Where the functions through `as` arm their wake timers (the poller and the sweeper, as they sleep); none by default, and they stay for work due later. */
    wakeTimers?: WakeTimers;
    /** The table's stream, for tests that read it as the waker's mapping does; off otherwise (see ensureTable). */
    stream?: boolean;
  } = {},
): Promise<TestQueue> {
  const tableName = `test-${randomUUID()}`;
  const clients = createDynamoClients({ endpoint: inject('dynamoEndpoint') });
  // Test clocks are fixed in time: with TTL on, DynamoDB Local would expire finished jobs by the real date.
  await ensureTable(clients.base, tableName, { timeToLive: false, stream: options.stream === true });
  const clock = options.clock ?? manualClock();
  // CLAIM_SHARDS follows SHARDS unless set, as it does when read from the environment.
  const shards = options.settings?.shards ?? readQueueSettings({ TABLE_NAME: tableName }).shards;
  const settings = { ...readQueueSettings({ TABLE_NAME: tableName, SHARDS: String(shards) }), ...options.settings };
  const ctx = createQueueContext(clients.db, settings, {
    nowMs: clock.nowMs,
    random: options.random ?? (() => 0.5),
    ...(options.events ? { events: options.events } : {}),
  });
  const iam = localIamFor(tableName, options.onIamDecision, options.indexLagMs === undefined ? {} : { indexLagMs: options.indexLagMs, indexLagClock: clock.nowMs });
  const functionClients = new Map<QueueFunctionName, DynamoClients>();
  const functionContexts = new Map<QueueFunctionName, QueueContext>();
  const as = (fn: QueueFunctionName): QueueContext => {
    let functionCtx = functionContexts.get(fn);
    if (!functionCtx) {
      const roleClients = iam.dynamoClientsFor(fn, { endpoint: inject('dynamoEndpoint') });
      functionClients.set(fn, roleClients);
      const { waker, wakeTimers } = options;
      functionCtx = {
        ...ctx,
        db: roleClients.db,
        events: iam.publisherFor(fn, ctx.events),
        ...(waker ? { waker: { wake: (request) => waker.wake(request) } } : {}),
        ...(wakeTimers ? { wakeTimers } : {}),
      };
      functionContexts.set(fn, functionCtx);
    }
    return functionCtx;
  };
  const queue: TestQueue = {
    ctx,
    as,
    iam,
    clientsOf: (fn) => {
      as(fn);
      return functionClients.get(fn)!;
    },
    clients,
    clock,
    tableName,
    drop: async () => {
      await clients.base.send(new DeleteTableCommand({ TableName: tableName }));
      clients.base.destroy();
      for (const roleClients of functionClients.values()) roleClients.base.destroy();
    },
  };
  queuesByContext.set(ctx, queue);
  return queue;
}
