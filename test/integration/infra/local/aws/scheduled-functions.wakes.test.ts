/**
 * Wakes in the local runtime, as infra/local/runtime.ts wires them: each function's waker is checked by the local
 * IAM against the stack's policies, and starts the poller or the sweeper through the runtime's invoke, with its
 * Lambda timeout and its REPORT line, as Lambda's asynchronous invoke starts them deployed.
 */
import { afterEach, expect, test } from 'vitest';
import { AccessDeniedException } from '../../../../../infra/local/aws/iam/iam-check.js';
import { createInvocationReporter, type InvocationReport } from '../../../../../infra/local/aws/invocation-report.js';
import { invokeWithTimeout, type InvocationContext } from '../../../../../infra/local/aws/lambda-timeout.js';
import { createScheduledFunctions, type ScheduledFunction } from '../../../../../infra/local/aws/scheduled-functions.js';
import { localIamFor, takeDeniedCalls } from '../../../../support/iam.js';
import { eventually } from '../../../../support/eventually.js';

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

let stop = new AbortController();
let inFlight = new Set<Promise<unknown>>();
afterEach(async () => {
  stop.abort();
  await Promise.allSettled([...inFlight]);
  stop = new AbortController();
  inFlight = new Set();
});

/** The runtime's scheduled functions over handlers that take `handlerMs` each, cut at `timeoutMs`, their REPORT lines kept. */
function runtimeWith(handlerMs: number, timeoutMs: number) {
  const reports: InvocationReport[] = [];
  const events: { fn: ScheduledFunction; event: unknown }[] = [];
  const report = createInvocationReporter({ write: (_message, fields) => void reports.push(fields as InvocationReport) });
  const handler = async (fn: ScheduledFunction, event: unknown, _context: InvocationContext) => {
    events.push({ fn, event });
    await sleep(handlerMs);
  };
  const scheduled = createScheduledFunctions(
    { settings: { pollerPartitions: 2, shards: 4 }, iam: localIamFor(`local-wakes-${Date.now()}`), inFlight, signal: stop.signal, reservedConcurrency: {} },
    (fn, event) => invokeWithTimeout(fn, timeoutMs, (context) => handler(fn, event, context), { running: inFlight, report }),
  );
  return { scheduled, reports, events };
}

test("the waker's wake starts a poller invocation at once, with the wake event, and resolves before it ends; its REPORT line follows its end", async () => {
  const { scheduled, reports, events } = runtimeWith(300, 5_000);
  await scheduled.wakerFor('waker').wake({ role: 'poller', shards: [0, 2] });
  await eventually(async () => events.length, (started) => started > 0);
  expect(events).toEqual([{ fn: 'poller', event: { wake: true, shards: [0, 2] } }]);
  expect(reports).toEqual([]);
  await Promise.all([...inFlight]);
  expect(reports).toEqual([expect.objectContaining({ function: 'poller', request_id: expect.any(String) })]);
  expect(reports[0]?.status).toBeUndefined();
});

test('a woken sweeper that runs past its Lambda timeout is cut there and reported as timed out', async () => {
  const { scheduled, reports } = runtimeWith(1_000, 200);
  await scheduled.wakerFor('waker').wake({ role: 'sweeper' });
  await Promise.all([...inFlight]);
  expect(reports).toEqual([expect.objectContaining({ function: 'sweeper', status: 'timeout' })]);
});

test("the authorizer's role may not wake the poller: the wake is refused and starts nothing", async () => {
  const { scheduled, events } = runtimeWith(0, 1_000);
  await expect(scheduled.wakerFor('authorizer').wake({ role: 'poller', shards: [1, 3] })).rejects.toBeInstanceOf(AccessDeniedException);
  expect(inFlight.size).toBe(0);
  expect(events).toEqual([]);
  expect(takeDeniedCalls().map(({ fn, request }) => `${fn} ${request.action}`)).toEqual(['authorizer lambda:InvokeFunction']);
});
