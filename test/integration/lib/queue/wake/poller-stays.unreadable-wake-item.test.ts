/**
 * A poller or sweeper whose wake item cannot be read works its whole run, as every invocation did before they
 * slept (lib/queue/wake/poller-stays.ts, lib/queue/wake/sweeper-stays.ts), and says so: a brownout of one item costs a full
 * run per tick and per wake, which an operator should see in the logs.
 */
import { afterEach, beforeEach, describe, expect, test, vi, type MockInstance } from 'vitest';
import { createPollerHandler } from '../../../../../functions/poller/app.js';
import { createSweeperHandler } from '../../../../../functions/sweeper/app.js';
import type { QueueFunctionName } from '../../../../../infra/queue-function.js';
import { faultError, refuseCalls } from '../../../../support/faults.js';
import { createTestQueue, realClock, type TestQueue } from '../../../../support/queue.js';
import { RecordingWaker } from '../../../../support/lib-fixtures.js';

const RUN_MS = 300;
const remaining = { getRemainingTimeInMillis: () => 60_000 };

let queue: TestQueue;
let consoleError: MockInstance<typeof console.error>;
let consoleLog: MockInstance<typeof console.log>;

beforeEach(async () => {
  queue = await createTestQueue({ clock: realClock, waker: new RecordingWaker(), settings: { pollerRunMs: RUN_MS, pollIntervalMs: 50, sweepIntervalMs: 50 } });
  consoleError = vi.spyOn(console, 'error').mockImplementation(() => undefined);
  consoleLog = vi.spyOn(console, 'log').mockImplementation(() => undefined);
});

afterEach(async () => {
  consoleError.mockRestore();
  consoleLog.mockRestore();
  await queue.drop();
});

/** Every call of `fn` that touches a wake item fails, as in a brownout of that one partition. */
function failWakeItemCalls(fn: QueueFunctionName): void {
  refuseCalls(queue.clientsOf(fn).base, ({ input }) => JSON.stringify(input).includes('WAKE#'), () => faultError('InternalServerError'));
}

const loggedIn = (spy: MockInstance<typeof console.log>, message: string): boolean => spy.mock.calls.some(([line]) => String(line).includes(message));
const warnedOf = (message: string): boolean => loggedIn(consoleError, message);
const ranWholeRun = (role: 'poller' | 'sweeper'): boolean => !loggedIn(consoleLog, `${role} not needed`);

describe('an invocation whose wake item cannot be read', () => {
  test('a poller polls its whole run and logs a warning naming the wake item', async () => {
    failWakeItemCalls('poller');
    const poller = createPollerHandler({ ctx: queue.as('poller'), invoker: { invoke: async () => undefined }, identity: { id: 'poller-1', host: 'localhost' } });
    await poller({}, remaining);
    expect(ranWholeRun('poller')).toBe(true);
    expect(warnedOf('could not read or write the wake item: polling the whole run')).toBe(true);
  });

  test('a sweeper sweeps its whole run and logs a warning naming the wake item', async () => {
    failWakeItemCalls('sweeper');
    const sweeper = createSweeperHandler({ ctx: queue.as('sweeper'), registry: { retryPolicies: {} } });
    await sweeper({}, remaining);
    expect(ranWholeRun('sweeper')).toBe(true);
    expect(warnedOf('could not read or write the wake item: sweeping the whole run')).toBe(true);
  });
});

describe('an invocation whose wake item reads well', () => {
  test('ends at once with nothing in reach, and logs no warning', async () => {
    const poller = createPollerHandler({ ctx: queue.as('poller'), invoker: { invoke: async () => undefined }, identity: { id: 'poller-1', host: 'localhost' } });
    await poller({}, remaining);
    expect(ranWholeRun('poller')).toBe(false);
    expect(warnedOf('wake item')).toBe(false);
  });
});
