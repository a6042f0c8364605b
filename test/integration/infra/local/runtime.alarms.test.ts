/**
 * The stack's alarms under `npm start`: GET /v1/stats, which the dashboard's health view reads, carries every alarm
 * the stack deploys with its state as the runtime evaluates it. How they are evaluated is
 * test/integration/infra/local/aws/monitoring.alarms.test.ts's.
 */
import { expect, test } from 'vitest';
import { runtimePerFile } from '../../../support/local-runtime.js';
import { createQueueApp } from '../../../../infra/queue-app.js';
import type { Stats } from '../../../../lib/client/types.js';

const runtime = runtimePerFile('alarms');

test('GET /v1/stats carries every alarm the stack deploys, by its id, none in ALARM on an idle queue', async () => {
  const response = await fetch(`${runtime().url}/v1/stats`, { headers: { authorization: `Bearer ${runtime().adminKey}` } });
  const { alarms } = (await response.json()) as Stats;
  const { stack } = createQueueApp({ context: { 'aws:cdk:bundling-stacks': [] } });
  expect(alarms?.map(({ name }) => name).sort()).toEqual(stack.alarms.map((alarm) => alarm.node.id).sort());
  expect(alarms?.filter(({ state }) => state === 'ALARM')).toEqual([]);
});
