import { afterEach, describe, expect, test, vi } from 'vitest';
import { countScheduleFires, shardsFromEvent } from '../../../../functions/poller/app.js';
import { createEmfMetrics, noMetrics, type MetricDimensions, type QueueMetrics } from '../../../../functions/shared/metrics.js';
import { measuredRegistry } from '../../../../functions/worker/app.js';
import { ConfigError } from '../../../../lib/domain/errors.js';
import type { FireResult } from '../../../../lib/queue/schedules/fire-schedules.js';
import { AWAIT_CALLBACK, type JobContext, type JobHandler } from '../../../../lib/queue/attempt/run-batch.js';
import { runningJob } from '../../../support/jobs.js';

afterEach(() => {
  vi.restoreAllMocks();
});

function stdoutLines(run: () => void): string[] {
  const written: string[] = [];
  vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    written.push(String(chunk));
    return true;
  });
  run();
  vi.restoreAllMocks();
  return written.join('').split('\n').filter(Boolean);
}

describe('EMF metrics', () => {
  test('without a namespace nothing is recorded or printed, as locally and in tests', () => {
    expect(createEmfMetrics({})).toBe(noMetrics);
  });

  test('each dimension set becomes one EMF line carrying its metrics', () => {
    const metrics = createEmfMetrics({ POWERTOOLS_METRICS_NAMESPACE: 'queue-test' });
    const lines = stdoutLines(() => {
      metrics.count('Claimed', 3);
      metrics.count('Succeeded', 1, { type: 'email' });
      metrics.milliseconds('DurationMs', 12, { type: 'email' });
      metrics.milliseconds('DurationMs', 30, { type: 'email' });
      metrics.count('Succeeded', 1, { type: 'sms' });
      metrics.flush();
    });
    const emf = lines.map((line) => JSON.parse(line));
    expect(emf).toHaveLength(3);
    expect(emf[0]).toMatchObject({ Claimed: 3 });
    expect(emf[1]).toMatchObject({ type: 'email', Succeeded: 1, DurationMs: [12, 30] });
    expect(emf[1]._aws.CloudWatchMetrics[0]).toMatchObject({ Namespace: 'queue-test', Dimensions: [expect.arrayContaining(['type'])] });
    expect(emf[2]).toMatchObject({ type: 'sms', Succeeded: 1 });
  });

  test("with a writer the lines go to it, not to standard output, under the service its environment names", () => {
    const written: string[] = [];
    const metrics = createEmfMetrics({ POWERTOOLS_METRICS_NAMESPACE: 'queue-test', POWERTOOLS_SERVICE_NAME: 'poller' }, (line) => written.push(line));
    const printed = stdoutLines(() => {
      metrics.milliseconds('OldestDueLagMs', 0);
      metrics.flush();
      metrics.flush();
    });
    expect(printed).toEqual([]);
    expect(written.map((line) => JSON.parse(line))).toEqual([
      expect.objectContaining({ service: 'poller', OldestDueLagMs: 0, _aws: expect.objectContaining({ CloudWatchMetrics: [expect.objectContaining({ Namespace: 'queue-test', Dimensions: [['service']] })] }) }),
    ]);
  });

  test('a flush forgets what it wrote', () => {
    const metrics = createEmfMetrics({ POWERTOOLS_METRICS_NAMESPACE: 'queue-test' });
    const lines = stdoutLines(() => {
      metrics.count('Claimed', 1);
      metrics.flush();
      metrics.flush();
    });
    expect(lines).toHaveLength(1);
  });
});

describe('worker metrics per job type', () => {
  function recorder() {
    const recorded: { name: string; value: number; dimensions?: MetricDimensions }[] = [];
    const metrics: QueueMetrics = {
      count: (name, value, dimensions) => recorded.push({ name, value, ...(dimensions ? { dimensions } : {}) }),
      milliseconds: (name, value, dimensions) => recorded.push({ name, value, ...(dimensions ? { dimensions } : {}) }),
      flush: () => undefined,
    };
    return { metrics, recorded };
  }

  function run(handler: JobHandler, controller = new AbortController()) {
    const { metrics, recorded } = recorder();
    let nowMs = 1_000;
    const measured = measuredRegistry({ handlers: { h: handler }, retryPolicies: {} }, metrics, () => nowMs).handlers.h!;
    const context: JobContext = { job: runningJob({ type: 'email' }), signal: controller.signal, heartbeat: async () => undefined, progress: async () => undefined };
    const advance = (ms: number) => (nowMs += ms);
    return { result: Promise.resolve(measured({}, context)), recorded, advance, controller };
  }

  test('a handler that returns counts as succeeded with its duration, under its job type', async () => {
    const { metrics, recorded } = recorder();
    let nowMs = 1_000;
    const measured = measuredRegistry({ handlers: { h: () => ((nowMs += 250), 'done') }, retryPolicies: {} }, metrics, () => nowMs).handlers.h!;
    const value = await measured({}, { job: runningJob({ type: 'email' }), signal: new AbortController().signal, heartbeat: async () => undefined, progress: async () => undefined });
    expect(value).toBe('done');
    expect(recorded).toEqual([
      { name: 'Succeeded', value: 1, dimensions: { type: 'email' } },
      { name: 'DurationMs', value: 250, dimensions: { type: 'email' } },
    ]);
  });

  test('a handler that throws counts as failed and the error still reaches the worker', async () => {
    const { result, recorded } = run(() => {
      throw new Error('boom');
    });
    await expect(result).rejects.toThrow('boom');
    expect(recorded.map(({ name }) => name)).toEqual(['Failed', 'DurationMs']);
  });

  test('an attempt aborted while its handler runs counts as failed once, whatever the handler does afterwards', async () => {
    let finish: (value: unknown) => void = () => undefined;
    const { result, recorded, advance, controller } = run(() => new Promise((resolve) => (finish = resolve)));
    advance(100);
    controller.abort(new Error('timed out'));
    finish('late');
    await result;
    expect(recorded).toEqual([
      { name: 'Failed', value: 1, dimensions: { type: 'email' } },
      { name: 'DurationMs', value: 100, dimensions: { type: 'email' } },
    ]);
  });

  test('a handler that waits for a callback is counted apart from successes', async () => {
    const { result, recorded } = run(() => AWAIT_CALLBACK);
    await result;
    expect(recorded[0]).toMatchObject({ name: 'AwaitingCallback' });
  });
});

describe('poller shards from the schedule event', () => {
  test('an event without shards means every shard', () => {
    expect(shardsFromEvent({}, 4)).toBeUndefined();
    expect(shardsFromEvent({ source: 'aws.events' }, 4)).toBeUndefined();
  });

  test('the shards a rule passes are the shards polled', () => {
    expect(shardsFromEvent({ shards: [1, 3] }, 4)).toEqual([1, 3]);
  });

  test('a shard outside the configured range is refused, naming the field', () => {
    expect(() => shardsFromEvent({ shards: [4] }, 4)).toThrow(ConfigError);
    expect(() => shardsFromEvent({ shards: [] }, 4)).toThrow(/event "shards" must be a non-empty list of shard numbers from 0 to 3/);
    expect(() => shardsFromEvent({ shards: '1' }, 4)).toThrow(/"shards"/);
  });
});

describe('poller metrics of schedule fires', () => {
  function recorded(bySchedule: FireResult['bySchedule']) {
    const counts: { name: string; value: number; dimensions?: MetricDimensions }[] = [];
    const metrics: QueueMetrics = {
      count: (name, value, dimensions) => counts.push({ name, value, ...(dimensions ? { dimensions } : {}) }),
      milliseconds: () => undefined,
      flush: () => undefined,
    };
    countScheduleFires(metrics, { bySchedule });
    return counts;
  }

  test('jobs made and fires skipped are counted per job type, never per schedule', () => {
    const counts = recorded([
      { schedule: 'nightly-report', jobType: 'report', made: 1, skipped: 0 },
      { schedule: 'hourly-report', jobType: 'report', made: 2, skipped: 1 },
      { schedule: 'digest', jobType: 'email', made: 1, skipped: 0 },
    ]);
    expect(counts).toEqual([
      { name: 'ScheduledJobs', value: 3, dimensions: { type: 'report' } },
      { name: 'ScheduleFiresSkipped', value: 1, dimensions: { type: 'report' } },
      { name: 'ScheduledJobs', value: 1, dimensions: { type: 'email' } },
    ]);
  });

  test('a thousand schedules of one type make one dimension value', () => {
    const bySchedule = Array.from({ length: 1_000 }, (_, i) => ({ schedule: `s${i}`, jobType: 'report', made: 1, skipped: 0 }));
    const values = new Set(recorded(bySchedule).flatMap(({ dimensions }) => Object.values(dimensions ?? {})));
    expect(values).toEqual(new Set(['report']));
  });
});
