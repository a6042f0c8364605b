/** `npm start`'s runtime logs a Lambda-style report line per invocation (infra/local/aws/invocation-report.ts). */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, inject, test, vi } from 'vitest';
import { freePort } from '../../../../../infra/local/aws/dynamodb-local.js';
import { startLocalRuntime, type LocalRuntime } from '../../../../../infra/local/runtime.js';
import { eventually } from '../../../../support/eventually.js';

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

let runtime: LocalRuntime | undefined;
let dataDir: string | undefined;

afterEach(async () => {
  vi.restoreAllMocks();
  await runtime?.stop();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

/** The runtime's structured log lines with this message. */
function loggedLines(spy: { mock: { calls: unknown[][] } }, message: string): Record<string, unknown>[] {
  return spy.mock.calls
    .map(([line]) => (typeof line === 'string' && line.startsWith('{') ? (JSON.parse(line) as Record<string, unknown>) : undefined))
    .filter((line): line is Record<string, unknown> => line?.message === message);
}

test('the poller and the sweeper log a report line per invocation with the stack memory and a billed duration at least their duration; the api one summary', async () => {
  const infoLines = vi.spyOn(console, 'log');
  dataDir = await mkdtemp(join(tmpdir(), 'djq-invocation-reports-'));
  runtime = await startLocalRuntime({
    DYNAMODB_ENDPOINT: inject('dynamoEndpoint'),
    TABLE_NAME: `invocation-reports-${Date.now()}`,
    PORT: String(await freePort()),
    DATA_DIR: dataDir,
    // Invocations a second long, so the first tick's end within the test.
    POLLER_RUN_MS: '1000',
    POLLER_PARTITIONS: '2',
  });
  expect((await fetch(`${runtime.url}/v1/job-types`, { headers: { authorization: `Bearer ${runtime.adminKey}` } })).status).toBe(200);
  const reported = (fn: string) => loggedLines(infoLines, 'REPORT').some((line) => line.function === fn);
  await eventually(async () => reported('poller') && reported('sweeper'), (both) => both);
  await runtime.stop();
  runtime = undefined;

  const reports = loggedLines(infoLines, 'REPORT');
  for (const fn of ['poller', 'sweeper']) {
    const ofFunction = reports.filter((line) => line.function === fn);
    expect(ofFunction.length).toBeGreaterThanOrEqual(1);
    for (const line of ofFunction) {
      expect(line).toMatchObject({ request_id: expect.any(String), memory_size_mb: fn === 'poller' ? 512 : 256 });
      expect(line.billed_duration_ms as number).toBeGreaterThanOrEqual(line.duration_ms as number);
    }
  }
  expect(reports.filter((line) => line.function === 'api')).toEqual([]);
  expect(loggedLines(infoLines, 'REPORT summary')).toEqual(expect.arrayContaining([expect.objectContaining({ function: 'api', invocations: 1, memory_size_mb: 512 })]));
});

test("the first minute tick starts one poller invocation per partition and one sweeper invocation at start, and the next waits for the next minute, as the stack's rules", async () => {
  const infoLines = vi.spyOn(console, 'log');
  dataDir = await mkdtemp(join(tmpdir(), 'djq-invocation-reports-'));
  runtime = await startLocalRuntime({
    DYNAMODB_ENDPOINT: inject('dynamoEndpoint'),
    TABLE_NAME: `minute-ticks-${Date.now()}`,
    PORT: String(await freePort()),
    DATA_DIR: dataDir,
    POLLER_RUN_MS: '500',
    POLLER_PARTITIONS: '2',
  });
  await eventually(async () => loggedLines(infoLines, 'REPORT').length, (reports) => reports >= 3);
  // Nothing more may start for a while: that is the behaviour under test, so this wait is on the clock. Each
  // invocation ends within a second or two; back to back, several more of each would follow within it.
  await sleep(2_500);
  await runtime.stop();
  runtime = undefined;

  const reports = loggedLines(infoLines, 'REPORT');
  expect(reports.filter((line) => line.function === 'poller')).toHaveLength(2);
  expect(reports.filter((line) => line.function === 'sweeper')).toHaveLength(1);
});
