/** Lambda's REPORT line as the local runtime logs it (infra/local/aws/invocation-report.ts), one per invocation. */
import { describe, expect, test } from 'vitest';
import { billedDurationMs, createInvocationReporter, REPORT_MESSAGE, REPORT_SUMMARY_MESSAGE, type InvocationReport, type InvocationSummary } from '../../../../../infra/local/aws/invocation-report.js';
import { invokeWithTimeout } from '../../../../../infra/local/aws/lambda-timeout.js';

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

function recordingReporter(options: Parameters<typeof createInvocationReporter>[0] = {}) {
  const lines: { message: string; fields: InvocationReport | InvocationSummary }[] = [];
  const reporter = createInvocationReporter({ ...options, write: (message, fields) => lines.push({ message, fields }) });
  return { reporter, lines };
}

describe('the report line of an invocation', () => {
  test('names the function and request, and bills at least its duration in whole milliseconds', async () => {
    const { reporter, lines } = recordingReporter({ memorySizesMb: { poller: 512 } });
    await invokeWithTimeout('poller', 1_000, () => sleep(20), { report: reporter, requestId: 'req-1' });

    expect(lines).toHaveLength(1);
    const [{ message, fields }] = lines as [{ message: string; fields: InvocationReport }];
    expect(message).toBe(REPORT_MESSAGE);
    expect(fields).toMatchObject({ function: 'poller', request_id: 'req-1', memory_size_mb: 512 });
    expect(fields.duration_ms).toBeGreaterThanOrEqual(15);
    expect(Number.isInteger(fields.billed_duration_ms)).toBe(true);
    expect(fields.billed_duration_ms).toBeGreaterThanOrEqual(fields.duration_ms);
    expect(fields).not.toHaveProperty('status');
  });

  test('is logged for an invocation whose handler failed, as Lambda bills that too', async () => {
    const { reporter, lines } = recordingReporter();
    await expect(invokeWithTimeout('worker', 1_000, () => Promise.reject(new Error('boom')), { report: reporter })).rejects.toThrow('boom');

    expect(lines.map(({ message, fields }) => [message, fields.function])).toEqual([[REPORT_MESSAGE, 'worker']]);
  });

  test('says timeout, and bills the timeout, for an invocation cut at its Lambda timeout', async () => {
    const { reporter, lines } = recordingReporter();
    await invokeWithTimeout('sweeper', 30, () => new Promise<never>(() => undefined), { report: reporter }).catch(() => undefined);

    const fields = lines[0]?.fields as InvocationReport;
    expect(fields).toMatchObject({ function: 'sweeper', status: 'timeout' });
    expect(fields.billed_duration_ms).toBeGreaterThanOrEqual(30);
  });

  test('leaves out the memory size of a function the stack does not name', async () => {
    const { reporter, lines } = recordingReporter({ memorySizesMb: { poller: 512 } });
    await invokeWithTimeout('toString', 1_000, async () => undefined, { report: reporter });

    expect(lines[0]?.fields).not.toHaveProperty('memory_size_mb');
  });
});

describe('billed duration', () => {
  test('is the duration rounded up to a whole millisecond, and never less than one', () => {
    expect([billedDurationMs(0), billedDurationMs(0.2), billedDurationMs(1), billedDurationMs(1.01), billedDurationMs(250.5)]).toEqual([1, 1, 1, 2, 251]);
  });
});

describe('a function invoked per request', () => {
  test('has its invocations added up into one summary line, logged on flush, instead of a line each', async () => {
    const { reporter, lines } = recordingReporter({ summarisedFunctions: new Set(['api']), memorySizesMb: { api: 512 } });
    for (let i = 0; i < 3; i++) await invokeWithTimeout('api', 1_000, () => sleep(5), { report: reporter });
    expect(lines).toEqual([]);

    reporter.flush();
    expect(lines).toHaveLength(1);
    const { message, fields } = lines[0] as { message: string; fields: InvocationSummary };
    expect(message).toBe(REPORT_SUMMARY_MESSAGE);
    expect(fields).toMatchObject({ function: 'api', invocations: 3, memory_size_mb: 512, timeouts: 0 });
    expect(fields.billed_duration_ms).toBeGreaterThanOrEqual(fields.duration_ms);
    expect(fields.max_duration_ms).toBeLessThanOrEqual(fields.duration_ms);
  });

  test('logs no summary for a period without invocations', () => {
    const { reporter, lines } = recordingReporter({ summarisedFunctions: new Set(['api']) });
    reporter.flush();
    expect(lines).toEqual([]);
  });
});
