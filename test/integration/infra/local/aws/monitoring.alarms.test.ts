/**
 * The stack's alarms as `npm start` evaluates them (infra/local/aws/monitoring.ts), on the metrics the real poller
 * function emits on DynamoDB Local under its role. Time is the test queue's clock, so ten minutes pass at once: each
 * minute is the tick EventBridge starts at its beginning, then the alarms' evaluation at its end.
 */
import { expect, test } from 'vitest';
import { createPollerHandler } from '../../../../../functions/poller/app.js';
import { deployStackSettings } from '../../../../../infra/cdk-context.js';
import { createLocalMonitoring } from '../../../../../infra/local/aws/monitoring.js';
import { tickEventsOf } from '../../../../../infra/local/aws/scheduled-functions.js';
import { defineType, enqueue, freshQueuePerTest, readItem, RecordingInvoker } from '../../../../support/lib-fixtures.js';
import type { TestQueue } from '../../../../support/queue.js';

const queue = freshQueuePerTest();

const MINUTE_MS = 60_000;

/** The queue's alarms at their defaults, and its poller as each minute's tick starts it. */
function monitoredQueue(q: TestQueue) {
  const monitoring = createLocalMonitoring({ stack: deployStackSettings({}), tableName: q.tableName, nowMs: q.clock.nowMs });
  const poller = createPollerHandler({ ctx: q.as('poller'), invoker: new RecordingInvoker(), identity: { id: 'poller-1', host: 'host' }, metrics: monitoring.metricsFor('poller') });
  const [tickEvent] = tickEventsOf(q.ctx.settings).poller;
  const tick = () => poller(tickEvent, { getRemainingTimeInMillis: () => MINUTE_MS });
  /** Each alarm's state at the end of a minute, as `name state`. */
  const endOfMinute = (): string[] => {
    q.clock.advance(MINUTE_MS);
    return monitoring.alarmStates().map(({ name, state }) => `${name} ${state}`);
  };
  return { monitoring, tick, endOfMinute };
}

test('on an idle queue every alarm is OK at each evaluation over ten minutes, the first included', async () => {
  const q = queue();
  await defineType(q.ctx, 'emails');
  const { tick, endOfMinute } = monitoredQueue(q);
  const minutes: string[][] = [];
  for (let minute = 0; minute < 10; minute++) {
    await tick();
    minutes.push(endOfMinute());
  }
  const allOk = ['DueLagAlarm', 'WorkerAlarm', 'DynamoDbThrottlesAlarm'].map((name) => `${name} OK`);
  expect(minutes).toEqual(Array.from({ length: 10 }, () => allOk));
});

test('with the pollers stopped, a due job left unclaimed turns DueLagAlarm to ALARM once its evaluation range holds no report, four minutes on', async () => {
  const q = queue();
  const emails = await defineType(q.ctx, 'emails');
  const { monitoring, tick, endOfMinute } = monitoredQueue(q);
  for (let minute = 0; minute < 3; minute++) {
    await tick();
    endOfMinute();
  }
  await enqueue(q.ctx, emails, 'waiting');
  // No tick any more: nothing claims the job, and nothing reports its lag.
  const dueLag = Array.from({ length: 5 }, () => endOfMinute().find((status) => status.startsWith('DueLagAlarm')));
  expect(dueLag).toEqual(['DueLagAlarm OK', 'DueLagAlarm OK', 'DueLagAlarm OK', 'DueLagAlarm ALARM', 'DueLagAlarm ALARM']);
  expect(monitoring.alarmStates().find(({ name }) => name === 'DueLagAlarm')?.reason).toMatch(/without a datapoint, treated as breaching/);
  expect((await readItem(q, 'emails', 'waiting'))?.status).toBe('queued');
});

test("a worker invocation that failed, one Lambda throttled and one that waited too long each turn WorkerAlarm to ALARM, from the runtime's own Lambda metrics", async () => {
  const q = queue();
  await defineType(q.ctx, 'emails');
  const { monitoring, tick, endOfMinute } = monitoredQueue(q);
  const { workerEventAgeAlarmMs } = deployStackSettings({});
  const causes = [() => monitoring.workerInvokes.failed(), () => monitoring.workerInvokes.throttled(), () => monitoring.workerInvokes.delivered(workerEventAgeAlarmMs + 1)];
  for (const cause of causes) {
    // Long enough for the last cause to have left the alarm's five minutes.
    for (let minute = 0; minute < 8; minute++) {
      await tick();
      endOfMinute();
    }
    expect(endOfMinute()).toContain('WorkerAlarm OK');
    await tick();
    cause();
    expect(endOfMinute()).toEqual(['DueLagAlarm OK', 'WorkerAlarm ALARM', 'DynamoDbThrottlesAlarm OK']);
  }
});
