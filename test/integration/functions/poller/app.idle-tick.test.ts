/**
 * The poller function on an idle queue: a minute tick that finds nothing to do sleeps at once, and still reports
 * the lag, so DueLagAlarm (which counts a minute without a report as a breach) stays OK while the queue is idle.
 */
import { expect, test } from 'vitest';
import { createPollerHandler } from '../../../../functions/poller/app.js';
import type { QueueMetrics } from '../../../../functions/shared/metrics.js';
import { defineType, freshQueuePerTest, RecordingInvoker } from '../../../support/lib-fixtures.js';

const queue = freshQueuePerTest();

function recordingMetrics() {
  const reported: { name: string; value: number }[] = [];
  let flushes = 0;
  const metrics: QueueMetrics = {
    count: () => undefined,
    milliseconds: (name, value) => void reported.push({ name, value }),
    flush: () => void flushes++,
  };
  return { metrics, reported, flushes: () => flushes };
}

test('a tick on an idle queue sleeps, and reports a due lag of 0 with it', async () => {
  const q = queue();
  await defineType(q.ctx, 'emails');
  const { metrics, reported, flushes } = recordingMetrics();
  const handler = createPollerHandler({ ctx: q.as('poller'), invoker: new RecordingInvoker(), identity: { id: 'p-1', host: 'host' }, metrics });
  const result = await handler({}, { getRemainingTimeInMillis: () => 60_000 });
  expect(result.claimed).toBe(0);
  expect(reported).toEqual([{ name: 'OldestDueLagMs', value: 0 }]);
  expect(flushes()).toBe(1);
});
