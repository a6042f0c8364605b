/** The sleep every loop waits in, which shutdown ends at once (lib/domain/sleep.ts); on vitest's fake clock. */
import { afterEach, beforeEach, expect, test, vi } from 'vitest';
import { abortableSleep } from '../../../../lib/domain/sleep.js';

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

/** Whether the promise has settled once pending callbacks have run. */
async function settled(promise: Promise<void>): Promise<boolean> {
  let done = false;
  void promise.then(() => {
    done = true;
  });
  await vi.advanceTimersByTimeAsync(0);
  return done;
}

test('a sleep ends when its time has passed, not before', async () => {
  const sleep = abortableSleep(1_000);
  await vi.advanceTimersByTimeAsync(999);
  expect(await settled(sleep)).toBe(false);
  await vi.advanceTimersByTimeAsync(1);
  expect(await settled(sleep)).toBe(true);
});

test('an abort ends a sleep at once, and leaves no timer behind', async () => {
  const controller = new AbortController();
  const sleep = abortableSleep(60_000, controller.signal);
  controller.abort();
  expect(await settled(sleep)).toBe(true);
  expect(vi.getTimerCount()).toBe(0);
});

test('a sleep asked for after the abort ends at once, without a timer', async () => {
  const controller = new AbortController();
  controller.abort();
  const sleep = abortableSleep(60_000, controller.signal);
  expect(vi.getTimerCount()).toBe(0);
  expect(await settled(sleep)).toBe(true);
});

test('a sleep that ended on time stops listening to its signal', async () => {
  const controller = new AbortController();
  const removed = vi.spyOn(controller.signal, 'removeEventListener');
  const sleep = abortableSleep(10, controller.signal);
  await vi.advanceTimersByTimeAsync(10);
  expect(await settled(sleep)).toBe(true);
  expect(removed).toHaveBeenCalledWith('abort', expect.any(Function));
});
