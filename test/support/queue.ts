/** A queue on its own fresh table in the shared DynamoDB Local, with a clock the test moves. */
import { randomUUID } from 'node:crypto';
import { DeleteTableCommand } from '@aws-sdk/client-dynamodb';
import { inject } from 'vitest';
import { createQueueContext, readQueueSettings, type QueueContext, type QueueSettings } from '../../lib/config.js';
import { createDynamoClients, type DynamoClients } from '../../lib/dynamodb.js';
import type { LifecyclePublisher } from '../../lib/events.js';
import { ensureTable } from '../../lib/table.js';

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

/** The real clock, for tests that run pollers and workers in real time. */
export const realClock: TestClock = { nowMs: Date.now, set: () => undefined, advance: () => undefined };

export interface TestQueue {
  ctx: QueueContext;
  clients: DynamoClients;
  clock: TestClock;
  tableName: string;
  drop(): Promise<void>;
}

export async function createTestQueue(
  options: { settings?: Partial<QueueSettings>; clock?: TestClock; random?: () => number; events?: LifecyclePublisher } = {},
): Promise<TestQueue> {
  const tableName = `test-${randomUUID()}`;
  const clients = createDynamoClients({ endpoint: inject('dynamoEndpoint') });
  // Test clocks are fixed in time: with TTL on, DynamoDB Local would expire finished jobs by the real date.
  await ensureTable(clients.base, tableName, { timeToLive: false });
  const clock = options.clock ?? manualClock();
  const settings = { ...readQueueSettings({ TABLE_NAME: tableName }), ...options.settings };
  const ctx = createQueueContext(clients.db, settings, {
    nowMs: clock.nowMs,
    random: options.random ?? (() => 0.5),
    ...(options.events ? { events: options.events } : {}),
  });
  return {
    ctx,
    clients,
    clock,
    tableName,
    drop: async () => {
      await clients.base.send(new DeleteTableCommand({ TableName: tableName }));
      clients.base.destroy();
    },
  };
}
